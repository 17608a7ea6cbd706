"""NPU facts for the doctor's rule tests: a two-chip Ascend machine read from a published `npu-smi info`
(tests/fixtures/npu-smi/PROVENANCE.md), and the breakers test_rules.py runs for the npu.* ids."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gpuwise.doctor.facts import Facts
from gpuwise.doctor.npu import NpuFacts, parse_npu_smi_info

NPU_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "npu-smi"


def recorded_npus(name: str = "910b4-x2-npu-smi-24.1.1.txt") -> NpuFacts:
    return parse_npu_smi_info((NPU_FIXTURES / name).read_text(encoding="utf-8"))


def with_health(npus: NpuFacts, chip_index: int, health: str) -> NpuFacts:
    chips = list(npus.chips)
    chips[chip_index] = replace(chips[chip_index], health=health)
    return replace(npus, chips=tuple(chips))


# id -> (how to break the healthy machine, the severity expected, a fragment the evidence must contain)
NPU_BREAKERS: dict[str, tuple[Callable[[Facts], Facts], str, str]] = {
    "npu.found": (lambda f: replace(f, npu=recorded_npus()), "info", "npu-smi 24.1.1, driver 24.1.1"),
    "npu.unhealthy": (
        lambda f: replace(f, npu=with_health(recorded_npus(), 1, "Alarm")),
        "error",
        "NPU 1 chip 0 (0000:C2:00.0): Health Alarm",
    ),
    "npu.smi_failed": (
        lambda f: replace(f, npu=NpuFacts("npu-smi info", None, None, (), error="npu-smi info: exit code 1")),
        "error",
        "exit code 1",
    ),
}
