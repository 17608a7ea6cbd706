"""`gpuwise estimate`: the human table, --json fields (CONTRACTS §2), shorthand and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
FIELDS = {
    "gpu",
    "count",
    "fits",
    "memory_per_gpu_gib",
    "memory_capacity_gib",
    "memory_breakdown_gib",
    "throughput_per_gpu",
    "throughput_total",
    "throughput_unit",
    "hours",
    "gpu_hours",
    "mfu",
    "bottleneck",
    "assumptions",
}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_prints_a_breakdown_on_two_l40s(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", str(example), "--gpu", "L40S", "--count", "2"]) == 0
    out = capsys.readouterr().out
    for phrase in ("weights", "activations", "total", "bottleneck", "Assumptions"):
        assert phrase in out
    assert "fits" in out or "does not fit" in out or "tight" in out


def test_json_has_every_contract_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["estimate", str(REPO / "examples/llama3-8b-lora.toml"), "--gpu", "h100-sxm:8", "--json"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= FIELDS
    assert data["gpu"] == "H100"
    assert data["count"] == 8
    assert data["nodes"] == 1
    assert set(data["memory_breakdown_gib"]) == {
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "kv_cache",
        "overhead",
    }
    assert data["gpu_hours"] == pytest.approx(data["hours"] * 8)
    assert data["throughput_total"] == pytest.approx(data["throughput_per_gpu"] * 8)
    assert data["bottleneck"] in {"compute", "memory_bandwidth", "communication", "memory_capacity", "io"}


def test_not_fitting_is_still_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", str(REPO / "examples/llama3-8b-pretrain.toml"), "--gpu", "T4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is False
    assert data["bottleneck"] == "memory_capacity"


def test_nodes_default_to_fewest_of_eight(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "estimate",
                str(REPO / "examples/llama3-8b-pretrain.toml"),
                "--gpu",
                "H100",
                "--count",
                "24",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["nodes"] == 3


def test_calibration_option(capsys: pytest.CaptureFixture[str]) -> None:
    cal = REPO / "tests/fixtures/estimate/bench-h100.json"
    args = ["estimate", str(REPO / "examples/llama3-8b-lora.toml"), "--gpu", "H100", "--json"]
    assert main([*args, "--calibration", str(cal)]) == 0
    assert any("calibration" in a for a in json.loads(capsys.readouterr().out)["assumptions"])


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--gpu", "H10O"], "Did you mean 'H100'"),
        (["--gpu", "H100:8", "--count", "4"], "says 8 GPUs"),
        (["--gpu", "H100", "--count", "2", "--nodes", "3"], "cannot be spread"),
        (["--gpu", "H100", "--count", "1", "--nodes", "2"], "1 GPU cannot be spread over 2 nodes"),
    ],
)
def test_bad_options_exit_two(args: list[str], phrase: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", str(REPO / "examples/llama3-8b-lora.toml"), *args]) == 2
    assert phrase in capsys.readouterr().err.replace("\n", " ")


def test_a_calibration_file_of_neither_kind_names_both_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A report calibration is as good an answer as a bench result: the message must not name only one."""
    cal = tmp_path / "cal.json"
    cal.write_text('{"foo": 1}', encoding="utf-8")
    workload = str(REPO / "examples/llama3-8b-lora.toml")
    args = ["estimate", workload, "--gpu", "H100", "--calibration", str(cal)]
    assert main(args) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "gpuwise bench --json" in err and "gpuwise report --save-calibration" in err
    assert "Traceback" not in err


def test_bad_workload_file_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "w.toml"
    bad.write_text(
        'task = "finetune"\n[model]\npreset = "llama-3-8b"\n[train]\nmicro_bach = 2\n', encoding="utf-8"
    )
    assert main(["estimate", str(bad), "--gpu", "H100"]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "w.toml" in err
    assert "train.micro_batch" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("gpu", ["H100:8", "H100:4"])
def test_a_rate_served_for_a_month_is_never_rented_for_less_than_the_month(
    gpu: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The likely range of a 720-hour service ran 605-828 h on 8 H100s that meet its rate, so plan's cost
    range started at a bill for 25 days of a 30-day service. The low end is the duration; the high end
    passes it only where the slow end of the throughput range misses the target (4 H100s miss it outright)."""
    assert main(["estimate", str(REPO / "examples/llama3-70b-serving.toml"), "--gpu", gpu, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hours_low"] >= 720 - 1e-6
    assert data["hours_low"] <= data["hours"] <= data["hours_high"]
    assert data["throughput_low"] < data["throughput_total"] < data["throughput_high"]  # still a speed range
    if data["meets_target"]:
        assert data["hours"] == pytest.approx(720)
    else:
        assert data["hours_high"] > data["hours"] > 720


def test_a_lora_that_overflows_a_24_gb_card_is_offered_more_than_truncation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Llama 3 8B LoRA at micro_batch 2, 2,048 tokens, no checkpointing, on an RTX 4090: 'seq_len 256' fit
    alone, so the search never stacked the changes that keep the samples whole (checkpointing, a smaller
    micro batch, …) and truncating every sample to 256 tokens was the only advice."""
    path = tmp_path / "lora24.toml"
    path.write_text(
        'task = "finetune"\n[model]\npreset = "llama-3-8b"\n[train]\nmethod = "lora"\nprecision = "bf16"\n'
        "tokens = 8e6\nseq_len = 2048\nmicro_batch = 2\n",
        encoding="utf-8",
    )
    assert main(["estimate", str(path), "--gpu", "RTX4090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    fitting = [r for r in data["remedies"] if r["fits"]]
    assert any("train.seq_len" in r["set"] for r in fitting)
    assert any("train.seq_len" not in r["set"] for r in fitting), fitting
    # and one on the single card asked for (the stack reached for FSDP on 2 GPUs and stopped there)
    assert any("train.seq_len" not in r["set"] and r["count"] == 1 for r in fitting), fitting


def test_chinese_remedies_wrap_whole_at_80_columns() -> None:
    """Chinese has no spaces to wrap at: rich cut each long change short with '…' mid-sentence ('激活检查点
    "full"（反向传播时重算：更慢）， …'), so the reader lost what the change was."""
    import os
    import subprocess
    import sys

    argv = [sys.executable, "-m", "gpuwise", "--lang", "zh", "estimate"]
    argv += [str(REPO / "examples/llama3-8b-pretrain.toml"), "--gpu", "L40S:2"]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "80"}
    )
    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("改动") : done.stdout.index("假设")]
    assert "…" not in table, table
    assert "分块交叉熵" in table  # a phrase the cut had dropped


def test_the_efficiency_an_h100_is_given_is_stated(capsys: pytest.CaptureFixture[str]) -> None:
    """An H100 estimate's assumptions said only 'max_training_efficiency = 0.68 of dense peak (Ampere)':
    the figure it used (Hopper's 0.50) was nowhere, so the reader took 0.68 for it."""
    assert main(["estimate", str(REPO / "examples/llama3-8b-lora.toml"), "--gpu", "H100", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["assumptions"]
    assert "H100 is Hopper: max_training_efficiency = 0.5 of dense peak" in said


def test_the_intra_node_link_is_named_by_its_vendor(capsys: pytest.CaptureFixture[str]) -> None:
    """An MI300X node was said to talk over "NVLink 448 GB/s": AMD's links are Infinity Fabric."""
    example = Path(__file__).resolve().parents[2] / "examples" / "llama3-8b-lora.toml"
    said = {}
    for gpu in ("MI300X", "H100"):
        assert main(["estimate", str(example), "--gpu", f"{gpu}:8", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        said[gpu] = [a for a in doc["assumptions"] if str(a).startswith("intra-node")]
    assert said["MI300X"] and all("Infinity Fabric" in a and "NVLink" not in a for a in said["MI300X"])
    assert said["H100"] and all("NVLink" in a for a in said["H100"])


def test_an_mi300x_cluster_is_assumed_on_its_infiniband(capsys: pytest.CaptureFixture[str]) -> None:
    """MI300X nodes were assumed on 25 Gb/s Ethernet between them; Azure's ND MI300X v5 has 8×400 Gb/s
    InfiniBand, as the H100 clusters the table already names."""
    example = Path(__file__).resolve().parents[2] / "examples" / "llama3-8b-lora.toml"
    assert main(["estimate", str(example), "--gpu", "MI300X:16", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["assumptions"]
    assert any(str(a).startswith("inter-node: 8×400 Gb/s") for a in said), said
