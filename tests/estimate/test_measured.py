"""`task = "measured"`: a bench-task result projected to other GPUs by datasheet ratios.

The result files under tests/fixtures/bench/ are constructed by hand in the `gpuwise bench task` format
(not recordings); every expected figure below is computed from the GPU spec table's datasheet values.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.cli.main import main
from gpuwise.errors import ConfigError
from gpuwise.estimate import estimate
from gpuwise.workload import Workload, load_workload, parse_workload

BENCH = Path(__file__).resolve().parents[1] / "fixtures" / "bench"
RENDER = BENCH / "render-frames.toml"
UNITS = 12000.0  # frames in render-frames.toml
SPU = 0.5  # seconds per frame in task-h100-compute.json


def measured(tmp_path: Path, result: str = "task-h100-compute.json", **section: Any) -> Workload:
    """A measured workload over a copy of one constructed result file."""
    shutil.copy(BENCH / result, tmp_path / result)
    spec = {"result": result, "units": UNITS, **section}
    return parse_workload({"task": "measured", "measured": spec}, str(tmp_path / "w.toml"))


def flops_ratio(gpu: str, dtype: str) -> float:
    return (resolve_gpu(gpu).peak_tflops(dtype) or 0) / (resolve_gpu("H100").peak_tflops(dtype) or 1)


def bandwidth_ratio(gpu: str) -> float:
    return (resolve_gpu(gpu).memory_bandwidth_gbs.value or 0) / (
        resolve_gpu("H100").memory_bandwidth_gbs.value or 1
    )


def test_on_the_measured_gpu_the_time_is_the_measurement() -> None:
    est = estimate(load_workload(RENDER), resolve_gpu("H100"))
    assert est.hours == pytest.approx(UNITS * SPU / 3600)
    assert est.throughput_unit == "frames/s"
    assert est.throughput_per_gpu == pytest.approx(1 / SPU)
    assert est.hours_low == pytest.approx(est.hours * 0.85)  # the ±15 % floor: no ratio to widen it
    assert est.hours_high == pytest.approx(est.hours * 1.15)
    assert est.fit_verdict == "fits"
    assert est.bottleneck == "compute"


def test_compute_bound_scales_by_the_dense_flops_of_the_named_precision(tmp_path: Path) -> None:
    est = estimate(measured(tmp_path, precision="bf16"), resolve_gpu("A100-80GB"))
    ratio = flops_ratio("A100-80GB", "bf16")
    assert est.hours == pytest.approx(UNITS * SPU / ratio / 3600)
    # the range runs from the rule's ratio to the smaller of the two (here the bandwidth one is larger)
    slow = min(ratio, bandwidth_ratio("A100-80GB"))
    assert est.hours_high == pytest.approx(max(est.hours * 1.15, UNITS * SPU / slow / 3600))
    text = " ".join(est.assumptions)
    assert "compute-bound: dense bf16 TFLOPS ratio" in text
    # the measurement is named: file, machine, GPU, seconds per unit
    assert "task-h100-compute.json" in text and "bench-box" in text
    assert "0.5 s per unit (frames) on 1× H100" in text


def test_without_a_precision_the_more_conservative_of_fp32_and_bf16_is_said(tmp_path: Path) -> None:
    est = estimate(measured(tmp_path), resolve_gpu("A100-80GB"))
    ratio = min(flops_ratio("A100-80GB", "fp32"), flops_ratio("A100-80GB", "bf16"))
    assert est.hours == pytest.approx(UNITS * SPU / ratio / 3600)
    assert any("precision not given" in a for a in est.assumptions)


def test_memory_bound_scales_by_memory_bandwidth(tmp_path: Path) -> None:
    est = estimate(measured(tmp_path, "task-h100-memory.json"), resolve_gpu("A100-80GB"))
    assert est.hours == pytest.approx(UNITS * 2.0 / bandwidth_ratio("A100-80GB") / 3600)
    assert est.bottleneck == "memory_bandwidth"
    assert any("memory-bound: memory bandwidth ratio" in a for a in est.assumptions)


def test_unknown_bound_takes_the_more_conservative_ratio(tmp_path: Path) -> None:
    data = json.loads((BENCH / "task-h100-compute.json").read_text(encoding="utf-8"))
    data["task"]["bound"] = "unknown"
    (tmp_path / "u.json").write_text(json.dumps(data), encoding="utf-8")
    w = parse_workload(
        {"task": "measured", "measured": {"result": "u.json", "units": UNITS, "precision": "bf16"}},
        str(tmp_path / "w.toml"),
    )
    gpu = "H200"  # more bandwidth than an H100, the same bf16 peak: the FLOPs ratio (1.0) is the smaller
    ratios = (flops_ratio(gpu, "bf16"), bandwidth_ratio(gpu))
    est = estimate(w, resolve_gpu(gpu))
    assert est.hours == pytest.approx(UNITS * SPU / min(ratios) / 3600)
    assert est.hours_low <= UNITS * SPU / max(ratios) / 3600 + 1e-9
    assert est.bottleneck == "unknown"


def test_gpus_below_the_measured_peak_do_not_fit() -> None:
    est = estimate(load_workload(RENDER), resolve_gpu("L4"))  # 24 GiB < the 30 GiB measured
    assert not est.fits and est.fit_verdict == "does_not_fit"
    assert est.bottleneck == "memory_capacity"
    assert est.to_json()["memory_per_gpu_gib"] == pytest.approx(30.0)
    assert estimate(load_workload(RENDER), resolve_gpu("L40S")).fits


def test_more_gpus_scale_linearly_and_say_so() -> None:
    one = estimate(load_workload(RENDER), resolve_gpu("H100"))
    four = estimate(load_workload(RENDER), resolve_gpu("H100"), 4)
    assert four.hours == pytest.approx(one.hours / 4)
    assert any("scaled linearly" in a for a in four.assumptions)


def test_the_gpus_the_task_used_can_be_said(tmp_path: Path) -> None:
    data = _fixture()
    data["machine"]["gpus"] = 8  # an 8-GPU machine: by default all 8 produced the measured speed
    (tmp_path / "r.json").write_text(json.dumps(data), encoding="utf-8")
    spec = {"result": "r.json", "units": UNITS}
    whole = parse_workload({"task": "measured", "measured": spec}, str(tmp_path / "w.toml"))
    one = parse_workload({"task": "measured", "measured": {**spec, "gpus": 1}}, str(tmp_path / "w.toml"))
    h100 = resolve_gpu("H100")
    assert estimate(whole, h100).hours == pytest.approx(8 * UNITS * SPU / 3600)
    assert any("all 8 working together" in a for a in estimate(whole, h100).assumptions)
    assert estimate(one, h100).hours == pytest.approx(UNITS * SPU / 3600)


def test_json_has_no_mfu_and_the_cli_prints_the_measured_peak(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", str(RENDER), "--gpu", "A100-80GB", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mfu"] is None and doc["stack"] == "measured"
    assert doc["throughput_unit"] == "frames/s"
    assert main(["estimate", str(RENDER), "--gpu", "A100-80GB"]) == 0
    out = capsys.readouterr().out
    assert "measured peak" in out and "nan" not in out


def _write_workload(tmp_path: Path, result: dict[str, Any] | None, measured_keys: str) -> Path:
    if result is not None:
        (tmp_path / "r.json").write_text(json.dumps(result), encoding="utf-8")
    path = tmp_path / "w.toml"
    path.write_text(f'task = "measured"\n[measured]\n{measured_keys}\n', encoding="utf-8")
    return path


def _fixture(name: str = "task-h100-compute.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((BENCH / name).read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    ("result", "keys", "message"),
    [
        (_fixture("task-cpu.json"), 'result = "r.json"\nunits = 10', "without a GPU"),
        (_fixture(), 'result = "r.json"\nunits = 10\nunit = "images"', "measured 'frames'"),
        (None, 'result = "missing.json"\nunits = 10', "missing.json"),
        ({"results": []}, 'result = "r.json"\nunits = 10', "not a bench task result"),
        (
            {**_fixture(), "task": {**_fixture()["task"], "seconds_per_unit": 0}},
            'result = "r.json"\nunits = 10',
            "greater than 0",
        ),
        (_fixture(), 'result = "r.json"\nunits = 0', "greater than 0"),
        (_fixture(), 'result = "r.json"\nunits = 10\nmeasurement = 1', "unknown key 'measured.measurement'"),
        ({**_fixture(), "machine": {"gpu": "Quantum-9000"}}, 'result = "r.json"\nunits = 10', "spec table"),
        (
            {**_fixture(), "machine": {"gpu": None, "gpu_name": "Quantum 9000"}},
            'result = "r.json"\nunits = 1',
            "Quantum 9000",
        ),
        (
            {**_fixture(), "task": {**_fixture()["task"], "problems": ["the command exited with code 1"]}},
            'result = "r.json"\nunits = 10',
            "incomplete measurement: the command exited with code 1",
        ),
    ],
)
def test_bad_measured_workloads_exit_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], result: dict[str, Any] | None, keys: str, message: str
) -> None:
    path = _write_workload(tmp_path, result, keys)
    assert main(["estimate", str(path), "--gpu", "H100", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and "Traceback" not in captured.err
    assert "To fix:" in captured.err


def test_a_measured_task_takes_no_model_section(tmp_path: Path) -> None:
    shutil.copy(BENCH / "task-h100-compute.json", tmp_path / "r.json")
    data = {
        "task": "measured",
        "model": {"preset": "llama-3-8b"},
        "measured": {"result": "r.json", "units": 1.0},
    }
    with pytest.raises(ConfigError, match=r"takes \[measured\], not \[model\]"):
        parse_workload(data, str(tmp_path / "w.toml"))
    with pytest.raises(ConfigError, match=r"needs a \[measured\] section"):
        parse_workload({"task": "measured"}, str(tmp_path / "w.toml"))
