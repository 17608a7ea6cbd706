"""Bench files written before bench named GPUs canonically: the GPU is the driver's product name.

`gpuwise bench` once wrote 'machine.gpu' as nvidia-smi prints it ("NVIDIA A100-SXM4-80GB"), or null
beside that name in 'machine.gpu_name'. Such files must still resolve to the card, both as a measured
workload's reference GPU and as a calibration file's reference (the files here are written by hand).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import estimate
from gpuwise.estimate.calibration import load_calibration
from gpuwise.workload import parse_workload


def _task_result(machine: dict[str, Any]) -> dict[str, Any]:
    task = {"command": "python render.py", "units": 100, "unit": "frames", "seconds": 50.0}
    return {"machine": {"gpus": 1, **machine}, "task": {**task, "seconds_per_unit": 0.5, "bound": "compute"}}


@pytest.mark.parametrize(
    "machine",
    [
        {"gpu": "NVIDIA A100-SXM4-80GB"},
        {"gpu": None, "gpu_name": "NVIDIA A100-SXM4-80GB"},
        {"gpu": "Tesla V100-PCIE-16GB"},  # needs the driver rule: the alias table alone does not know it
    ],
)
def test_a_measured_result_naming_the_gpu_as_the_driver_does_resolves(
    tmp_path: Path, machine: dict[str, Any]
) -> None:
    (tmp_path / "r.json").write_text(json.dumps(_task_result(machine)), encoding="utf-8")
    workload = parse_workload(
        {"task": "measured", "measured": {"result": "r.json", "units": 100}}, str(tmp_path / "w.toml")
    )
    reference = "V100" if "V100" in str(machine) else "A100-80GB"
    est = estimate(workload, resolve_gpu(reference))
    assert est.hours == pytest.approx(100 * 0.5 / 3600)  # on its own card the time is the measurement


@pytest.mark.parametrize(
    "machine",
    [{"gpu": None, "gpu_name": "Tesla V100-PCIE-16GB"}, {"gpu": "Tesla V100-PCIE-16GB"}],
)
def test_a_calibration_naming_the_gpu_as_the_driver_does_resolves(
    tmp_path: Path, machine: dict[str, Any]
) -> None:
    result = {"machine": machine, "results": [{"task": "gemm_bf16", "fraction_of_peak": 0.6}]}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    cal = load_calibration(path)
    assert cal.gpu == "V100"
    assert cal.reference is not None and cal.reference.name == "V100"
