"""The cards sold in China: A800, H800, H20, L20, L40 with sourced figures; Ascend 910B said, not guessed."""

from __future__ import annotations

import pytest

from gpuwise.catalog.specs import canonical_gpu_name, no_estimate_reason, resolve_gpu
from gpuwise.cli.main import main
from gpuwise.errors import UsageError


@pytest.mark.parametrize(
    ("name", "memory_gib", "bf16", "nvlink"),
    [
        ("A800", 80, 312, 400),
        ("H800", 80, 989.4, 400),
        ("H20", 96, 148, 900),
        ("L20", 48, 119.5, None),
        ("L40", 48, 181.05, None),
    ],
)
def test_export_cards_have_sourced_figures(
    name: str, memory_gib: float, bf16: float, nvlink: float | None
) -> None:
    spec = resolve_gpu(name)
    assert spec.memory_gib == memory_gib
    assert spec.tflops["bf16"].value == bf16
    assert spec.tflops["bf16"].source.startswith("NVIDIA")  # the vendor's own document
    assert spec.nvlink_bidir_gbs.value == nvlink


def test_h800_keeps_h100_compute_but_not_its_fp64() -> None:
    """The H800 datasheet cuts FP64 to 1 TFLOPS; the table once copied the H100's 67."""
    h800, h100 = resolve_gpu("H800"), resolve_gpu("H100")
    assert h800.tflops["fp64"].value == 1
    assert h800.tflops["bf16"].value == h100.tflops["bf16"].value


def test_ascend_910b_is_known_but_not_estimated() -> None:
    assert canonical_gpu_name("Ascend 910B") is None  # no spec row: no number can come from it
    reason = no_estimate_reason("ascend-910b")
    assert reason is not None and "no estimator support" in reason and "32 GB or 64 GB" in reason
    assert no_estimate_reason("H100") is None
    with pytest.raises(UsageError, match="Ascend910B has no estimator support"):
        resolve_gpu("910B")


def test_estimate_on_910b_gives_the_reason_not_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "examples/llama3-8b-lora.toml", "--gpu", "Ascend910B", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no estimator support" in captured.err and "Traceback" not in captured.err


def test_the_plan_estimator_records_the_reason_for_910b_offers() -> None:
    from gpuwise.plan.inputs import PlanEstimator

    est = PlanEstimator(workload=None)
    assert est("Ascend910B", 8, 1) is None
    assert "no estimator support" in est.why["Ascend910B"]
