"""Reading Ascend NPUs on this machine (`npu-smi info`) and from a recording of it (`--replay`).

Live: only when ``npu-smi`` is on PATH (a machine without it is not an NPU machine: nothing is said), run
with a timeout through gather.run_command, never raising. Replay: a single file holding `npu-smi info`
output, recognised by its content (its header line or its table's column titles).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gpuwise.doctor.gather import run_command
from gpuwise.doctor.npu import NpuFacts, looks_like_npu_smi, parse_npu_smi_info

_MAX_RECORDING_BYTES = 16 << 20  # an npu-smi table is a few KiB; anything near this is not one


def gather_npu(timeout_s: float = 10.0, *, program: str = "npu-smi") -> tuple[NpuFacts | None, list[str]]:
    """(facts or None when npu-smi is not installed, what could not be read)."""
    path = shutil.which(program)
    if path is None:
        return None, []
    code, out, err = run_command([path, "info"], timeout_s)
    if code != 0:
        said = (err or out).strip().splitlines()
        why = said[0] if said else f"exit code {code}"
        return NpuFacts("npu-smi info", None, None, (), error=f"npu-smi info: {why}"), []
    return parse_npu_smi_info(out), []


def read_npu_recording(path: Path) -> NpuFacts | None:
    """The NPU facts in a recording of `npu-smi info`, or None when the file is something else."""
    from gpuwise.files import read_regular

    if not path.is_file():
        return None
    try:
        text = read_regular(path, limit=_MAX_RECORDING_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None  # left to the GPU recording reader, which says what is wrong with the file
    if not looks_like_npu_smi(text):
        return None
    return parse_npu_smi_info(text, source=f"replay:{path}")
