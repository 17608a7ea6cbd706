"""Clock-event ("throttle") reasons: the one table every room reads.

The parsers (NVML bit masks, nvidia-smi XML tags, `-q` labels and CSV columns), the recorder (which writes the
mask back), the exporter, the monitor's hints and alerts, and the doctor all used their own copies of this
knowledge; copies drift. Pure data; standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuwise.locale import N_

Severity = Literal["none", "info", "warn"]


@dataclass(frozen=True)
class ThrottleReason:
    id: str  # gpuwise's id, as in Sample.throttle_reasons
    bit: int  # nvml.h nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*)
    labels: tuple[str, ...]  # how `nvidia-smi -q` spells it, lower-cased, across driver versions
    # What it means for the work: "none" = not a slowdown worth reporting (idle, clock settings, sync boost);
    # "info" = a power cap, normal under full load; "warn" = slower than it should be, with a cause to fix.
    severity: Severity
    description: str  # English, marked for the catalog: translate it where it is shown


REASONS: tuple[ThrottleReason, ...] = (
    ThrottleReason("gpu_idle", 0x1, ("idle", "gpu idle"), "none", N_("GPU idle (nothing to run)")),
    ThrottleReason(
        "applications_clocks_setting",
        0x2,
        ("applications clocks setting",),
        "none",
        N_("applications clocks setting (clocks limited by `nvidia-smi -ac`)"),
    ),
    ThrottleReason(
        "sw_power_cap", 0x4, ("sw power cap",), "info", N_("SW power cap (drawing its power limit)")
    ),
    ThrottleReason(
        "hw_slowdown",
        0x8,
        ("hw slowdown",),
        "warn",
        N_("HW slowdown (power brake or overheating signalled by the board)"),
    ),
    ThrottleReason(
        "sync_boost", 0x10, ("sync boost",), "none", N_("sync boost (clocks matched across GPUs)")
    ),
    ThrottleReason(
        "sw_thermal_slowdown",
        0x20,
        ("sw thermal slowdown",),
        "warn",
        N_("SW thermal slowdown (the driver lowers clocks to cool the GPU)"),
    ),
    ThrottleReason(
        "hw_thermal_slowdown",
        0x40,
        ("hw thermal slowdown",),
        "warn",
        N_("HW thermal slowdown (the GPU is too hot)"),
    ),
    ThrottleReason(
        "hw_power_brake_slowdown",
        0x80,
        ("hw power brake slowdown",),
        "warn",
        N_("HW power brake slowdown (an external power-brake signal, e.g. the PSU)"),
    ),
    ThrottleReason(
        "display_clocks_setting",
        0x100,
        ("display clock setting", "display clocks setting"),
        "none",
        N_("display clocks setting"),
    ),
)

BY_ID: dict[str, ThrottleReason] = {r.id: r for r in REASONS}
IDS: tuple[str, ...] = tuple(r.id for r in REASONS)
# The XML tags: `clocks_event_reason_<id>` (drivers 535+) and `clocks_throttle_reason_<id>` (older).
XML_TAGS: dict[str, str] = {
    f"{prefix}_{r.id}": r.id for prefix in ("clocks_event_reason", "clocks_throttle_reason") for r in REASONS
}
LABELS: dict[str, str] = {label: r.id for r in REASONS for label in r.labels}


def canonical(reasons: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Reason ids in NVML's bit order, whatever order the output listed them in (unknown ids dropped)."""
    return tuple(sorted(set(reasons) & BY_ID.keys(), key=IDS.index))


def ids_from_mask(mask: int) -> tuple[str, ...]:
    return tuple(r.id for r in REASONS if mask & r.bit)


def mask_of(reasons: tuple[str, ...] | list[str]) -> int:
    mask = 0
    for reason in reasons:
        known = BY_ID.get(reason)
        mask |= known.bit if known is not None else 0
    return mask


def slowing(reasons: tuple[str, ...] | list[str]) -> tuple[ThrottleReason, ...]:
    """The reasons that make work slower than it should be (severity "warn")."""
    return tuple(BY_ID[r] for r in canonical(reasons) if BY_ID[r].severity == "warn")
