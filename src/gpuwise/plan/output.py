"""A plan as plain JSON-able data (CONTRACTS §3), shared by `plan --json` and the HTML report.

Pure; standard library only.
"""

from __future__ import annotations

from typing import Any

from gpuwise.plan.models import Option, PlanResult
from gpuwise.units import format_hours as _hours
from gpuwise.units import format_money as _money


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
    """`plan --json`: workload, options (cut to `top`), considered, rejected, catalog sources, and more."""
    options = result.options if top is None else result.options[:top]
    out: dict[str, Any] = {
        "workload": workload,
        "options": [option_to_dict(o) for o in options],
        "considered": result.considered,
        "rejected": dict(result.rejected),
        "catalog": {"sources": {p: d.isoformat() for p, d in result.sources.items()}},
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
    """One line on the first option: why it ranks first, what it leaves out. Needs at least one option."""
    best = result.options[0]
    rest = result.options[1:]
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
    what = f"{best.gpus_per_node * best.nodes}× {best.gpu}, {pricing}, {best.region}"
    return f"Why {where} ({what}): {head}; {tail}."
