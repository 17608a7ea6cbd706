"""The "no offer qualifies" answer in words: what removed the options, and what relaxing would give.

First the facts that removed what the constraints allowed (a GPU with no estimate, a dtype it cannot run,
a currency without a rate, no shared fabric), then the constraint that removed the most; the fix is the
planner's best relaxations. Pure text over a `PlanResult`; the CLI raises it as an error (exit 1).
"""

from __future__ import annotations

from gpuwise.locale import _, ngettext
from gpuwise.plan.models import RELAXABLE, Constraints, PlanResult
from gpuwise.plan.relax import CONSTRAINT_KEYS


def nothing_message(result: PlanResult, no_estimate_why: dict[str, str], constraints: Constraints) -> str:
    """What removed the options: first the facts that removed what the constraints allowed (a GPU with no
    estimate, a dtype it cannot run, a currency without a rate, no shared fabric), then the constraints."""
    if not result.rejected:
        return _("No offer qualifies: the catalog has no offers")
    text = _("No offer qualifies ({count} configurations considered)").format(count=result.considered)
    # a currency without a rate is a fact the user acts on (give one); the rest only where facts_matter
    only = None if facts_matter(result, constraints) else ("currency",)
    facts = _blocked_text(result, no_estimate_why, only)
    if facts:
        if constraints.gpus:
            text += _(
                ". The configurations of the GPUs asked for ({gpus}) your constraints allowed were removed "
                "by: {facts}"
            ).format(gpus=", ".join(constraints.gpus), facts="; ".join(facts))
        else:
            text += _(". The configurations your constraints allowed were removed by: {facts}").format(
                facts="; ".join(facts)
            )
    constraint_counts = {r: n for r, n in result.rejected.items() if r in RELAXABLE}
    if constraint_counts and not result.relaxations:
        # A constraint counted first (CNY offers without a rate) still named "the most" when none of what
        # it removed would fit: the reader went to relax it for nothing.
        rejected = sorted(result.rejected.items(), key=lambda kv: -kv[1])
        return (
            text
            + _(". No constraint alone stands in the way: relaxing any one of them would allow no option")
            + _("; rejected: {reasons}").format(reasons=", ".join(f"{r} {n}" for r, n in rejected))
        )
    if constraint_counts:
        reason, n = max(constraint_counts.items(), key=lambda kv: kv[1])
        text += _(". Of the constraints, {key} removed the most ({count}, reason '{reason}')").format(
            key=CONSTRAINT_KEYS[reason], count=n, reason=reason
        )
    others = {r: n for r, n in result.rejected.items() if r not in RELAXABLE}
    if others:
        text += _("; besides: {reasons}").format(
            reasons=", ".join(f"{r} {n}" for r, n in sorted(others.items(), key=lambda kv: -kv[1]))
        )
    return text


def facts_matter(result: PlanResult, constraints: Constraints) -> bool:
    """Whether what removed GPUs (too small, no estimate, …) is the answer: when GPUs were asked for, or no
    constraint can be relaxed. Otherwise a constraint is what stands in the way, and a list of the small
    GPUs that never fit buried it ('T4: … L4: … V100: …' before 'raising deadline_hours to 0.6')."""
    return bool(constraints.gpus) or not result.relaxations


def _blocked_text(
    result: PlanResult, no_estimate_why: dict[str, str], only: tuple[str, ...] | None = None
) -> list[str]:
    by_reason: dict[str, list[tuple[str, int]]] = {}
    for (reason, gpu), n in sorted(result.blocked.items(), key=lambda kv: -kv[1]):
        if only is None or reason in only:
            by_reason.setdefault(reason, []).append((gpu, n))
    out: list[str] = []
    for reason, items in by_reason.items():
        for gpu, n in items[:3]:
            configs = ngettext("{count} configuration", "{count} configurations", n).format(count=n)
            if reason == "no_estimate":
                why = no_estimate_why.get(gpu, _("the estimator cannot model it"))
                out.append(
                    _("{gpu}: no estimate ({configs}): {why}").format(gpu=gpu, configs=configs, why=why)
                )
                continue
            what = {
                "dtype": result.dtype_why.get(gpu, _("cannot run the dtype")),
                "currency": _("priced in another currency with no --exchange-rate or --currency given"),
                "no_fabric": _("multi-node without a shared fabric"),
                "does_not_fit": _("the workload does not fit in its memory"),
                "below_target_rate": _("too slow for the target rate"),
                "fractional_gpu": _("sold as a fraction of a GPU, which gpuwise does not plan"),
            }.get(reason, reason)
            out.append(_("{gpu}: {what} ({configs})").format(gpu=gpu, what=what, configs=configs))
    return out


def nothing_fix(result: PlanResult) -> str:
    """The best three relaxations, or what to change when no constraint relaxation helps."""
    if result.relaxations:
        return _("; ").join(r.suggestion for r in result.relaxations[:3])
    if result.blocked:
        return _(
            "ask for a GPU that has an estimate and runs the workload's dtype (`gpuwise catalog gpus`), "
            "or change the workload (precision, model size)"
        )
    return _(
        "loosen the [constraints] of the workload, or plan a smaller configuration (the model may not fit)"
    )
