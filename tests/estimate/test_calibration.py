"""`--calibration`: both kinds of file move estimates in the measured direction and name their source.

Fixtures in tests/fixtures/calibration/ are constructed by hand in the bench-results and report-calibration
formats (not recordings).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.cli.main import main
from gpuwise.estimate import estimate, load_calibration
from gpuwise.workload import Workload, load_workload, parse_workload

CAL = Path(__file__).resolve().parents[1] / "fixtures" / "calibration"
RENDER = Path(__file__).resolve().parents[1] / "fixtures" / "bench" / "render-frames.toml"


def tune(**train: Any) -> Workload:
    t = {"method": "full", "precision": "bf16", "tokens": 1e8, "seq_len": 2048, "micro_batch": 1}
    t.update(framework="tuned", sharding="fsdp", **train)
    return parse_workload({"task": "finetune", "model": {"preset": "llama-3-8b"}, "train": t}, "t.toml")


def serve() -> Workload:
    i = {"prompt_tokens": 200, "output_tokens": 500, "concurrency": 8, "requests": 10000}
    return parse_workload({"task": "inference", "model": {"preset": "llama-3-8b"}, "inference": i}, "s.toml")


def hours(w: Workload, gpu: str, cal: str | None = None) -> tuple[float, tuple[str, ...]]:
    est = estimate(w, resolve_gpu(gpu), 8, calibration=load_calibration(CAL / cal) if cal else None)
    return est.hours, est.assumptions


@pytest.mark.parametrize(("cal", "faster"), [("bench-h100-fast.json", True), ("bench-h100-slow.json", False)])
def test_bench_calibration_moves_training_in_the_measured_direction(cal: str, faster: bool) -> None:
    plain, _ = hours(tune(), "H100")
    calibrated, said = hours(tune(), "H100", cal)
    assert (calibrated < plain) if faster else (calibrated > plain)
    assert any(cal in a and "replaces the default" in a for a in said)


@pytest.mark.parametrize(("cal", "faster"), [("bench-h100-fast.json", True), ("bench-h100-slow.json", False)])
def test_bench_calibration_moves_decode_in_the_measured_direction(cal: str, faster: bool) -> None:
    plain, _ = hours(serve(), "H100")
    calibrated, said = hours(serve(), "H100", cal)
    assert (calibrated < plain) if faster else (calibrated > plain)
    assert any(cal in a and "measured memory bandwidth replaces the default" in a for a in said)


def test_same_generation_gets_the_measured_ratio_labelled_other_generations_nothing() -> None:
    # fast: GEMM 0.9 of peak × 0.67 = 0.603 vs the Hopper default 0.50 → 1.206× on every Hopper GPU
    plain_h200, _ = hours(tune(), "H200")
    h200, said = hours(tune(), "H200", "bench-h100-fast.json")
    assert h200 < plain_h200
    assert any("another Hopper GPU" in a and "1.21×" in a and "same generation" in a for a in said)
    plain_a100, _ = hours(tune(), "A100-80GB")
    a100, said = hours(tune(), "A100-80GB", "bench-h100-fast.json")
    assert a100 == plain_a100
    assert any("not used (another generation)" in a for a in said)


def test_training_step_mfu_replaces_the_default_when_no_gemm_was_measured() -> None:
    cal = load_calibration(CAL / "bench-h100-mfu.json")
    assert cal.train_mfu == pytest.approx(0.3) and not cal.gemm_fraction
    plain, _ = hours(tune(), "H100")
    calibrated, said = hours(tune(), "H100", "bench-h100-mfu.json")
    assert calibrated > plain  # 0.30 measured < 0.50 Hopper default
    assert any("training-step MFU 30%" in a for a in said)


@pytest.mark.parametrize(("gpu", "ratio"), [("H100", 1.5), ("A100-80GB", 0.8)])
def test_report_calibration_multiplies_hours_and_range_for_the_same_gpu_and_task(
    gpu: str, ratio: float
) -> None:
    cal = load_calibration(CAL / "report.json")
    plain = estimate(tune(), resolve_gpu(gpu), 8)
    est = estimate(tune(), resolve_gpu(gpu), 8, calibration=cal)
    assert est.hours == pytest.approx(plain.hours * ratio)
    assert est.hours_low == pytest.approx(plain.hours_low * ratio)
    assert est.hours_high == pytest.approx(plain.hours_high * ratio)
    line = est.assumptions[-1]
    assert "report.json" in line and "gpuwise report: 14 runs" in line and f"hours × {ratio:g}" in line


def test_report_calibration_is_not_carried_to_another_gpu_or_task() -> None:
    cal = load_calibration(CAL / "report.json")
    plain = estimate(tune(), resolve_gpu("H200"), 8)
    est = estimate(tune(), resolve_gpu("H200"), 8, calibration=cal)
    assert est.hours == plain.hours
    assert "none for H200: not applied" in est.assumptions[-1]
    served = estimate(serve(), resolve_gpu("H100"), 1, calibration=cal)
    assert served.hours == estimate(serve(), resolve_gpu("H100"), 1).hours
    assert "no entry for task 'inference': not applied" in served.assumptions[-1]


def test_report_calibration_reaches_a_measured_task() -> None:
    cal = load_calibration(CAL / "report.json")
    w = load_workload(RENDER)
    plain = estimate(w, resolve_gpu("A100-80GB"))
    est = estimate(w, resolve_gpu("A100-80GB"), calibration=cal)
    assert est.hours == pytest.approx(plain.hours * 1.25)


def _report(**change: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAL / "report.json").read_text(encoding="utf-8"))
    entry = {**data["entries"][0], **change.pop("entry", {})}
    return {**data, "entries": [entry, *data["entries"][1:]], **change}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_report(version=2), "version 2"),
        (_report(kind="something-else"), "unknown kind"),
        (_report(entries=[]), "no 'entries'"),
        (_report(entry={"gpu": "Quantum-9000"}), "entries[0].gpu"),
        (_report(entry={"task": "pretrain"}), "entries[0].task"),
        (_report(entry={"hours_ratio": 0}), "entries[0].hours_ratio"),
        (_report(entry={"hours_ratio": "1.5"}), "entries[0].hours_ratio"),
        (_report(entry={"runs": 0}), "entries[0].runs"),
        (_report(entry={"gpu": "A100-80GB"}), "two entries for A100-80GB"),
        (
            {"machine": {"gpu": "H100"}, "results": [{"task": "train_step_transformer", "mfu": 7}]},
            "no usable",
        ),
        # what `gpuwise bench --device cpu` writes: a CPU's efficiencies must not move GPU estimates
        (
            {
                "device": "cpu",
                "machine": {"gpu": None},
                "results": [{"task": "gemm_fp32", "fraction_of_peak": 0.4}],
            },
            "without a GPU",
        ),
        (
            {
                "machine": {"gpu": None, "gpus": 0},
                "results": [{"task": "gemm_bf16", "fraction_of_peak": 0.2}],
            },
            "without a GPU",
        ),
    ],
)
def test_bad_calibration_files_exit_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict[str, Any], message: str
) -> None:
    bad = tmp_path / "cal.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    for command in ("estimate", "plan"):
        args = [command, str(RENDER)] + (["--gpu", "H100"] if command == "estimate" else [])
        assert main([*args, "--calibration", str(bad), "--json"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert str(bad) in captured.err and message in captured.err
        assert "Traceback" not in captured.err


def test_plan_with_a_report_calibration_moves_the_hours_of_that_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def hours_by_offer(*extra: str) -> dict[tuple[str, str, str], float]:
        assert main(["plan", str(RENDER), "--top", "1000", "--json", *extra]) == 0
        doc = json.loads(capsys.readouterr().out)
        return {(o["gpu"], o["provider"], o["instance_type"]): o["hours"] for o in doc["options"]}

    plain = hours_by_offer()
    calibrated = hours_by_offer("--calibration", str(CAL / "report.json"))
    a100 = [k for k in plain if k[0] == "A100-80GB" and k in calibrated]
    assert a100
    # hours include the start-up, which the ratio does not scale: the run part grows by 1.25
    assert all(calibrated[k] > plain[k] for k in a100)
    assert all(calibrated[k] == plain[k] for k in plain if k[0] == "H100" and k in calibrated)
