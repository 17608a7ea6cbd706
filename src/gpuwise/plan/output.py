"""A plan as plain JSON-able data (CONTRACTS §3), shared by `plan --json` and the HTML report.

Region grouping: the same offer (provider, instance type, GPUs, nodes, pricing) at the same price, hours,
total and price date is often listed in many regions. `group_options` folds such options into one
`OptionGroup`, so a top N shows N distinct choices. In `--json`, `options` holds one option per group —
the best-ranked region's, every CONTRACTS §3 key unchanged (its `region` is that region) — plus the
extension `regions`: every region of the group, that one first. `--top N` cuts groups, so `options` never
has more than N entries, and `qualifying` still counts every (per-region) option.
The Pareto flag is the same for all members of a group (identical cost and hours).

Pure; standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuwise.plan.models import Option, PlanResult
from gpuwise.units import format_hours as _hours
from gpuwise.units import format_money as _money


@dataclass(frozen=True)
class OptionGroup:
    """One row of the top N: the best-ranked option and every region that offers exactly the same."""

    option: Option
    regions: tuple[str, ...]  # in rank order, the option's own region first; no repeats

    def regions_text(self, shown: int = 3) -> str:
        """'us-east-1' or '4 regions: us-east-1, us-west-2, eu-west-1…'."""
        if len(self.regions) == 1:
            return self.regions[0]
        head = ", ".join(self.regions[:shown])
        more = "…" if len(self.regions) > shown else ""
        return f"{len(self.regions)} regions: {head}{more}"


def _group_key(o: Option) -> tuple[object, ...]:
    return (
        o.provider,
        o.instance_type,
        o.gpu,
        o.gpus_per_node,
        o.nodes,
        o.pricing,
        o.price_usd_per_hour,
        o.hours,
        o.cost_usd,
        o.unknown_costs,
        o.price_as_of,
        o.currency,
    )


def group_options(options: Sequence[Option], limit: int | None = None) -> list[OptionGroup]:
    """The ranked options folded by region (see the module docstring), at most `limit` groups.

    Options that fold together share cost and hours, and the ranking sorts on those first, so they sit
    in one run of equal (cost, hours): reading stops at the end of the run in which the limit is reached,
    which keeps the lazily built option list from being built in full.
    """
    groups: dict[tuple[object, ...], tuple[Option, list[str]]] = {}
    point: tuple[float, float] | None = None
    for o in options:
        here = (o.cost_usd, o.hours)
        if limit is not None and len(groups) >= limit and here != point:
            break
        point = here
        key = _group_key(o)
        found = groups.get(key)
        if found is None:
            if limit is not None and len(groups) >= limit:
                continue  # a new choice in the last run, past the limit
            groups[key] = (o, [o.region])
        elif o.region not in found[1]:
            found[1].append(o.region)
    return [OptionGroup(option=o, regions=tuple(regions)) for o, regions in groups.values()]


def option_to_dict(o: Option) -> dict[str, Any]:
    """One option with the contract's keys first, then gpuwise's extensions."""
    return {
        "provider": o.provider,
        "instance_type": o.instance_type,
        "region": o.region,
        "gpu": o.gpu,
        "gpus_per_node": o.gpus_per_node,
        "nodes": o.nodes,
        "pricing": o.pricing,
        "price_usd_per_hour": o.price_usd_per_hour,
        "price_as_of": o.price_as_of.isoformat(),
        "hours": o.hours,
        "cost_usd": o.cost_usd,
        "cost_breakdown_usd": dict(o.cost_breakdown_usd),
        "unknown_costs": list(o.unknown_costs),
        "assumptions": list(o.assumptions),
        "fits": o.fits,
        "memory_per_gpu_gib": o.memory_per_gpu_gib,
        "bottleneck": o.bottleneck,
        "pareto": o.pareto,
        # extensions
        "zone": o.zone,
        "currency": o.currency,
        "price_date_exact": o.price_date_exact,
        "price_stale": o.price_stale,
        "memory_capacity_gib": o.memory_capacity_gib,
        "expected_interruptions": o.expected_interruptions,
        "source": o.source,
    }


def result_to_dict(
    result: PlanResult, workload: Any, *, top: int | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`plan --json`: workload, options (`top` region groups), considered, rejected, catalog sources, …"""
    out: dict[str, Any] = {
        "workload": workload,
        "options": [
            {**option_to_dict(g.option), "regions": list(g.regions)}
            for g in group_options(result.options, top)
        ],
        "considered": result.considered,
        "rejected": dict(result.rejected),
        "catalog": {
            "sources": {p: d.isoformat() for p, d in result.sources.items()},
            # extension: false where the date is only when the data was collected, not the source's own
            "sources_date_exact": {p: p not in result.undated_sources for p in result.sources},
        },
        # extensions
        "objective": result.objective,
        "qualifying": len(result.options),
        "assumptions": list(result.assumptions),
        "relaxations": [
            {"constraint": r.constraint, "reason": r.reason, "options": r.options, "suggestion": r.suggestion}
            for r in result.relaxations
        ],
    }
    if extra:
        out.update(extra)
    return out


def why_this_one(result: PlanResult) -> str:
    """One line on the first option: why it ranks first, what it leaves out. Needs at least one option.

    "The next" is the next distinct choice: the same offer in another region does not count.
    """
    groups = group_options(result.options, 2)
    best = groups[0].option
    rest = [g.option for g in groups[1:]]
    where = f"{best.provider} {best.instance_type}" + (f" ×{best.nodes}" if best.nodes > 1 else "")
    pricing = best.pricing.replace("_", "-")
    if result.objective == "time":
        head = f"fastest: {_hours(best.hours)} for {_money(best.cost_usd)}"
        if rest:
            nxt = rest[0]
            head += f"; the next fastest ({nxt.provider} {nxt.instance_type}) takes {_hours(nxt.hours)}"
    else:
        head = f"cheapest in total: {_money(best.cost_usd)} for {_hours(best.hours)}"
        if rest:
            nxt = rest[0]
            pct = (nxt.cost_usd - best.cost_usd) / best.cost_usd * 100 if best.cost_usd else 0.0
            gap = f"{pct:.0f}% below" if pct >= 0.5 else "level with"
            head += f", {gap} the next ({nxt.provider} {nxt.instance_type}, {_money(nxt.cost_usd)})"
    headroom = best.memory_capacity_gib - best.memory_per_gpu_gib
    tail = f"fits with {headroom:,.1f} GiB headroom per GPU; bottleneck: {best.bottleneck}"
    if best.pricing == "spot":
        tail += f"; includes {best.expected_interruptions:.2g} expected spot preemptions"
    if best.unknown_costs:
        tail += "; not counted: " + ", ".join(best.unknown_costs)
    what = f"{best.gpus_per_node * best.nodes}× {best.gpu}, {pricing}, {groups[0].regions_text()}"
    return f"Why {where} ({what}): {head}; {tail}."
