"""`gpuwise plan` as a newcomer meets it: answers that must not send the reader the wrong way."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpuwise.cli.main import main

FULL_70B_ON_ONE_NODE = """
task = "finetune"
[model]
preset = "llama-3-70b"
[train]
method = "full"
precision = "bf16"
tokens = 1e9
seq_len = 4096
micro_batch = 1
[constraints]
budget_usd = 50
deadline_hours = 10
"""


def test_nothing_qualifies_does_not_blame_a_constraint_whose_relaxing_allows_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A full 70B fine-tune without sharding fits no single node, so nothing qualifies whatever the
    constraints say; the answer still said '--exchange-rate removed the most' (the CNY offers are counted
    under it first), sending the reader to give a rate that would allow nothing. The GPUs sold in
    fractions were named by a bare reason id."""
    path = tmp_path / "full-70b.toml"
    path.write_text(FULL_70B_ON_ONE_NODE, encoding="utf-8")
    assert main(["plan", str(path)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "removed the most" not in err
    assert "No constraint alone stands in the way" in err and "currency" in err
    assert ": fractional_gpu (" not in err and "sold as a fraction of a GPU" in err
    assert "To fix:" in err and "QLoRA" in err


def test_one_option_is_counted_in_the_singular(capsys: pytest.CaptureFixture[str]) -> None:
    """'llama3-8b-lora: 1 options qualify' and 'top 1 choices by cost' (AWS China is the only yuan seller)."""
    lora = Path(__file__).resolve().parents[2] / "examples" / "llama3-8b-lora.toml"
    assert main(["plan", str(lora), "--currency", "CNY", "--region", "cn-*", "--top", "1"]) == 0
    out = capsys.readouterr().out
    count = int(re.search(r"llama3-8b-lora: (\d+) options? qualif", out).group(1))  # type: ignore[union-attr]
    assert (f"{count} option qualifies" if count == 1 else f"{count} options qualify") in out
    assert "top 1 choice by cost" in out and "top 1 choices" not in out


def test_a_lora_too_big_for_the_card_asked_for_is_not_told_to_truncate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`plan --gpu RTX4090` for a Llama 3 8B LoRA at micro_batch 2 x 2,048 tokens named one remedy:
    'seq_len 256 (largest that fits; longer samples are truncated)'."""
    path = tmp_path / "lora24.toml"
    path.write_text(
        'task = "finetune"\n[model]\npreset = "llama-3-8b"\n[train]\nmethod = "lora"\nprecision = "bf16"\n'
        "tokens = 8e6\nseq_len = 2048\nmicro_batch = 2\n",
        encoding="utf-8",
    )
    assert main(["plan", str(path), "--gpu", "RTX4090"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "would fit" in err and "seq_len 256" not in err
    assert "activation checkpointing" in err


def test_a_prototype_smoke_test_is_not_priced_per_epoch_of_the_job(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--phase prototype costs a 200-step smoke test, yet each option said '$0.38 per epoch' (the smoke
    test's total, labelled as an epoch of the real job)."""
    lora = Path(__file__).resolve().parents[2] / "examples" / "qlora-consumer-gpu.toml"
    assert main(["plan", str(lora), "--phase", "prototype", "--json", "--top", "5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["options"] and all(o["cost_per_unit_usd"] == {} for o in doc["options"])
    assert main(["plan", str(lora), "--phase", "prototype", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "per epoch" not in out and "/epoch" not in out and "per 1M" not in out


@pytest.mark.parametrize(("given", "fix"), [("CNY=7.2", "CNY=0.1389"), ("cny=0.001", "CNY=0.1375")])
def test_an_exchange_rate_the_wrong_way_round_is_refused(
    capsys: pytest.CaptureFixture[str], given: str, fix: str
) -> None:
    """'1 USD = 7.2 CNY' is how rates are quoted; --exchange-rate CNY=7.2 (USD per yuan is wanted) made
    every AWS China price 52 times dearer and the plan went on without a word."""
    lora = Path(__file__).resolve().parents[2] / "examples" / "llama3-8b-lora.toml"
    assert main(["plan", str(lora), "--exchange-rate", given]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "far from the bundled rate" in err and f"--exchange-rate {fix}" in err
    assert main(["plan", str(lora), "--exchange-rate", "CNY=0.14", "--top", "1"]) == 0  # a real rate passes


def test_a_deadline_that_stops_everything_is_named_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With deadline_hours = 0.01 the answer opened with 'T4: the workload does not fit in its memory (1013
    configurations); L4: …; V100: …' and ended with a remedy for an RTX6000 nobody asked about, the
    deadline (the one thing to change) buried in between."""
    lora = (Path(__file__).resolve().parents[2] / "examples" / "llama3-8b-lora.toml").read_text(
        encoding="utf-8"
    )
    path = tmp_path / "rush.toml"
    path.write_text(
        lora.split("[constraints]")[0] + "[constraints]\ndeadline_hours = 0.01\n", encoding="utf-8"
    )
    assert main(["plan", str(path)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("Error: No offer qualifies") and "T4:" not in err and "or, on 8×" not in err
    assert "Of the constraints, deadline_hours removed the most" in err and "raising deadline_hours to" in err
