"""The `gpuwise report --html` page: one self-contained file with the report's figures and charts.

plotly.js is embedded gzip-compressed (base64) and unpacked by the browser's own DecompressionStream, so
the page opens without a network and weighs about 2 MB instead of the 5 MB of plotly.js inline (the plan
report's way). The charts are plotly figures built from the report's JSON document alone, so the page
shows the same figures as `--json`. The layout fits 1280 px without horizontal scrolling: tables wrap
their text and charts follow the page width. Imports plotly inside `render_report_html` only.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from typing import Any

from gpuwise.locale import N_, _, language
from gpuwise.report.plan_html import PlotlyImporter, import_plotly, require_plotly
from gpuwise.report.text import GROUP_TITLES as _GROUP_TITLES
from gpuwise.units import format_run_hours, format_usd

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1rem 2rem;
       max-width: 1180px; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: 0.85rem; width: 100%; table-layout: auto; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.5rem; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; white-space: normal; overflow-wrap: anywhere; }
.chart { width: 100%; height: 360px; } .muted { color: #666; font-size: 0.85rem; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; } .grid > div { min-width: 0; }
"""

# Unpacks plotly.js, then draws every figure; sets data-charts on <body> when done (or the error).
_LOADER = """
(async () => {
  try {
    const raw = atob(document.getElementById('plotly-gz').textContent.trim());
    const bytes = Uint8Array.from(raw, (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    const lib = document.createElement('script');
    lib.textContent = await new Response(stream).text();
    document.head.appendChild(lib);
    const figures = JSON.parse(document.getElementById('report-figures').textContent);
    for (const [id, fig] of Object.entries(figures)) {
      await Plotly.newPlot(id, fig.data, fig.layout, {displaylogo: false, responsive: true});
    }
    document.body.dataset.charts = String(Object.keys(figures).length);
  } catch (err) {
    document.body.dataset.charts = 'error: ' + err;
  }
})();
function filterMonth(month) {
  for (const row of document.querySelectorAll('tr[data-month]')) {
    row.hidden = month !== '' && row.dataset.month !== month;
  }
}
"""


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x))


def _pct(x: float | None) -> str:
    return _("unknown") if x is None else f"{x:.0f} %"


def _ratio(x: float | None) -> str:
    return _("unknown") if x is None else f"{x:.2f}×"


def _num(x: float | None) -> str:
    return _("unknown") if x is None else f"{x:,.1f}"


def _th(*names: str, left: bool = False) -> str:
    """Table heading cells, translated (`left`: text columns, aligned left)."""
    cls = " class=l" if left else ""
    return "".join(f"<th{cls}>{_(n)}</th>" for n in names)


def _figures(r: dict[str, Any], go: Any) -> dict[str, Any]:
    """Plotly figures (as JSON-ready dicts) keyed by the id of the div they draw into."""
    figs: dict[str, Any] = {}
    layout = {"template": "plotly_white", "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "autosize": True}
    spend = r["spend"]
    if spend and spend["by_month"]:
        fig = go.Figure(
            go.Bar(x=[g["key"] for g in spend["by_month"]], y=[g["cost_usd"] for g in spend["by_month"]])
        )
        fig.update_layout(
            title=_("Spend by month (USD, runs with a known cost)"), xaxis={"type": "category"}, **layout
        )
        figs["chart-spend-month"] = fig
        fig = go.Figure(
            go.Bar(x=[g["key"] for g in spend["by_project"]], y=[g["cost_usd"] for g in spend["by_project"]])
        )
        fig.update_layout(title=_("Spend by project (USD)"), **layout)
        figs["chart-spend-project"] = fig
    util = r["utilization"]
    if util and util["by_day"]:
        days = [d["day"] for d in util["by_day"]]
        fig = go.Figure()
        fig.add_trace(go.Bar(x=days, y=[d["gpu_hours"] for d in util["by_day"]], name=_("GPU-hours sampled")))
        fig.add_trace(
            go.Bar(x=days, y=[d["idle_gpu_hours"] for d in util["by_day"]], name=_("of which idle"))
        )
        fig.add_trace(
            go.Bar(
                x=days, y=[d["unknown_util_gpu_hours"] for d in util["by_day"]], name=_("of which no reading")
            )
        )
        fig.add_trace(
            go.Scatter(
                x=days, y=[d["util_mean_pct"] for d in util["by_day"]], name=_("mean utilization %"),
                yaxis="y2", mode="lines+markers", connectgaps=False,
            )
        )  # fmt: skip
        fig.update_layout(
            title=_("GPU-hours per day and how busy they were (gaps: no reading)"),
            xaxis={"type": "category"},
            yaxis={"title": {"text": _("GPU-hours")}},
            yaxis2={"title": {"text": "%"}, "overlaying": "y", "side": "right", "range": [0, 100]},
            barmode="group",
            legend={"orientation": "h", "y": -0.2},
            **layout,
        )
        figs["chart-util-day"] = fig
    pva = [p for p in r["planned_vs_actual"]["runs"] if p["hours_ratio"] is not None]
    if pva:
        top = max(max(p["planned_hours"], p["actual_hours"]) for p in pva) * 1.1
        fig = go.Figure()
        fig.add_trace(
            go.Scatter(x=[0, top], y=[0, top], mode="lines", name=_("as planned"), line={"dash": "dot"})
        )
        fig.add_trace(
            go.Scatter(
                x=[p["planned_hours"] for p in pva], y=[p["actual_hours"] for p in pva], mode="markers",
                name=_("runs"),
                text=[
                    _("{run_id} {task} on {gpu}").format(run_id=p["run_id"], task=p["task"], gpu=p["gpu"])
                    for p in pva
                ],
            )
        )  # fmt: skip
        fig.update_layout(
            title=_("Planned vs actual hours"), xaxis={"title": {"text": _("planned h")}},
            yaxis={"title": {"text": _("actual h")}}, **layout,
        )  # fmt: skip
        figs["chart-planned"] = fig
    return {k: json.loads(v.to_json()) for k, v in figs.items()}


def _group_table(title: str, groups: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td class=l>{_e(g['key'])}</td><td>{g['runs']}</td><td>{_num(g['gpu_hours'])}</td>"
        f"<td>{format_usd(g['cost_usd'])}</td><td>{g['runs_without_cost']}</td><td>{_pct(g['util_mean_pct'])}</td></tr>"
        for g in groups
    )
    heading = _("By {title}").format(title=_(_GROUP_TITLES.get(title, title)))
    return (
        f"<div><h3>{heading}</h3><table><tr><th class=l>{_(_GROUP_TITLES.get(title, title))}</th>"
        + _th(N_("runs"), N_("GPU-h"), N_("cost"), N_("no cost"), N_("busy"))
        + f"</tr>{rows}</table></div>"
    )


def _runs_table(runs: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr data-month='{_e((r['started_at'] or '')[:7])}'><td class=l>{_e(r['started_at'])}</td>"
        f"<td class=l>{_e(r['project'])}</td><td class=l>{_e(r['run_id'])}</td><td class=l>{_e(r['gpus'])}× "
        f"{_e(r['gpu'])}</td><td>{format_run_hours(r['hours'])}</td><td>{format_usd(r['cost_usd'])}</td>"
        f"<td>{_pct(r['gpu_util_mean_pct'])}</td><td>{format_run_hours(r['planned_hours'])}</td></tr>"
        for r in runs
    )
    return (
        "<table><tr>"
        + _th(N_("started (UTC)"), N_("project"), N_("run"), N_("GPU"), left=True)
        + _th(N_("hours"), N_("cost"), N_("busy"), N_("planned"))
        + f"</tr>{rows}</table>"
    )


def _planned_table(runs: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td class=l>{_e(p['run_id'])}</td><td class=l>{_e(p['task'])}</td>"
        f"<td class=l>{_e(p['gpu'])}</td>"
        f"<td>{format_run_hours(p['planned_hours'])}</td><td>{format_run_hours(p['actual_hours'])}</td>"
        f"<td>{_ratio(p['hours_ratio'])}</td>"
        f"<td>{format_usd(p['planned_cost_usd'])}</td><td>{format_usd(p['actual_cost_usd'])}</td></tr>"
        for p in runs
    )
    return (
        "<table><tr>"
        + _th(N_("run"), N_("task"), N_("GPU"), left=True)
        + _th(N_("planned"), N_("actual"), N_("ratio"), N_("planned cost"), N_("actual cost"))
        + f"</tr>{rows}</table>"
    )


def _notes(section: dict[str, Any] | None) -> str:
    if section is None:
        return ""
    parts = [_("rests on: {what}").format(what=_e(x)) for x in section.get("rests_on", [])]
    parts += [_("missing: {what}").format(what=_e(x)) for x in section.get("missing", [])]
    return "".join(f"<p class=muted>{p}</p>" for p in parts)


def _body(r: dict[str, Any], chart_ids: list[str]) -> str:
    w, s, u, i = r["window"], r["spend"], r["utilization"], r["idle"]
    charts = "".join(f"<div id={c} class=chart></div>" for c in chart_ids)
    findings = "".join(f"<li>{_e(f)}</li>" for f in r["findings"]) or f"<li>{_('none')}</li>"
    title = (
        _("gpuwise report: project {project}").format(project=_e(w["project"]))
        if w["project"]
        else _("gpuwise report")
    )
    read = _e(", ".join(f"{k} = {v}" for k, v in r["inputs"].items() if v is not None))
    out = [
        f"<h1>{title}</h1>",
        "<p class=muted>"
        + _("{since} .. {until} (UTC). Read: {inputs}").format(
            since=_e(w["since"]), until=_e(w["until"]), inputs=read
        )
        + "</p>",
        f"<h2>{_('Findings')}</h2><ul>{findings}</ul>{charts}",
    ]
    if s is not None:
        t = s["totals"]
        out.append(
            f"<h2>{_('Spend')}</h2><p>"
            + _("{cost} over {runs} run(s), {hours} GPU-h, busy {busy}.").format(
                cost=format_usd(t["cost_usd"]),
                runs=t["runs"],
                hours=_num(t["gpu_hours"]),
                busy=_pct(t["util_mean_pct"]),
            )
            + f"</p>{_notes(s)}<div class=grid>"
            + "".join(_group_table(k, s[f"by_{k}"]) for k in ("project", "gpu", "provider", "month"))
            + "</div>"
        )
    if u is not None:
        out.append(
            f"<h2>{_('GPU time (monitor samples)')}</h2><p>"
            + _(
                "{hours} GPU-h sampled, busy {busy} of those with a reading; idle {idle} GPU-h; "
                "no reading {unknown} GPU-h; machine {machine} h, {cost}."
            ).format(
                hours=_num(u["gpu_hours"]),
                busy=_pct(u["util_mean_pct"]),
                idle=_num(u["idle_gpu_hours"]),
                unknown=_num(u["unknown_util_gpu_hours"]),
                machine=_num(u["machine_hours"]),
                cost=format_usd(u["machine_cost_usd"]),
            )
            + f"</p>{_notes(u)}"
        )
    saved = _("unknown") if i["saved_usd"] is None else format_usd(i["saved_usd"])
    out.append(
        f"<h2>{_('Idle stops')}</h2><p>"
        + _("{stops} stop(s), {hours} h off, saved {saved}.").format(
            stops=_e(i["stops"]), hours=_num(i["hours_off"]), saved=saved
        )
        + "</p>"
    )
    out.append(_notes(i) + "".join(f"<p class=muted>{_e(a)}</p>" for a in i["assumptions"]))
    months = sorted({(x["started_at"] or "")[:7] for x in r["costliest_runs"]} - {""})
    options = "".join(f"<option>{_e(m)}</option>" for m in months)
    out.append(
        f"<h2>{_('Costliest runs')}</h2><p><label>{_('Month:')} <select onchange='filterMonth(this.value)'>"
        f"<option value=''>{_('all')}</option>{options}</select></label></p>"
        + _runs_table(r["costliest_runs"])
    )
    pva = r["planned_vs_actual"]
    out.append(f"<h2>{_('Planned vs actual')}</h2>{_notes(pva)}{_planned_table(pva['runs'])}")
    return "".join(out)


def render_report_html(report: dict[str, Any], importer: PlotlyImporter = import_plotly) -> str:
    """The whole page from the report's JSON document."""
    go = require_plotly(importer)
    from plotly.offline import get_plotlyjs

    figures = _figures(report, go)
    packed = base64.b64encode(gzip.compress(get_plotlyjs().encode("utf-8"), 9, mtime=0)).decode("ascii")
    data = json.dumps(figures).replace("</", "<\\/")
    return (
        f"<!DOCTYPE html>\n<html lang={'zh-CN' if language() == 'zh' else 'en'}><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>{_('gpuwise report')}</title><style>{_CSS}</style></head>"
        f"<body>{_body(report, list(figures))}"
        f"<script id=report-figures type=application/json>{data}</script>"
        f"<script id=plotly-gz type=application/octet-stream>{packed}</script>"
        f"<script>{_LOADER}</script></body></html>\n"
    )
