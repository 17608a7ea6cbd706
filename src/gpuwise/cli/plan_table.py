"""How `gpuwise plan` prints a plan for people: the header with the picks, the options table, the legend,
the rejection counts, price dates and assumptions; and one option in full for `--pick N`.

Rendering only (rich); the plan comes from `gpuwise.plan.run`. Imported by the command after planning,
so `gpuwise --help` does not load it.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

from gpuwise.cli.output import console

if TYPE_CHECKING:
    from gpuwise.plan.models import Option, PlanResult
    from gpuwise.plan.output import OptionGroup

_SHORT_BOTTLENECK = {"memory_bandwidth": "bandwidth", "memory_capacity": "memory", "communication": "comm."}
_SPLIT_LABELS = (
    ("compute", "c"),
    ("startup", "u"),
    ("storage", "s"),
    ("egress", "e"),
    ("interruption_overhead", "i"),
)


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
        console.print(f"HTML report: {escape(str(html))}", soft_wrap=True)


def _header(result: PlanResult, shown: list[OptionGroup], picks: dict[str, int], name: str) -> None:
    from gpuwise.plan.output import break_even_lines, pick_lines

    console.print(f"[bold]{escape(name)}[/]: {len(result.options)} options qualify", soft_wrap=True)
    for line in pick_lines(result, shown, picks):
        console.print(escape(line), soft_wrap=True)
    for line in break_even_lines(shown):
        console.print(escape(line), soft_wrap=True)


def _options_table(result: PlanResult, shown: list[OptionGroup], picks: dict[str, int], top: int) -> Table:
    marks: dict[int, str] = {}
    for pick_name in ("cheapest", "balanced", "fastest"):
        if pick_name in picks:
            marks[picks[pick_name]] = marks.get(picks[pick_name], "") + pick_name[0].upper()
    table = Table(
        title=f"top {min(top, len(shown))} choices by {result.objective}"
        + (" (+ picks beyond them)" if len(shown) > top else ""),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("offer", min_width=14, ratio=1, overflow="fold")
    table.add_column("pricing", no_wrap=True)
    # numbers never wrap or truncate at 80 columns: the offer's name folds instead (STYLE)
    table.add_column("hours", justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    table.add_column("free\nbound", justify="right", no_wrap=True)
    for i, group in enumerate(shown, 1):
        o = group.option
        table.add_row(
            f"{i}{'*' if o.pareto else ''}{marks.get(i - 1, '')}",
            _offer_cell(group),
            _pricing_cell(o),
            _hours_cell(o),
            _total_cell(o),
            f"{o.memory_capacity_gib - o.memory_per_gpu_gib:,.0f}\u00a0GiB\n"
            f"[dim]{_SHORT_BOTTLENECK.get(o.bottleneck, o.bottleneck)}[/]",
        )
    return table


def _offer_cell(group: OptionGroup) -> str:
    o = group.option
    nodes = f" on {o.nodes} nodes" if o.nodes > 1 else ""
    extra = ""
    if o.dtype_fallback:
        extra += f"\n[yellow]as {o.dtype_fallback}[/]"
    if o.pricing == "reserved" and o.commitment_months:
        extra += f"\n[dim]whole {o.commitment_months:g}-month commitment[/]"
    return (
        f"{escape(o.provider)} {escape(o.instance_type)}\n"
        f"[dim]{o.gpus_per_node * o.nodes}× {o.gpu}{nodes} · {escape(group.regions_text())}[/]{extra}"
    )


def _pricing_cell(o: Option) -> str:
    from gpuwise.plan.currency import money

    day = o.price_as_of.isoformat()
    flag = ("" if o.price_date_exact else "?") + ("!" if o.price_over_limit else "")
    if flag:
        day = f"[yellow]{day}{flag}[/]"
    return f"{o.pricing.replace('_', '-')}\n{money(o.price_usd_per_hour)}/h\n{day}"


def _hours_cell(o: Option) -> str:
    from gpuwise.units import format_run_hours as hours_text

    hours = hours_text(o.hours)
    if o.hours_low is not None and o.hours_high is not None and o.hours_high > o.hours_low:
        hours += f"\n[dim]{_span(hours_text(o.hours_low), hours_text(o.hours_high))}[/]"
    if o.latency is not None:  # serving: what one request sees
        hours += f"\n{o.latency['request_s']:,.2f} s/req\n[dim]TTFT {o.latency['ttft_s'] * 1000:,.0f} ms[/]"
    return hours


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
        # '5.04–56 h (2.3 days)': past 48 h the high end adds its days, its unit still the low end's.
        if low.endswith(unit) and ((high.endswith(unit) and "(" not in high) or f"{unit} (" in high):
            return f"{low.removesuffix(unit)}–{high}"
    for symbol in ("$", "¥"):
        if low.startswith(symbol) and high.startswith(symbol):
            return f"{low}–{high[1:]}"
    return f"{low}–{high}"


def _legend(result: PlanResult) -> None:
    from gpuwise.plan.currency import symbol
    from gpuwise.plan.picks import RULE_TEXT

    console.print(
        "[dim]* on the Pareto front (nothing both cheaper and faster); C, F, B: the cheapest, fastest "
        f"and balanced picks ({escape(RULE_TEXT)}). hours and total: expected, then the range the "
        "estimate gives. split: c compute, u start-up (boot, set-up, downloads, final upload), "
        "s storage, e egress, i spot interruptions. +?: some cost parts unknown, counted as "
        f"{escape(symbol())}0 "
        "(see --pick N or --json). "
        f"A date ending in ?: the source gives none (collection date shown); !: over "
        f"{result.stale_after_days} days old (by the collection date when undated). free: GPU memory "
        "left per GPU; bound: the bottleneck. N regions: the same offer, price and total in several "
        "regions, shown once. --pick N prints row N in full."
        + (
            " s/req and TTFT: one request's end-to-end time and time to first token at the workload's "
            "concurrency."
            if any(o.latency is not None for o in result.options[:1])
            else ""
        )
        + "[/]",
        soft_wrap=True,
    )


def _footer(result: PlanResult) -> None:
    """Rejections by reason, the price dates per provider, and the plan's assumptions."""
    rejected = ", ".join(f"{r} {n}" for r, n in sorted(result.rejected.items(), key=lambda kv: -kv[1]))
    console.print(
        f"Considered {result.considered} configurations: {len(result.options)} qualify"
        + (f"; rejected: {rejected}" if rejected else ""),
        soft_wrap=True,
    )
    console.print(
        f"[dim]Prices as of: {_price_dates(result)} (!: over {result.stale_after_days} days old)[/]",
        soft_wrap=True,
    )
    for a in result.assumptions:
        console.print(f"[dim]- {escape(a)}[/]", soft_wrap=True)


def _price_dates(result: PlanResult) -> str:
    """'aws 2026-11-30, gcp 2026-05-20!; date unknown (collected 2026-05-20!): vast'."""
    today = result.today

    def stale_mark(day: date) -> str:
        return "!" if today is not None and (today - day).days > result.stale_after_days else ""

    dated = [
        f"{p} {d.isoformat()}{stale_mark(d)}"
        for p, d in result.sources.items()
        if p not in result.undated_sources
    ]
    undated: dict[str, list[str]] = {}
    for p in sorted(result.undated_sources):
        undated.setdefault(result.sources[p].isoformat(), []).append(p)
    parts = [", ".join(dated)] if dated else []
    parts += [
        f"date unknown (collected {day}{stale_mark(date.fromisoformat(day))}): {', '.join(ps)}"
        for day, ps in sorted(undated.items())
    ]
    return "; ".join(parts)
