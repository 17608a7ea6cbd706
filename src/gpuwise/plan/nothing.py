"""The "no offer qualifies" answer in words: what removed the options, and what relaxing would give.

First the facts that removed what the constraints allowed (a GPU with no estimate, a dtype it cannot run,
a currency without a rate, no shared fabric), then the constraint that removed the most; the fix is the
planner's best relaxations. Pure text over a `PlanResult`; the CLI raises it as an error (exit 1).
"""

from __future__ import annotations

from gpuwise.plan.models import RELAXABLE, Constraints, PlanResult
from gpuwise.plan.relax import CONSTRAINT_KEYS


def nothing_message(result: PlanResult, no_estimate_why: dict[str, str], constraints: Constraints) -> str:
    """What removed the options: first the facts that removed what the constraints allowed (a GPU with no
    estimate, a dtype it cannot run, a currency without a rate, no shared fabric), then the constraints."""
    if not result.rejected:
        return "No offer qualifies: the catalog has no offers"
    text = f"No offer qualifies ({result.considered} configurations considered)"
    facts = _blocked_text(result, no_estimate_why)
    if facts:
        asked = f" of the GPUs asked for ({', '.join(constraints.gpus)})" if constraints.gpus else ""
        text += f". The configurations{asked} your constraints allowed were removed by: " + "; ".join(facts)
    constraint_counts = {r: n for r, n in result.rejected.items() if r in RELAXABLE}
    if constraint_counts:
        reason, n = max(constraint_counts.items(), key=lambda kv: kv[1])
        text += f". Of the constraints, {CONSTRAINT_KEYS[reason]} removed the most ({n}, reason '{reason}')"
    others = {r: n for r, n in result.rejected.items() if r not in RELAXABLE}
    if others:
        text += "; besides: " + ", ".join(
            f"{r} {n}" for r, n in sorted(others.items(), key=lambda kv: -kv[1])
        )
    return text


def _blocked_text(result: PlanResult, no_estimate_why: dict[str, str]) -> list[str]:
    by_reason: dict[str, list[tuple[str, int]]] = {}
    for (reason, gpu), n in sorted(result.blocked.items(), key=lambda kv: -kv[1]):
        by_reason.setdefault(reason, []).append((gpu, n))
    out: list[str] = []
    for reason, items in by_reason.items():
        for gpu, n in items[:3]:
            plural = "configuration" if n == 1 else "configurations"
            if reason == "no_estimate":
                why = no_estimate_why.get(gpu, "the estimator cannot model it")
                out.append(f"{gpu}: no estimate ({n} {plural}): {why}")
            elif reason == "dtype":
                out.append(f"{gpu}: {result.dtype_why.get(gpu, 'cannot run the dtype')} ({n} {plural})")
            elif reason == "currency":
                out.append(
                    f"{gpu}: priced in another currency with no --exchange-rate or --currency given "
                    f"({n} {plural})"
                )
            elif reason == "no_fabric":
                out.append(f"{gpu}: multi-node without a shared fabric ({n} {plural})")
            elif reason == "does_not_fit":
                out.append(f"{gpu}: the workload does not fit in its memory ({n} {plural})")
            elif reason == "below_target_rate":
                out.append(f"{gpu}: too slow for the target rate ({n} {plural})")
            else:
                out.append(f"{gpu}: {reason} ({n} {plural})")
    return out


def nothing_fix(result: PlanResult) -> str:
    """The best three relaxations, or what to change when no constraint relaxation helps."""
    if result.relaxations:
        return "; ".join(r.suggestion for r in result.relaxations[:3])
    if result.blocked:
        return (
            "ask for a GPU that has an estimate and runs the workload's dtype (`gpuwise catalog gpus`), "
            "or change the workload (precision, model size)"
        )
    return "loosen the [constraints] of the workload, or plan a smaller configuration (the model may not fit)"
