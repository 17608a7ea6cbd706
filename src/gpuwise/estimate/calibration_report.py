"""The report kind of `--calibration`: actual ÷ planned hours per (GPU, task) from the user's own runs.

A file written by `gpuwise report --save-calibration`:

    {"kind": "gpuwise-calibration", "version": 1, "created_at": "…", "source": "gpuwise report: 14 runs …",
     "entries": [{"gpu": "A100-80GB", "task": "finetune", "hours_ratio": 1.73, "runs": 5,
                  "source": "actual/planned hours, median of 5 runs"}]}

`parse_report_calibration` validates it (every problem is one ConfigError naming the file and the entry);
`apply_hours_ratio` multiplies an estimate's hours and range by the entry for its GPU and task, or says why
nothing was applied. Nothing is guessed across GPUs. Pure; must not import the CLI.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.estimate.calibration import Calibration, HoursRatio
from gpuwise.estimate.models import Estimate
from gpuwise.locale import N_, _

TASKS = ("train", "finetune", "inference", "measured")
_FIX = N_(
    "write the file with `gpuwise report --save-calibration FILE`, or correct it: "
    '{"kind": "gpuwise-calibration", "version": 1, "entries": [{"gpu": "A100-80GB", "task": "finetune", '
    '"hours_ratio": 1.2, "runs": 3}]}'
)


def _bad(source: str, what: str) -> ConfigError:
    return ConfigError(_("Calibration file {source}: {what}").format(source=source, what=what), fix=_(_FIX))


def _entry(row: Any, i: int, source: str) -> HoursRatio:
    from gpuwise.catalog.specs import canonical_gpu_name

    where = f"entries[{i}]"
    if not isinstance(row, dict):
        raise _bad(
            source, _("{where} must be an object, got {kind}").format(where=where, kind=type(row).__name__)
        )
    gpu, task, ratio, runs = row.get("gpu"), row.get("task"), row.get("hours_ratio"), row.get("runs")
    canonical = canonical_gpu_name(gpu) if isinstance(gpu, str) else None
    if canonical is None:
        raise _bad(
            source,
            _("{where}.gpu {gpu} is not a GPU in gpuwise's spec table").format(where=where, gpu=repr(gpu)),
        )
    if task not in TASKS:
        raise _bad(
            source,
            _("{where}.task must be one of {tasks}, got {task}").format(
                where=where, tasks=", ".join(TASKS), task=repr(task)
            ),
        )
    # Any positive ratio is what the user's runs measured: no bounds are invented here.
    if (
        isinstance(ratio, bool)
        or not isinstance(ratio, int | float)
        or not math.isfinite(ratio)
        or ratio <= 0
    ):
        raise _bad(
            source,
            _("{where}.hours_ratio must be a positive number, got {value}").format(
                where=where, value=repr(ratio)
            ),
        )
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise _bad(
            source,
            _("{where}.runs must be a whole number of at least 1, got {value}").format(
                where=where, value=repr(runs)
            ),
        )
    said = row.get("source")
    return HoursRatio(canonical, str(task), float(ratio), runs, said if isinstance(said, str) else "")


def parse_report_calibration(data: dict[str, Any], source: str) -> tuple[tuple[HoursRatio, ...], str]:
    """(the entries, the file's own source line) of a report calibration; ConfigError naming the file."""
    if data.get("kind") != "gpuwise-calibration":
        raise _bad(
            source,
            _('unknown kind {kind} (expected "gpuwise-calibration")').format(kind=repr(data.get("kind"))),
        )
    if data.get("version") != 1:
        raise _bad(
            source,
            _("version {version} is not one gpuwise reads (1)").format(version=repr(data.get("version"))),
        )
    rows = data.get("entries")
    if not isinstance(rows, list) or not rows:
        raise _bad(source, _("has no 'entries' (a list of {gpu, task, hours_ratio})"))
    entries = tuple(_entry(row, i, source) for i, row in enumerate(rows))
    seen: set[tuple[str, str]] = set()
    for e in entries:
        if (e.gpu, e.task) in seen:
            raise _bad(
                source,
                _("two entries for {gpu} and task {task}: which one holds is unknown").format(
                    gpu=e.gpu, task=repr(e.task)
                ),
            )
        seen.add((e.gpu, e.task))
    said = data.get("source")
    return entries, said if isinstance(said, str) and said else "report calibration"


def apply_hours_ratio(est: Estimate, calibration: Calibration | None, task: str) -> Estimate:
    """The estimate with the report calibration's ratio for its GPU and task applied, and said."""
    if calibration is None or calibration.kind != "report":
        return est
    found = [e for e in calibration.hours_ratios if e.task == task and e.gpu.lower() == est.gpu.lower()]
    if not found:
        others = sorted({e.gpu for e in calibration.hours_ratios if e.task == task})
        why = (
            _(
                "entries for task {task} on {gpus} only, none for {gpu}: not applied "
                "(a ratio is not carried across GPUs)"
            ).format(task=repr(task), gpus=", ".join(others), gpu=est.gpu)
            if others
            else _("no entry for task {task}: not applied").format(task=repr(task))
        )
        line = _("calibration {source}: {why}").format(source=calibration.source, why=why)
        return replace(est, assumptions=(*est.assumptions, line))
    e = found[0]
    runs = _(", {count} runs").format(count=e.runs) if e.runs else ""
    line = _(
        "calibration {source}: hours × {ratio}, your actual ÷ planned hours for {task} on {gpu} "
        "({from_}{runs})"
    ).format(
        source=calibration.source,
        ratio=f"{e.ratio:g}",
        task=task,
        gpu=e.gpu,
        from_=e.source or _("no source given"),
        runs=runs,
    )
    return replace(
        est,
        hours=est.hours * e.ratio,
        hours_low=est.hours_low * e.ratio,
        hours_high=est.hours_high * e.ratio,
        throughput_per_gpu=est.throughput_per_gpu / e.ratio,
        assumptions=(*est.assumptions, line),
        details={**est.details, "calibration_hours_ratio": e.ratio},
    )
