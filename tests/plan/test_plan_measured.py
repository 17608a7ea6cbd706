"""`gpuwise plan` on a `task = "measured"` workload: ranks offers from a bench-task result, rejects GPUs
below the measured peak memory, and names the measurement (constructed result file, tests/fixtures/bench)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpuwise.cli.main import main

BENCH = Path(__file__).resolve().parent.parent / "fixtures" / "bench"


def test_plan_ranks_a_measured_task_and_rejects_gpus_below_its_peak(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(BENCH / "task-h100-compute.json", tmp_path / "task-h100-compute.json")
    path = tmp_path / "render.toml"
    path.write_text(
        (BENCH / "render-frames.toml").read_text(encoding="utf-8")
        + '\n[constraints]\ngpus = ["H100", "A100-80GB", "L40S", "L4", "A10G"]\n',
        encoding="utf-8",
    )
    assert main(["plan", str(path), "--top", "1000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    options = doc["options"]
    assert options, "a measured workload must get options"
    gpus = {o["gpu"] for o in options}
    # L4 and A10G (24 GiB) are below the 30 GiB peak the task measured: never offered, counted as rejected
    assert gpus and gpus <= {"H100", "A100-80GB", "L40S"}
    assert doc["rejected"].get("does_not_fit", 0) > 0
    costs = [o["cost_usd"] for o in options]
    assert costs == sorted(costs)  # ranked by cost, the default objective
    for o in options:
        text = " ".join(o["assumptions"])
        assert "task-h100-compute.json" in text and "on 1× H100" in text and "0.5 s per unit" in text
        assert "projected from H100" in text or o["gpu"] == "H100"
        assert o["cost_per_unit_usd"] and "per 1k frames" in json.dumps(o["cost_per_unit_usd"])
    assert doc["workload"]["measured"]["measurement"]["seconds_per_unit"] == 0.5
