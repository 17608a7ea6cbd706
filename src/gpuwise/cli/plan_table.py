"""How `gpuwise plan` prints a plan for people: the header with the picks, the options table, the legend,
the rejection counts, price dates and assumptions; and one option in full for `--pick N`.

Rendering only (rich); the plan comes from `gpuwise.plan.run`. Imported by the command after planning,
so `gpuwise --help` does not load it.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

from gpuwise.cli.output import console
from gpuwise.locale import N_, _, formats, ngettext

if TYPE_CHECKING:
    from gpuwise.plan.models import Option, PlanResult
    from gpuwise.plan.output import OptionGroup

_SPLIT_LABELS = (
    ("compute", "c"),
    ("startup", "u"),
    ("storage", "s"),
    ("egress", "e"),
    ("interruption_overhead", "i"),
)


_BOTTLENECK_WORDS = {
    "memory_bandwidth": N_("bandwidth"),
    "memory_capacity": N_("memory"),
    "communication": N_("comm."),
    "compute": N_("compute"),
}


def _short_bottleneck(bottleneck: str) -> str:
    """The bottleneck in a word short enough for the table (translated where shown)."""
    word = _BOTTLENECK_WORDS.get(bottleneck)
    return _(word) if word else bottleneck


def render_pick(groups: list[OptionGroup], n: int) -> None:
    """Option `n` (1 = first row of the table) in full."""
    from gpuwise.plan.output import option_full_text

    group = groups[n - 1]
    for line in option_full_text(group.option, group.regions, n):
        console.print(escape(line), soft_wrap=True)


def render_table(result: PlanResult, *, top: int, notes: list[str], name: str, html: Path | None) -> None:
    """The whole text answer: header and picks, the table and its legend, then the plan's footer."""
    from gpuwise.plan.output import groups_with_picks

    for note in notes:
        console.print(escape(note), soft_wrap=True)
    shown, picks = groups_with_picks(result, top)
    if shown:
        _header(result, shown, picks, name)
        console.print(_options_table(result, shown, picks, top))
        _legend(result)
    _footer(result)
    if html is not None:
        console.print(_("HTML report: {path}").format(path=escape(str(html))), soft_wrap=True)


def _header(result: PlanResult, shown: list[OptionGroup], picks: dict[str, int], name: str) -> None:
    from gpuwise.plan.output import break_even_lines, pick_lines

    console.print(
        ngettext(
            "{name}: {count} option qualifies", "{name}: {count} options qualify", len(result.options)
        ).format(name=f"[bold]{escape(name)}[/]", count=len(result.options)),
        soft_wrap=True,
    )
    for line in pick_lines(result, shown, picks):
        console.print(escape(line), soft_wrap=True)
    for line in break_even_lines(shown):
        console.print(escape(line), soft_wrap=True)


def _options_table(result: PlanResult, shown: list[OptionGroup], picks: dict[str, int], top: int) -> Table:
    from gpuwise.plan.output import same_hours

    marks: dict[int, str] = {}
    # every option running the same hours: only "cheapest" means anything (pick_lines says why)
    for pick_name in ("cheapest",) if same_hours(result) else ("cheapest", "balanced", "fastest"):
        if pick_name in picks:
            marks[picks[pick_name]] = marks.get(picks[pick_name], "") + pick_name[0].upper()
    table = Table(
        title=ngettext(
            "top {count} choice by {objective}", "top {count} choices by {objective}", min(top, len(shown))
        ).format(count=min(top, len(shown)), objective=_objective_word(result.objective))
        + (_(" (+ picks beyond them)") if len(shown) > top else ""),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        # two spaces between columns, not three: six columns of whole numbers must fit 80 with the offer
        collapse_padding=True,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column(_("offer"), min_width=14, ratio=1, overflow="fold")
    table.add_column(_("pricing"), no_wrap=True)
    # numbers never wrap or truncate at 80 columns: the offer's name folds instead (STYLE)
    table.add_column(_("hours"), justify="right", no_wrap=True)
    table.add_column(_("total"), justify="right", no_wrap=True)
    table.add_column(_("free\nbound"), justify="right", no_wrap=True)
    for i, group in enumerate(shown, 1):
        o = group.option
        table.add_row(
            f"{i}{'*' if o.pareto else ''}{marks.get(i - 1, '')}",
            _offer_cell(group),
            _pricing_cell(o),
            _hours_cell(o),
            _total_cell(o),
            f"{o.memory_capacity_gib - o.memory_per_gpu_gib:,.0f}\u00a0GiB\n"
            f"[dim]{_short_bottleneck(o.bottleneck)}[/]",
        )
    return table


def _objective_word(objective: str) -> str:
    words = {"cost": _("cost"), "time": _("time"), "balanced": _("balanced")}
    return words.get(objective, objective)


def _offer_cell(group: OptionGroup) -> str:
    o = group.option
    nodes = _(" on {count} nodes").format(count=o.nodes) if o.nodes > 1 else ""
    extra = ""
    if o.dtype_fallback:
        extra += "\n[yellow]" + _("as {dtype}").format(dtype=o.dtype_fallback) + "[/]"
    if o.pricing == "reserved" and o.commitment_months:
        months = f"{o.commitment_months:g}"
        extra += "\n[dim]" + _("whole {months}-month commitment").format(months=months) + "[/]"
    return (
        f"{escape(o.provider)} {escape(o.instance_type)}\n"
        f"[dim]{o.gpus_per_node * o.nodes}× {o.gpu}{nodes} · {escape(group.regions_text())}[/]{extra}"
    )


def _pricing_cell(o: Option) -> str:
    from gpuwise.catalog.query import date_marks
    from gpuwise.plan.currency import money
    from gpuwise.plan.output import pricing_word

    day = formats.format_date(o.price_as_of)
    flag = date_marks(o.price_date_exact, o.price_over_limit)
    if flag:
        day = f"[yellow]{day}{flag}[/]"
    return f"{pricing_word(o.pricing)}\n{money(o.price_usd_per_hour)}/h\n{day}"


def _hours_cell(o: Option) -> str:
    hours = _table_hours(o.hours)
    if o.hours >= 48:  # on its own line: "1,488 h (62.0 days)" beside a range overran 80 columns
        hours += "\n[dim]" + _("({days} days)").format(days=f"{o.hours / 24:,.1f}") + "[/]"
    if o.hours_low is not None and o.hours_high is not None and o.hours_high > o.hours_low:
        hours += f"\n[dim]{_hours_span(o.hours_low, o.hours_high)}[/]"
    if o.latency is not None:  # serving: what one request sees
        hours += f"\n{o.latency['request_s']:,.2f} s/req\n[dim]TTFT {o.latency['ttft_s'] * 1000:,.0f} ms[/]"
    return hours


def _table_hours(h: float) -> str:
    """``format_run_hours`` without the days it adds past 48 h (the table gives them a line of their own)."""
    from gpuwise.units import format_run_hours

    return f"{h:,.0f} h" if h >= 48 else format_run_hours(h)


def _hours_span(low: float, high: float) -> str:
    """'5.04–56 h', '0.43–2.69 h', '12.5–48.9 min': both ends in the high end's unit, said once, so the
    range stays as narrow as one figure ('25.8 min–2.69 h (2.3 days)' pushed columns off 80)."""
    if high >= 1:
        return f"{_hour_figure(low)}–{_hour_figure(high)} h"
    if high >= 1 / 60:
        return f"{low * 60:,.1f}–{high * 60:,.1f} min"
    return f"{low * 3600:,.0f}–{high * 3600:,.0f} s"


def _hour_figure(h: float) -> str:
    """Hours with the digits ``format_run_hours`` gives them: 2.35, 14.9, 1,488."""
    if h < 10:
        return f"{h:.2f}"
    return f"{h:.1f}" if h < 48 else f"{h:,.0f}"


def _total_cell(o: Option) -> str:
    from gpuwise.plan.currency import money
    from gpuwise.plan.output import short_unit_cost

    total = f"[bold]{money(o.cost_usd)}[/]"
    if o.cost_usd_low is not None and o.cost_usd_high is not None and o.cost_usd_high > o.cost_usd_low:
        total += f"\n[dim]{_span(money(o.cost_usd_low), money(o.cost_usd_high))}[/]"
    unknown = " [yellow]+?[/]" if o.unknown_costs else ""
    total += f"\n[dim]{_split(o)}[/]{unknown}"
    unit = short_unit_cost(o)
    if unit:
        total += f"\n[dim]{escape(unit)}[/]"
    return total


def _split(o: Option) -> str:
    """'c92 u2 i6': each cost part's share of the total, in percent (parts under 0.5% left out)."""
    parts = o.cost_breakdown_usd
    total = o.cost_usd or 1.0
    shares = ((short, parts.get(k, 0.0) / total * 100) for k, short in _SPLIT_LABELS)
    return " ".join(f"{short}{pct:.0f}" for short, pct in shares if pct >= 0.5) or "–"


def _span(low: str, high: str) -> str:
    """'4.44–14.9 h', '$0.48–1.82': a range short enough for a table cell (the unit said once)."""
    for unit in (" h", " min", " s"):
        # "5.04–56 h (2.3 days)": past 48 h the high end adds its days (either language's brackets), its
        # unit still the low end's.
        with_days = f"{unit} (" in high or f"{unit}（" in high
        if low.endswith(unit) and ((high.endswith(unit) and "(" not in high) or with_days):
            return f"{low.removesuffix(unit)}–{high}"
    # "$", "¥", and Chinese's "US$": the sign is what comes before the first digit
    sign = re.match(r"\D*", low)
    if sign and sign.group() and high.startswith(sign.group()):
        return f"{low}–{high[len(sign.group()) :]}"
    return f"{low}–{high}"


def _legend(result: PlanResult) -> None:
    from gpuwise.plan.currency import symbol
    from gpuwise.plan.picks import rule_text

    legend = _(
        "* on the Pareto front (nothing both cheaper and faster); C, F, B: the cheapest, fastest "
        "and balanced picks ({rule}). hours and total: expected, then the range the "
        "estimate gives. split: c compute, u start-up (boot, set-up, downloads, final upload), "
        "s storage, e egress, i spot interruptions. +?: some cost parts unknown, counted as "
        "{zero} (see --pick N or --json). "
        "A date ending in ?: the source gives none (collection date shown); !: over "
        "{days} days old (by the collection date when undated). free: GPU memory "
        "left per GPU; bound: the bottleneck. N regions: the same offer, price and total in several "
        "regions, shown once. --pick N prints row N in full."
    ).format(rule=escape(rule_text()), zero=f"{escape(symbol())}0", days=result.stale_after_days)
    if any(o.latency is not None for o in result.options[:1]):
        legend += _(
            " s/req and TTFT: one request's end-to-end time and time to first token at the workload's "
            "concurrency."
        )
    console.print(f"[dim]{legend}[/]", soft_wrap=True)


def _footer(result: PlanResult) -> None:
    """Rejections by reason, the price dates per provider, and the plan's assumptions."""
    rejected = ", ".join(f"{r} {n}" for r, n in sorted(result.rejected.items(), key=lambda kv: -kv[1]))
    console.print(
        _("Considered {considered} configurations: {count} qualify").format(
            considered=result.considered, count=len(result.options)
        )
        + (_("; rejected: {reasons}").format(reasons=rejected) if rejected else ""),
        soft_wrap=True,
    )
    dates = _("Prices as of: {dates} (!: over {days} days old)").format(
        dates=_price_dates(result), days=result.stale_after_days
    )
    console.print(f"[dim]{dates}[/]", soft_wrap=True)
    for a in result.assumptions:
        console.print(f"[dim]- {escape(a)}[/]", soft_wrap=True)


def _price_dates(result: PlanResult) -> str:
    """'aws 2026-11-30, gcp 2026-05-20!; date unknown (collected 2026-05-20!): vast'."""
    today = result.today

    def stale_mark(day: date) -> str:
        return "!" if today is not None and (today - day).days > result.stale_after_days else ""

    dated = [
        f"{p} {formats.format_date(d)}{stale_mark(d)}"
        for p, d in result.sources.items()
        if p not in result.undated_sources
    ]
    undated: dict[str, list[str]] = {}
    for p in sorted(result.undated_sources):
        undated.setdefault(result.sources[p].isoformat(), []).append(p)
    parts = [", ".join(dated)] if dated else []
    parts += [
        _("date unknown (collected {day}): {providers}").format(
            day=formats.format_date(d) + stale_mark(d), providers=", ".join(ps)
        )
        for d, ps in sorted((date.fromisoformat(day), ps) for day, ps in undated.items())
    ]
    return "; ".join(parts)
