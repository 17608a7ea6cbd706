"""Workload files as newcomers write them: the mistakes people make get an answer that says where to go."""

from __future__ import annotations

from pathlib import Path

from gpuwise.workload import load_workload

LORA = """task = "finetune"
[model]
preset = "llama-3-8b"
[train]
method = "lora"
precision = "bf16"
tokens = 1e6
seq_len = 2048
micro_batch = 1
"""


def test_a_file_saved_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    """Windows Notepad saves UTF-8 with a BOM; tomllib called that 'Invalid statement (at line 1, column
    1)', a message that points at nothing the user can see."""
    path = tmp_path / "notepad.toml"
    path.write_bytes(b"\xef\xbb\xbf" + LORA.encode())
    assert load_workload(path).train is not None
