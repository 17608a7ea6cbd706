"""`task = "measured"`: work the analytical estimator cannot model, described by a measurement of it.

A measured workload points at a `gpuwise bench task` result (the user's own command, timed on one machine)
and says how much of that work the whole job is:

    task = "measured"
    [measured]
    result = "bench-task.json"   # relative to the workload file
    units = 12000                # the whole job, in the unit of the measurement
    unit = "frames"              # optional; checked against the result's unit

`MeasuredSpec` is the `[measured]` section; `Measurement` is what gpuwise read from the result file (filled
in by `attach_measurement` when the workload is loaded, so the estimator never reads a file). Every problem
with the result file is one ConfigError naming it (exit 2): a result without a GPU, a unit that disagrees,
a missing or non-positive time per unit.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuwise.errors import ConfigError
from gpuwise.locale import _

Bound = Literal["compute", "memory_bandwidth", "unknown"]
MeasuredPrecision = Literal["fp32", "tf32", "fp16", "bf16", "fp8"]

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True, validate_default=True)


def result_fix() -> str:
    """The fix for a measurement file that cannot be used (in the current language)."""
    return _(
        "point [measured] result at the JSON that `gpuwise bench task --units N -- CMD …` wrote on a "
        "GPU machine "
        "(its path is relative to the workload file)"
    )


class Measurement(BaseModel):
    """One bench-task result, as read: the machine it ran on and the time one unit of work took there."""

    model_config = _STRICT

    source: str  # the result file, as resolved
    gpu: str  # as the result names it (a canonical name when bench recognised the GPU)
    gpus: int = Field(default=1, ge=1)
    gpu_memory_gib: float | None = None
    hostname: str | None = None
    provider: str | None = None
    instance_type: str | None = None
    command: str | None = None
    units: float | None = None
    unit: str | None = None
    seconds: float | None = None
    seconds_per_unit: float = Field(gt=0)
    peak_memory_gib: float | None = Field(default=None, ge=0)
    gpu_util_mean_pct: float | None = None
    bound: Bound = "unknown"
    started_at: str | None = None

    def describe(self) -> str:
        """One line naming the measurement: where it ran and what it found."""
        where = [self.hostname, self.provider, self.instance_type]
        machine = " ".join(w for w in where if w) or "an unnamed machine"
        return (
            f"measured {self.seconds_per_unit:.4g} s per unit ({self.unit or 'unit not named'}) on "
            f"{self.gpus}× {self.gpu} "
            f"({machine}{', ' + self.started_at if self.started_at else ''}; {self.source})"
        )


def _finite_units(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number (not inf or nan)")
    return value


class MeasuredSpec(BaseModel):
    model_config = _STRICT

    result: str = Field(min_length=1)
    units: float = Field(gt=0)
    unit: str | None = None
    # GPUs the measured task used; None = every GPU of the measured machine ('machine.gpus').
    gpus: int | None = Field(default=None, ge=1)
    # The precision family the task computes in, for the compute-bound rule; None = not said (the more
    # conservative of the fp32 and bf16 ratios is used, and said).
    precision: MeasuredPrecision | None = None
    measurement: Measurement | None = None  # filled in from `result` when the workload is loaded

    _fin = field_validator("units")(_finite_units)


USER_KEYS = [k for k in MeasuredSpec.model_fields if k != "measurement"]


def _bad(source: str, what: str, fix: str | None = None) -> ConfigError:
    return ConfigError(
        _("Measurement file {source}: {what}").format(source=source, what=what), fix=fix or result_fix()
    )


def _number(section: dict[str, Any], key: str, source: str, *, positive: bool = False) -> float | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _bad(source, _("'{key}' must be a finite number, got {got}").format(key=key, got=repr(value)))
    if positive and value <= 0:
        raise _bad(source, _("'{key}' must be greater than 0, got {got}").format(key=key, got=repr(value)))
    if value < 0:
        raise _bad(source, _("'{key}' cannot be negative, got {got}").format(key=key, got=repr(value)))
    return float(value)


def _text(section: dict[str, Any], key: str) -> str | None:
    value = section.get(key)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value) or None
    return value if isinstance(value, str) and value else None


def parse_measurement(data: Any, source: str) -> Measurement:
    """A bench-task result (already parsed JSON) as a `Measurement`; ConfigError naming `source` otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("task"), dict):
        raise _bad(source, _("is not a bench task result (no 'task' object)"))
    raw_machine = data.get("machine")
    machine: dict[str, Any] = raw_machine if isinstance(raw_machine, dict) else {}
    task: dict[str, Any] = data["task"]
    gpu = _text(machine, "gpu")
    problems = task.get("problems")
    if isinstance(problems, list) and problems:
        raise _bad(
            source,
            _("is an incomplete measurement: {problems}").format(
                problems="; ".join(str(p) for p in problems)
            ),
            fix=_("fix what it says and run `gpuwise bench task` again"),
        )
    if gpu is None:
        # bench before its fix left 'gpu' null beside the driver's product name ('gpu_name', such as
        # "NVIDIA A100-SXM4-80GB"); the estimate resolves that name, or says it is not a GPU it knows
        gpu = _text(machine, "gpu_name")
    if gpu is None:
        raise _bad(
            source,
            _("was measured without a GPU ('machine.gpu' is null): there is nothing to scale to other GPUs"),
            fix=_("run `gpuwise bench task` again on a machine with an NVIDIA GPU gpuwise recognises"),
        )
    spu = _number(task, "seconds_per_unit", source, positive=True)
    if spu is None:
        raise _bad(source, _("has no 'task.seconds_per_unit'"))
    bound = task.get("bound", "unknown")
    if bound not in ("compute", "memory_bandwidth", "unknown"):
        raise _bad(
            source,
            _("'task.bound' must be compute, memory_bandwidth or unknown, got {got}").format(got=repr(bound)),
        )
    gpus = machine.get("gpus", 1)
    if isinstance(gpus, list):  # a list of GPUs rather than a count
        gpus = len(gpus)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise _bad(
            source, _("'machine.gpus' must be a whole number of at least 1, got {got}").format(got=repr(gpus))
        )
    return Measurement(
        source=source,
        gpu=gpu,
        gpus=gpus,
        gpu_memory_gib=_number(machine, "gpu_memory_gib", source),
        hostname=_text(machine, "hostname"),
        provider=_text(machine, "provider"),
        instance_type=_text(machine, "instance_type"),
        command=_text(task, "command"),
        units=_number(task, "units", source),
        unit=_text(task, "unit"),
        seconds=_number(task, "seconds", source),
        seconds_per_unit=spu,
        peak_memory_gib=_number(task, "peak_memory_gib", source),
        gpu_util_mean_pct=_number(task, "gpu_util_mean_pct", source),
        bound=bound,
        started_at=_text(data, "started_at"),
    )


def attach_measurement(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The workload dict with `[measured]` carrying the result file's `measurement` (read here, once)."""
    from gpuwise.safe_read import load_json  # bounded: size, nesting, no pipes or devices

    section = data.get("measured")
    if data.get("task") != "measured" or not isinstance(section, dict):
        return data
    result = section.get("result")
    if not isinstance(result, str) or not result:
        return data  # the model's own validation names the missing or mistyped key
    path = Path(result).expanduser()
    if not path.is_absolute():
        path = Path(source).parent / path
    parsed = parse_measurement(load_json(path, what=_("Measurement file"), fix=result_fix()), str(path))
    unit = section.get("unit")
    if isinstance(unit, str) and parsed.unit is not None and unit.strip() != parsed.unit.strip():
        raise ConfigError(
            _("Workload file {source}: key 'measured.unit' is {unit} but {path} measured {measured}").format(
                source=source, unit=repr(unit), path=path, measured=repr(parsed.unit)
            ),
            why=_("the job's units must be the unit the time per unit was measured in"),
            fix=_('write unit = "{unit}" and give units in {unit}, or measure the task again').format(
                unit=parsed.unit
            ),
        )
    return {**data, "measured": {**section, "measurement": parsed}}
