"""The one clock-event reason table (gpu/throttle.py) against NVIDIA's own constants, and its users."""

from __future__ import annotations

import pynvml
import pytest

from gpuwise.doctor.rules import gpu_health as rules
from gpuwise.gpu import throttle
from gpuwise.monitor import alerts, hints
from gpuwise.monitor.record import throttle_mask

# Our id -> the name nvidia-ml-py gives the bit (nvmlClocksEventReason<Name>).
NVML_NAMES = {
    "gpu_idle": "GpuIdle",
    "applications_clocks_setting": "ApplicationsClocksSetting",
    "sw_power_cap": "SwPowerCap",
    "hw_slowdown": "HwSlowdown",
    "sync_boost": "SyncBoost",
    "sw_thermal_slowdown": "SwThermalSlowdown",
    "hw_thermal_slowdown": "HwThermalSlowdown",
    "hw_power_brake_slowdown": "HwPowerBrakeSlowdown",
    "display_clocks_setting": "DisplayClockSetting",
}


@pytest.mark.parametrize("reason", throttle.REASONS, ids=lambda r: r.id)
def test_bits_are_nvmls(reason: throttle.ThrottleReason) -> None:
    assert getattr(pynvml, f"nvmlClocksEventReason{NVML_NAMES[reason.id]}") == reason.bit


def test_mask_round_trips_and_ignores_unknown_ids() -> None:
    everything = throttle.IDS
    assert throttle.ids_from_mask(throttle.mask_of(everything)) == everything
    assert throttle.mask_of(("sw_power_cap", "not_a_reason")) == 0x4
    assert throttle.canonical(["hw_slowdown", "gpu_idle", "bogus"]) == ("gpu_idle", "hw_slowdown")


def test_every_room_reads_the_table() -> None:
    """Four rooms had their own copies; a reason added to the table must reach each of them."""
    warn = {r.id for r in throttle.REASONS if r.severity == "warn"}
    assert set(rules._THROTTLE_SERIOUS) == warn
    assert set(alerts._BAD_THROTTLE) == warn
    assert {k for k, v in hints._THROTTLE_SEVERITY.items() if v == "warn"} == warn
    assert hints._THROTTLE_SEVERITY["sw_power_cap"] == "info"
    assert throttle_mask(("sw_power_cap", "hw_slowdown")) == 0xC
