"""The plan a run came from (`gpuwise run --plan PLAN.json`): the chosen option's planned hours and cost,
kept beside the run's ledger row so `gpuwise report` can set planned against actual.

`planned_from_plan()` is pure: a parsed `gpuwise plan --json` document and a pick in, a `PlannedRun` out,
or a ConfigError (exit 2) that says what is wrong with the file. Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.locale import N_, _

PICKS = ("balanced", "cheapest", "fastest")
_FIX = N_("give the output of `gpuwise plan WORKLOAD --json > plan.json`")


@dataclass(frozen=True)
class PlannedRun:
    """What the plan expected of the option the run was launched on."""

    source: str  # the plan file's name
    pick: str  # "balanced" | "cheapest" | "fastest" | a 1-based row number
    workload: str | None
    task: str | None  # the workload's task: "train" | "finetune" | "inference" | "measured"
    gpu: str  # the catalog's canonical GPU name
    gpus: int
    provider: str | None
    instance_type: str | None
    pricing: str | None
    planned_hours: float
    planned_cost_usd: float | None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) and out >= 0 else None


def _option_index(data: dict[str, Any], pick: str, source: str) -> int:
    options = data["options"]
    if pick.isdigit():
        row = int(pick)
        if not 1 <= row <= len(options):
            raise ConfigError(
                _("--plan-pick {pick}: {source} has {n} option(s)").format(
                    pick=pick, source=source, n=len(options)
                ),
                fix=_("use a row number from 1 to {n}, or one of {picks}").format(
                    n=len(options), picks=", ".join(PICKS)
                ),
            )
        return row - 1
    if pick not in PICKS:
        raise ConfigError(
            _("--plan-pick {pick} is neither a pick nor a row number").format(pick=repr(pick)),
            fix=_("use {picks} or a row number of the plan's table").format(picks=", ".join(PICKS)),
        )
    picks = data.get("picks")
    index = picks.get(pick) if isinstance(picks, dict) else None
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(options):
        raise ConfigError(
            _("{source} has no {pick} pick").format(source=source, pick=pick),
            fix=_("choose a row with --plan-pick N"),
        )
    return index


def planned_from_plan(data: Any, pick: str, source: str) -> PlannedRun:
    """The chosen option of a `gpuwise plan --json` document (`pick`: a pick's name or a 1-based row)."""
    if not isinstance(data, dict) or not isinstance(data.get("options"), list) or not data["options"]:
        raise ConfigError(_("{source} is not a plan with options").format(source=source), fix=_(_FIX))
    option = data["options"][_option_index(data, pick, source)]
    if not isinstance(option, dict):
        raise ConfigError(
            _("{source}: option {pick} is not an object").format(source=source, pick=pick), fix=_(_FIX)
        )
    hours = _number(option.get("hours"))
    gpu = option.get("gpu")
    per_node = option.get("gpus_per_node")
    nodes = option.get("nodes", 1)
    if hours is None or not isinstance(gpu, str) or not gpu:
        raise ConfigError(
            _("{source}: option {pick} has no hours or GPU").format(source=source, pick=pick), fix=_(_FIX)
        )
    if not isinstance(per_node, int) or not isinstance(nodes, int) or per_node < 1 or nodes < 1:
        raise ConfigError(
            _("{source}: option {pick} has no GPU count").format(source=source, pick=pick), fix=_(_FIX)
        )
    workload = data.get("workload")
    workload = workload if isinstance(workload, dict) else {}
    currency = option.get("currency", "USD")

    def text(value: object) -> str | None:
        return value if isinstance(value, str) and value else None

    return PlannedRun(
        source=source,
        pick=pick,
        workload=text(workload.get("name")),
        task=text(workload.get("task")),
        gpu=gpu,
        gpus=per_node * nodes,
        provider=text(option.get("provider")),
        instance_type=text(option.get("instance_type")),
        pricing=text(option.get("pricing")),
        planned_hours=hours,
        # a plan priced in another currency is never converted: its cost stays unknown here
        planned_cost_usd=_number(option.get("cost_usd")) if currency == "USD" else None,
    )
