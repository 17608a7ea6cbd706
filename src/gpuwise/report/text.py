"""`gpuwise report` as text lines (the CLI prints them). Pure: the report's JSON document in, lines out."""

from __future__ import annotations

from typing import Any

from gpuwise.plan.currency import money as format_usd  # USD unless report --currency says
from gpuwise.units import format_run_hours


def _pct(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.0f} %"


def _h(x: float | None) -> str:
    return "unknown" if x is None else f"{x:,.1f}"


def _group_lines(title: str, groups: list[dict[str, Any]]) -> list[str]:
    lines = [f"  by {title}:"]
    for g in groups:
        unknown = f" (+{g['runs_without_cost']} without cost)" if g["runs_without_cost"] else ""
        lines.append(
            f"    {g['key']}: {g['runs']} run(s), {_h(g['gpu_hours'])} GPU-h, "
            f"{format_usd(g['cost_usd'])}{unknown}, "
            f"busy {_pct(g['util_mean_pct'])}"
        )
    return lines


def _spend(s: dict[str, Any] | None) -> list[str]:
    if s is None:
        return ["Spend: no run ledger yet (`gpuwise run` records one row per run)."]
    t = s["totals"]
    lines = [
        f"Spend: {format_usd(t['cost_usd'])} over {t['runs']} run(s), {_h(t['gpu_hours'])} GPU-h, "
        f"busy {_pct(t['util_mean_pct'])}"
        + (f"; {t['runs_without_cost']} run(s) without a cost" if t["runs_without_cost"] else "")
    ]
    if t["runs"]:
        for by in ("project", "gpu", "provider", "month"):
            lines += _group_lines(by, s[f"by_{by}"])
    return lines


def _utilization(u: dict[str, Any] | None) -> list[str]:
    if u is None:
        return ["GPU time: no monitor history (`gpuwise monitor`, `exporter` or `idle run` record it)."]
    money = (
        ""
        if u["machine_cost_usd"] is None
        else f" ≈ {format_usd(u['machine_cost_usd'])} at the configured price"
    )
    lines = [
        f"GPU time sampled: {_h(u['gpu_hours'])} GPU-h on {len(u['by_gpu'])} GPU(s), "
        f"busy {_pct(u['util_mean_pct'])} of those with a reading; idle {_h(u['idle_gpu_hours'])} GPU-h; "
        f"no reading {_h(u['unknown_util_gpu_hours'])}"
        f" GPU-h; machine {_h(u['machine_hours'])} h{money}"
    ]
    for g in u["by_gpu"]:
        lines.append(
            f"  GPU {g['gpu']} {g['name'] or ''}: {_h(g['gpu_hours'])} GPU-h, "
            f"busy {_pct(g['util_mean_pct'])}, "
            f"idle {_h(g['idle_gpu_hours'])} h"
        )
    return lines


def _idle(i: dict[str, Any]) -> list[str]:
    if not i["found"]:
        return ["Idle stops: the idle stopper has not run here (`gpuwise idle install`)."]
    saved = "unknown (no price)" if i["saved_usd"] is None else format_usd(i["saved_usd"])
    return [f"Idle stops: {i['stops']} stop(s), {_h(i['hours_off'])} h off, saved {saved}"]


def render_text(r: dict[str, Any]) -> list[str]:
    w = r["window"]
    lines = [
        f"gpuwise report {w['since'][:16]} .. {w['until'][:16]} UTC"
        + (f", project {w['project']}" if w["project"] else "")
    ]
    lines += _spend(r["spend"]) + _utilization(r["utilization"]) + _idle(r["idle"])
    if r["costliest_runs"]:
        lines.append("Costliest runs:")
        for run in r["costliest_runs"][:5]:
            lines.append(
                f"  {format_usd(run['cost_usd'])}  {run['project'] or '-'}  {run['run_id']}  "
                f"{format_run_hours(run['hours'])}  busy {_pct(run['gpu_util_mean_pct'])}"
            )
    pva = r["planned_vs_actual"]
    if pva["by_gpu_task"]:
        lines.append("Planned vs actual hours:")
        for g in pva["by_gpu_task"]:
            lines.append(
                f"  {g['task']} on {g['gpu']}: {g['hours_ratio_median']:.2f}× planned (median of {g['runs']})"
            )
    if r["findings"]:
        lines.append("Findings:")
        lines += [f"  - {f}" for f in r["findings"]]
    return lines
