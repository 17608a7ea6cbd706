"""A plan as plain JSON-able data (docs/json.md), shared by `plan --json` and the HTML report.

Region grouping: the same offer (provider, instance type, GPUs, nodes, pricing) at the same price, hours,
total and price date is often listed in many regions. `group_options` folds such options into one
`OptionGroup`, so a top N shows N distinct choices. In `--json`, `options` holds one option per group —
the best-ranked region's, every docs/json.md key unchanged (its `region` is that region) — plus the
extension `regions`: every region of the group, that one first. `--top N` cuts groups, so `options` never
has more than N entries, and `qualifying` still counts every (per-region) option.
The Pareto flag is the same for all members of a group (identical cost and hours).

Pure; standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuwise.locale import N_, _, formats
from gpuwise.plan.currency import money  # USD unless a plan is shown in another currency
from gpuwise.plan.models import Option, PlanResult
from gpuwise.plan.picks import PICK_NAMES, RULE_TEXT
from gpuwise.units import format_run_hours as hours_text


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
        return _("{count} regions: {names}").format(count=len(self.regions), names=head + more)


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


def groups_with_picks(result: PlanResult, top: int | None) -> tuple[list[OptionGroup], dict[str, int]]:
    """The top `top` groups plus any picked option's group beyond them, and the picks as group indices.

    Picks are chosen over every option before `--top` cuts the list, and a picked option is always kept.
    """
    groups = group_options(result.options, top)
    index = {_group_key(g.option): i for i, g in enumerate(groups)}
    picks: dict[str, int] = {}
    for name, rank in result.picks.items():
        o = result.options[rank]
        key = _group_key(o)
        if key not in index:
            index[key] = len(groups)
            groups.append(OptionGroup(option=o, regions=(o.region,)))
        picks[name] = index[key]
    return groups, picks


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
        "cost_usd_low": o.cost_usd_low,
        "cost_usd_high": o.cost_usd_high,
        "hours_low": o.hours_low,
        "hours_high": o.hours_high,
        "startup_hours": o.startup_hours,
        "price_age_days": o.price_age_days,
        "price_over_limit": o.price_over_limit,
        "dtype_fallback": o.dtype_fallback,
        "interconnect": o.interconnect,
        "cost_per_unit_usd": dict(o.unit_costs),
        "worth_renting": o.worth_renting,
        "commitment_usd": o.commitment_usd,
        "commitment_months": o.commitment_months,
        "break_even_hours_per_month": o.break_even_hours_per_month,
        "reserved_kind": o.reserved_kind,
        # serving: what one request sees, and the cost in the unit serving is priced in
        "latency": o.latency,
        "usd_per_1m_output_tokens": o.unit_costs.get("per 1M output tokens"),
    }


def result_to_dict(
    result: PlanResult, workload: Any, *, top: int | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`plan --json`: workload, options (`top` region groups), considered, rejected, catalog sources, …"""
    groups, picks = groups_with_picks(result, top)
    out: dict[str, Any] = {
        "workload": workload,
        "options": [{**option_to_dict(g.option), "regions": list(g.regions)} for g in groups],
        "picks": {name: picks.get(name) for name in PICK_NAMES},
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
        "picks_rule": RULE_TEXT,
        "same_hours": same_hours(result),
        "blocked": [
            {"reason": reason, "gpu": gpu, "configurations": n} for (reason, gpu), n in result.blocked.items()
        ],
    }
    if extra:
        out.update(extra)
    return out


# ----------------------------------------------------------------------------- readable numbers


def money_range(o: Option) -> str:
    """'$5.34 ($4.80–$6.10)', or just the total when the estimate gives no range."""
    lo, hi = o.cost_usd_low, o.cost_usd_high
    if lo is None or hi is None or money(lo) == money(hi):
        return money(o.cost_usd)
    return f"{money(o.cost_usd)} ({money(lo)}–{money(hi)})"


def hours_range(o: Option) -> str:
    """'11.0 h (5.04 h–36 h)'; past 48 h the days are said once, outside the range: '62 h (40 h–90 h), about
    2.6 days' (each figure carried its own '(… days)': '48 h (2.0 days) (40.5 h–55 h (2.3 days))')."""
    lo, hi = o.hours_low, o.hours_high
    if lo is None or hi is None or hours_text(lo) == hours_text(hi):
        return hours_text(o.hours)
    fields = {"hours": _hours_only(o.hours), "low": _hours_only(lo), "high": _hours_only(hi)}
    if o.hours >= 48:
        return _("{hours} ({low}–{high}), about {days} days").format(**fields, days=f"{o.hours / 24:,.1f}")
    if hi >= 48:
        return _("{hours} ({low}–{high}, up to {days} days)").format(**fields, days=f"{hi / 24:,.1f}")
    return _("{hours} ({low}–{high})").format(**fields)


def _hours_only(h: float) -> str:
    """`hours_text` without the days it adds past 48 h ('1,488 h')."""
    return f"{h:,.0f} h" if h >= 48 else hours_text(h)


def unit_cost_text(o: Option, limit: int = 1) -> str:
    """'$0.53 per 1M tokens' for the first `limit` units."""
    return ", ".join(f"{money(v)} {unit_label(label)}" for label, v in list(o.unit_costs.items())[:limit])


# Unit-cost labels as the planner writes them (the JSON's keys); each is its own catalog msgid.
_UNIT_LABELS = frozenset(
    {
        N_("per 1M tokens"),
        N_("per epoch"),
        N_("per 1k images"),
        N_("per audio hour"),
        N_("per 1M output tokens"),
        N_("per 1k requests"),
    }
)


def unit_label(label: str) -> str:
    """A unit cost's label as shown ('per 1M tokens'); the JSON keeps the English key."""
    return _(label) if label in _UNIT_LABELS else label


# Pricing kinds as shown, by the id the JSON keeps; each word is a catalog msgid, translated where shown.
PRICING_WORDS = {"spot": N_("spot"), "on_demand": N_("on-demand"), "reserved": N_("reserved")}


def pricing_word(pricing: str) -> str:
    """The pricing kind as shown: 'on-demand' (the id, on_demand, stays in the JSON)."""
    word = PRICING_WORDS.get(pricing)
    return pricing.replace("_", "-") if word is None else _(word)


COST_PART_WORDS = {
    "compute": N_("compute"),
    "startup": N_("startup"),
    "storage": N_("storage"),
    "egress": N_("egress"),
    "interruption_overhead": N_("interruption_overhead"),
    "boot_disk": N_("boot_disk"),
}


def cost_part_word(part: str) -> str:
    """A cost part's id (a key of cost_breakdown_usd) as shown."""
    word = COST_PART_WORDS.get(part)
    return part if word is None else _(word)


def _pad(text: str, width: int) -> str:
    """`text` padded to `width` terminal columns (a CJK character takes two)."""
    columns = sum(2 if ord(c) >= 0x2E80 else 1 for c in text)
    return text + " " * max(width - columns, 0)


_SHORT_UNITS = {
    "per 1M tokens": "/1M tok",
    "per epoch": "/epoch",
    "per 1k images": "/1k img",
    "per audio hour": "/audio h",
    "per 1M output tokens": "/1M out",
    "per 1k requests": "/1k req",
}


def short_unit_cost(o: Option) -> str:
    """'$0.53/1M tok': the first unit, short enough for a table cell."""
    for label, value in o.unit_costs.items():
        return f"{money(value)}{_SHORT_UNITS.get(label, ' ' + label)}"
    return ""


def option_title(o: Option) -> str:
    nodes = _(" ×{count} nodes").format(count=o.nodes) if o.nodes > 1 else ""
    return (
        f"{o.provider} {o.instance_type}{nodes} ({o.gpus_per_node * o.nodes}× {o.gpu}, "
        f"{pricing_word(o.pricing)}, {o.region})"
    )


def same_hours(result: PlanResult) -> bool:
    """Whether every qualifying option takes the same hours (a service run for a fixed duration): then no
    option is faster than another, and "fastest" or "balanced" would name nothing but a tie."""
    if len(result.options) < 2:
        return False
    if result.hours_span is not None:
        fewest, most = result.hours_span
    else:
        hours = [o.hours for o in result.options]
        fewest, most = min(hours), max(hours)
    return most <= fewest * 1.001


def pick_lines(result: PlanResult, groups: Sequence[OptionGroup], picks: dict[str, int]) -> list[str]:
    """One line per headline pick: what, cost (range), hours (range), why. Row numbers are 1-based."""
    if not picks:
        return []
    cheap = groups[picks["cheapest"]].option
    fast = groups[picks["fastest"]].option
    lines: list[str] = []
    order = {"time": ("fastest", "balanced", "cheapest"), "balanced": ("balanced", "cheapest", "fastest")}
    names = order.get(result.objective, ("cheapest", "balanced", "fastest"))
    fixed = same_hours(result)
    for name in ("cheapest",) if fixed else names:
        g = picks[name]
        o = groups[g].option
        if name == "cheapest":
            why = _("the lowest total among options worth renting")
            if result.passed_over is not None:
                low, fastest_near = (result.options[r] for r in result.passed_over)
                ratio = low.hours / fastest_near.hours if fastest_near.hours > 0 else float("inf")
                why += _(
                    "; the absolute cheapest ({offer}, {cost} for {hours}) is skipped: {ratio}× slower than "
                    "an option at most 1.5× its cost"
                ).format(
                    offer=f"{low.provider} {low.instance_type}",
                    cost=money(low.cost_usd),
                    hours=hours_text(low.hours),
                    ratio=f"{ratio:,.0f}",
                )
            if fixed:
                why += _(
                    "; every option runs for the workload's fixed duration, {hours}, so none is faster than "
                    "another"
                ).format(hours=hours_text(o.hours))
        elif name == "fastest":
            why = _("the fewest hours")
            if cheap.cost_usd > 0:
                why += _(", at {ratio}× the cheapest pick's cost").format(
                    ratio=f"{o.cost_usd / cheap.cost_usd:,.1f}"
                )
        else:
            why = _("the Pareto option with the smallest cost × hours")
            if o.hours > 0 and cheap.cost_usd > 0 and o is not cheap:
                why += _(": {speed}× faster than the cheapest pick for {cost}× its cost").format(
                    speed=f"{cheap.hours / o.hours:,.1f}", cost=f"{o.cost_usd / cheap.cost_usd:,.2f}"
                )
            elif o is cheap:
                why += _(" (the cheapest pick is also the best value)")
            if o is fast:
                why += _("; also the fastest")
        unit = unit_cost_text(o)
        lines.append(
            f"{_pad(_pick_word(name), 9)} #{g + 1} {option_title(o)}: {money_range(o)}, {hours_range(o)}"
            + (f", {unit}" if unit else "")
            + _(" — {why}.").format(why=why)
        )
    return lines


def _pick_word(name: str) -> str:
    words = {"cheapest": _("cheapest"), "balanced": _("balanced"), "fastest": _("fastest")}
    return words.get(name, name)


def break_even_lines(groups: Sequence[OptionGroup]) -> list[str]:
    """'a 1-year reservation of p4d.24xlarge beats on-demand above 438 busy hours a month', once per type."""
    seen: set[tuple[str, str]] = set()
    lines: list[str] = []
    for g in groups:
        o = g.option
        if o.pricing != "reserved" or o.break_even_hours_per_month is None:
            continue
        key = (o.provider, o.instance_type)
        if key in seen:
            continue
        seen.add(key)
        years = (o.commitment_months or 12) / 12
        lines.append(
            _(
                "a {years}-year reservation of {offer} beats on-demand above {hours} busy hours a month "
                "(of 730); costed as the whole commitment, {cost}"
            ).format(
                years=f"{years:g}",
                offer=f"{o.provider} {o.instance_type}",
                hours=f"{o.break_even_hours_per_month:,.0f}",
                cost=money(o.commitment_usd),
            )
        )
    return lines


def option_full_text(o: Option, regions: Sequence[str], rank: int) -> list[str]:
    """`plan --pick N`: every figure of one option, one per line."""
    lines = [f"#{rank} {option_title(o)}"]
    if len(regions) > 1:
        lines.append(_("  also in: {regions}").format(regions=", ".join(regions[1:])))
    day = formats.format_date(o.price_as_of) + (
        "" if o.price_date_exact else _(" (date unknown: collection date)")
    )
    lines.append(
        _("  price: {price}/h for all nodes (listed in {currency}), as of {day}, {age} days old").format(
            price=money(o.price_usd_per_hour), currency=o.currency, day=day, age=o.price_age_days
        )
        + (_(" — over the stale limit") if o.price_over_limit else "")
    )
    lines.append(
        _("  hours: {hours} (start-up {startup} included)").format(
            hours=hours_range(o), startup=hours_text(o.startup_hours)
        )
    )
    lines.append(_("  total: {total}").format(total=money_range(o)))
    for part, value in o.cost_breakdown_usd.items():
        lines.append(f"    {_pad(cost_part_word(part), 22)} {money(value)}")
    if o.unknown_costs:
        parts = ", ".join(cost_part_word(p) for p in o.unknown_costs)
        lines.append(_("    unknown, counted as {zero}: {parts}").format(zero=money(0.0), parts=parts))
    for label, value in o.unit_costs.items():
        lines.append(f"  {money(value)} {unit_label(label)}")
    if o.latency is not None:
        lat = o.latency
        lines.append(
            _(
                "  per request: first token {ttft} ms, {tpot} ms per output token, {request} s end to end "
                "(at the workload's concurrency)"
            ).format(
                ttft=f"{lat['ttft_s'] * 1000:,.0f}",
                tpot=f"{lat['tpot_s'] * 1000:,.1f}",
                request=f"{lat['request_s']:,.2f}",
            )
        )
    if o.commitment_usd is not None:
        lines.append(
            _("  reservation: {kind}; whole commitment {cost} ({months} months)").format(
                kind=o.reserved_kind, cost=money(o.commitment_usd), months=f"{o.commitment_months:g}"
            )
        )
    if o.interconnect:
        lines.append(_("  interconnect: {interconnect}").format(interconnect=o.interconnect))
    if o.dtype_fallback:
        lines.append(_("  dtype fallback: {dtype}").format(dtype=o.dtype_fallback))
    lines.append(
        _(
            "  memory: {used} of {capacity} GiB per GPU; bottleneck: {bottleneck}; Pareto: {pareto}; "
            "worth renting: {worth}"
        ).format(
            used=f"{o.memory_per_gpu_gib:,.1f}",
            capacity=f"{o.memory_capacity_gib:,.1f}",
            bottleneck=o.bottleneck,
            pareto=_("yes") if o.pareto else _("no"),
            worth=_("yes") if o.worth_renting else _("no (a similar-cost option is far faster)"),
        )
    )
    if o.pricing == "spot":
        lines.append(
            _("  expected spot preemptions: {count}").format(count=f"{o.expected_interruptions:.2g}")
        )
    lines.append(_("  source: {source}").format(source=o.source))
    lines.append(_("  assumptions:"))
    lines.extend(f"    - {a}" for a in o.assumptions)
    return lines
