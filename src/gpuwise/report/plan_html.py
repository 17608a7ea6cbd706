"""The `plan --html` report: one self-contained page (plotly.js inline, no network needed to open it).

A cost-versus-time chart of every qualifying option (log axes; on-demand and spot apart; the Pareto front
drawn as a line), the top-N table, the rejections, price dates and every assumption.
Imports plotly inside `render_plan_html` only; returns text and writes nothing (the CLI writes the file).
plotly is an optional extra (`gpuwise[html]`: about half of gpuwise's installed size); without it,
`require_plotly` and `render_plan_html` raise one UsageError that says how to install it. The import goes
through an injectable `importer`, so that path is testable without touching the real module.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from types import ModuleType

from gpuwise.errors import UsageError
from gpuwise.locale import N_, _, language
from gpuwise.plan.currency import rounded as _money  # format_money, in plan --currency's currency
from gpuwise.plan.models import Option, PlanResult
from gpuwise.plan.output import OptionGroup, cost_part_word, groups_with_picks, pick_lines, pricing_word

_COLORS = {"on_demand": "#1f77b4", "spot": "#ff7f0e", "reserved": "#2ca02c"}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; } td.d { white-space: nowrap; }
tr.pareto td:first-child { font-weight: bold; }
.warn { color: #b35900; } .muted { color: #666; font-size: 0.85rem; }
"""


PlotlyImporter = Callable[[], ModuleType]  # returns plotly.graph_objects; raises ImportError without it


def import_plotly() -> ModuleType:
    """plotly.graph_objects, imported on first use (about 1 s: only `--html` pays it)."""
    import plotly.graph_objects as go

    module: ModuleType = go  # plotly ships no type information
    return module


def require_plotly(importer: PlotlyImporter = import_plotly) -> ModuleType:
    """plotly.graph_objects, or a UsageError (exit 2) naming the extra that brings it."""
    try:
        return importer()
    except ImportError as exc:
        raise UsageError(
            _("--html needs plotly, which is not installed"),
            why=_(
                "plotly is an optional extra of gpuwise (the chart library is about half its installed size)"
            ),
            fix="pip install 'gpuwise[html]'",
        ) from exc


def _th(*names: str, left: bool = False) -> str:
    """Table heading cells, translated (`left`: text columns, aligned left)."""
    cls = " class=l" if left else ""
    return "".join(f"<th{cls}>{_(n)}</th>" for n in names)


def _hover(o: Option) -> str:
    parts = o.cost_breakdown_usd
    lines = [
        f"<b>{html.escape(o.provider)} {html.escape(o.instance_type)}</b>"
        + (_(" ×{n} nodes").format(n=o.nodes) if o.nodes > 1 else ""),
        f"{html.escape(o.region)} · {pricing_word(o.pricing)} · {o.gpus_per_node * o.nodes}× {o.gpu}",
        _("{hours} h · total {cost} · {price}/h").format(
            hours=f"{o.hours:,.2f}", cost=_money(o.cost_usd), price=_money(o.price_usd_per_hour)
        ),
        _("compute {compute} · storage {storage} · egress {egress} · interruptions {interruptions}").format(
            compute=_money(parts["compute"]),
            storage=_money(parts["storage"]),
            egress=_money(parts["egress"]),
            interruptions=_money(parts["interruption_overhead"]),
        ),
    ]
    if o.unknown_costs:
        lines.append(_("unknown (counted $0): {parts}").format(parts=", ".join(o.unknown_costs)))
    return "<br>".join(lines)


def render_chart(options: Sequence[Option], importer: PlotlyImporter = import_plotly) -> str:
    """The cost-vs-time chart as an HTML fragment with plotly.js inline."""
    go = require_plotly(importer)
    fig = go.Figure()
    for pricing in ("on_demand", "spot", "reserved"):
        pts = [o for o in options if o.pricing == pricing]
        if not pts:
            continue
        fig.add_trace(
            go.Scatter(
                x=[o.hours for o in pts],
                y=[o.cost_usd for o in pts],
                mode="markers",
                name=pricing_word(pricing),
                marker={"color": _COLORS[pricing], "size": 7, "opacity": 0.6},
                text=[_hover(o) for o in pts],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    front = sorted((o for o in options if o.pareto), key=lambda o: (o.hours, o.cost_usd))
    if front:
        fig.add_trace(
            go.Scatter(
                x=[o.hours for o in front],
                y=[o.cost_usd for o in front],
                mode="lines+markers",
                name=_("Pareto front (nothing both cheaper and faster)"),
                line={"color": "#d62728", "width": 2, "shape": "hv"},
                marker={"color": "#d62728", "size": 11, "symbol": "diamond"},
                text=[_hover(o) for o in front],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    positive = all(o.hours > 0 and o.cost_usd > 0 for o in options)
    axis = "log" if positive else "linear"
    fig.update_layout(
        title=_("Total cost vs wall-clock time, every qualifying option"),
        xaxis={"title": {"text": _("hours (wall clock, interruptions included)")}, "type": axis},
        yaxis={"title": {"text": _("total cost (USD)")}, "type": axis},
        template="plotly_white",
        height=560,
        legend={"orientation": "h", "y": -0.15},
    )
    fragment: str = fig.to_html(
        full_html=False,
        include_plotlyjs=True,
        div_id="cost-time-chart",
        config={"displaylogo": False, "responsive": True},
    )
    return fragment


def _table(groups: Sequence[OptionGroup]) -> str:
    from gpuwise.plan.currency import symbol

    head = (
        "<tr><th>#</th>"
        + _th(N_("provider"), N_("instance"), N_("region"), N_("pricing"), left=True)
        + f"<th>{symbol()}/h</th>"
        + _th(N_("price date"), left=True)
        + _th(N_("hours"), N_("total"), N_("compute"), N_("start-up"), N_("storage"), N_("egress"))
        + _th(N_("interruptions"))
        + _th(N_("unknown"), left=True)
        + _th(N_("headroom GiB"))
        + _th(N_("bottleneck"), N_("Pareto"), left=True)
        + "</tr>"
    )
    rows = []
    for i, group in enumerate(groups, 1):
        o = group.option
        p = o.cost_breakdown_usd
        date_cell = o.price_as_of.isoformat()
        if not o.price_date_exact:
            no_date = _("the source gives no date: collection date")
            date_cell = f'<span class="warn" title="{no_date}">{date_cell}?</span>'
        if o.price_over_limit:
            date_cell = (
                f'<span class="warn" title="{_("over the stale limit")}">'
                + _("{date} old").format(date=date_cell)
                + "</span>"
            )
        instance = html.escape(o.instance_type) + (f" ×{o.nodes}" if o.nodes > 1 else "")
        unknown = ", ".join(cost_part_word(part) for part in o.unknown_costs)
        rows.append(
            f'<tr class="{"pareto" if o.pareto else ""}"><td>{i}</td>'
            f"<td class=l>{html.escape(o.provider)}</td>"
            f"<td class=l>{instance}</td>"
            f'<td class=l title="{html.escape(", ".join(group.regions))}">'
            f"{html.escape(group.regions_text())}</td>"
            f"<td class=l>{pricing_word(o.pricing)}</td><td>{_money(o.price_usd_per_hour)}</td>"
            f"<td class='l d'>{date_cell}</td><td>{o.hours:,.2f}</td><td><b>{_money(o.cost_usd)}</b></td>"
            f"<td>{_money(p['compute'])}</td><td>{_money(p.get('startup', 0.0))}</td>"
            f"<td>{_money(p['storage'])}</td><td>{_money(p['egress'])}</td>"
            f"<td>{_money(p['interruption_overhead'])}</td>"
            f"<td class=l>{html.escape(unknown) or '–'}</td>"
            f"<td>{o.memory_capacity_gib - o.memory_per_gpu_gib:,.1f}</td>"
            f"<td class=l>{html.escape(o.bottleneck)}</td>"
            f"<td class=l>{_('yes') if o.pareto else ''}</td></tr>"
        )
    legend = (
        "<p class=muted>"
        + _(
            "Bold row number: on the Pareto front. A price date ending in ? is the date the data "
            "was collected (the source gives none); old: over 90 days. Unknown: cost parts whose rate "
            "gpuwise does not know, counted as {zero}. Headroom: GPU memory left per GPU. N regions: the "
            "same offer, price and total in several regions, shown once (hover for all)."
        ).format(zero=_money(0.0))
        + "</p>"
    )
    return f"<table>{head}{''.join(rows)}</table>{legend}"


def render_plan_html(
    result: PlanResult,
    *,
    title: str,
    top: int,
    notes: Sequence[str] = (),
    generated: str = "",
    importer: PlotlyImporter = import_plotly,
) -> str:
    """The whole page. `notes` are lines shown under the title (e.g. the smoke-test definition)."""
    chart = (
        render_chart(result.options, importer) if result.options else f"<p>{_('No option qualifies.')}</p>"
    )
    rejected = "".join(
        f"<li>{html.escape(reason)}: {n}</li>"
        for reason, n in sorted(result.rejected.items(), key=lambda kv: -kv[1])
    )
    sources = "".join(
        f"<li>{html.escape(p)}: {html.escape(result.source_date_text(p))}</li>"
        for p in sorted(result.sources)
    )
    shown, picks = groups_with_picks(result, top)
    assumptions = sorted({a for g in shown for a in g.option.assumptions})
    plan_notes = "".join(f"<li>{html.escape(a)}</li>" for a in result.assumptions)
    option_notes = "".join(f"<li>{html.escape(a)}</li>" for a in assumptions)
    header_notes = "".join(f"<p>{html.escape(n)}</p>" for n in notes)
    header_notes += "".join(f"<p><b>{html.escape(line)}</b></p>" for line in pick_lines(result, shown, picks))
    none = f"<li>{_('none')}</li>"
    return (
        f"<!DOCTYPE html>\n<html lang={'zh-CN' if language() == 'zh' else 'en'}><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{header_notes}"
        "<p class=muted>"
        + _(
            "Objective: {objective} · {n} qualifying options of {considered} configurations considered."
        ).format(objective=html.escape(result.objective), n=len(result.options), considered=result.considered)
        + f" {html.escape(generated)}</p>"
        f"<div id=chart>{chart}</div>"
        f"<h2>{_('Top {n} choices (and the picks)').format(n=min(top, len(shown)))}</h2>{_table(shown)}"
        f"<h2>{_('Rejected configurations, by reason')}</h2><ul>{rejected or none}</ul>"
        f"<h2>{_('Price dates (newest per provider)')}</h2><ul>{sources}</ul>"
        f"<h2>{_('Assumptions')}</h2><ul>{plan_notes}</ul>"
        f"<h2>{_('Assumptions behind the listed options')}</h2><ul class=muted>{option_notes}</ul>"
        "</body></html>\n"
    )
