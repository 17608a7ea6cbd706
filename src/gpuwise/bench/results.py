"""One task's result and the whole results document, as the `--json`/`--out` file carries them.

A result is a number with its unit, the physical ceiling it is measured against (`peak`, in the same unit,
with where that ceiling comes from) and the fraction of it reached; or `value: null` with the `reason` the
task could not run here. Never a sentinel number. Pure data: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuwise.bench.timing import Timing


@dataclass(frozen=True)
class TaskResult:
    """What one standard task measured (or why it could not)."""

    task: str
    unit: str
    value: float | None = None
    peak: float | None = None
    peak_source: str | None = None  # the datasheet row, or the rule that gave the CPU's ceiling
    seconds: float = 0.0  # wall time the task took, warm-up and set-up included
    reason: str | None = None  # why value is null
    timing: Timing | None = None
    params: dict[str, Any] = field(default_factory=dict)  # sizes, dtype, model: what was measured
    extra: dict[str, Any] = field(default_factory=dict)  # task-specific figures (e.g. `mfu`)

    @property
    def fraction_of_peak(self) -> float | None:
        if self.value is None or not self.peak:
            return None
        return self.value / self.peak

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: task, value, unit, peak, fraction_of_peak, seconds, then the details."""
        out: dict[str, Any] = {
            "task": self.task,
            "value": _round(self.value),
            "unit": self.unit,
            "peak": _round(self.peak),
            "fraction_of_peak": _round(self.fraction_of_peak, 4),
            "seconds": round(self.seconds, 3),
        }
        if self.reason is not None:
            out["reason"] = self.reason
        out["peak_source"] = self.peak_source
        if self.timing is not None:
            out["median_s"] = self.timing.median_s
            out["spread_pct"] = round(self.timing.spread_pct, 2)
            out["repetitions"] = self.timing.repetitions
        out.update({k: _round(v, 4) if isinstance(v, float) else v for k, v in self.extra.items()})
        out["params"] = dict(self.params)
        return out


def skipped(task: str, unit: str, reason: str, **params: Any) -> TaskResult:
    """A task that cannot run here: value null, with the reason."""
    return TaskResult(task=task, unit=unit, reason=reason, params=dict(params))


def _round(value: float | None, digits: int = 3) -> float | None:
    if value is None:
        return None
    # three significant decimals of the unit are below any repetition's noise
    return round(value, digits) if abs(value) >= 1 else float(f"{value:.{digits + 1}g}")
