"""`estimate` shows what would fit (text table, `remedies` in --json); `plan`'s "nothing qualifies" names the
first remedy on the largest GPU memory ruled out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main

REPO = Path(__file__).resolve().parents[2]
LORA = str(REPO / "examples" / "llama3-8b-lora.toml")  # 28 GiB on HF Trainer: above a 24 GB card

ONE_CARD = """\
name = "lora-one-card"
task = "finetune"
[model]
preset = "llama-3-8b"
[train]
method = "lora"
precision = "bf16"
tokens = 5e7
seq_len = 4096
micro_batch = 1
activation_checkpointing = "full"
[constraints]
max_gpus = 1
gpus = ["RTX4090"]
"""


def test_json_carries_remedies_when_it_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", LORA, "--gpu", "RTX4090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is False
    first = data["remedies"][0]
    assert first["fits"] is True
    assert first["memory_per_gpu_gib"] <= data["memory_capacity_gib"]
    assert first["hours"] > 0 and first["set"]
    assert all(k == "count" or k.startswith("train.") for r in data["remedies"] for k in r["set"])


def test_json_remedies_are_empty_when_it_fits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", LORA, "--gpu", "H100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is True
    assert data["remedies"] == []


def test_text_shows_the_table_only_when_it_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", LORA, "--gpu", "RTX4090"]) == 0
    out = capsys.readouterr().out
    assert "What would fit" in out
    assert "fused kernels" in out and "will not help" in out
    assert main(["estimate", LORA, "--gpu", "H100"]) == 0
    assert "What would fit" not in capsys.readouterr().out


def test_plan_nothing_fits_names_the_first_remedy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    work = tmp_path / "w.toml"
    work.write_text(ONE_CARD, encoding="utf-8")
    assert main(["plan", str(work)]) == 1
    err = capsys.readouterr().err
    assert "does not fit in its memory" in err
    assert "on 1× RTX4090" in err and "would fit" in err and "gpuwise estimate WORKLOAD" in err
