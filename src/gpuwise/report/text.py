"""`gpuwise report` as text lines (the CLI prints them). Pure: the report's JSON document in, lines out."""

from __future__ import annotations

from typing import Any

from gpuwise.locale import N_, _
from gpuwise.plan.currency import money as format_usd  # USD unless report --currency says
from gpuwise.units import format_run_hours

# the grouping keys of the ledger's totals, as the text names them (the JSON keys stay by_project, …)
GROUP_TITLES = {"project": N_("project"), "gpu": N_("gpu"), "provider": N_("provider"), "month": N_("month")}


def _pct(x: float | None) -> str:
    return _("unknown") if x is None else f"{x:.0f} %"


def _h(x: float | None) -> str:
    return _("unknown") if x is None else f"{x:,.1f}"


def _group_lines(title: str, groups: list[dict[str, Any]]) -> list[str]:
    lines = ["  " + _("by {title}:").format(title=_(GROUP_TITLES.get(title, title)))]
    for g in groups:
        unknown = _(" (+{n} without cost)").format(n=g["runs_without_cost"]) if g["runs_without_cost"] else ""
        lines.append(
            "    "
            + _("{key}: {runs} run(s), {hours} GPU-h, {cost}{unknown}, busy {busy}").format(
                key=g["key"],
                runs=g["runs"],
                hours=_h(g["gpu_hours"]),
                cost=format_usd(g["cost_usd"]),
                unknown=unknown,
                busy=_pct(g["util_mean_pct"]),
            )
        )
    return lines


def _spend(s: dict[str, Any] | None) -> list[str]:
    if s is None:
        return [_("Spend: no run ledger yet (`gpuwise run` records one row per run).")]
    t = s["totals"]
    lines = [
        _("Spend: {cost} over {runs} run(s), {hours} GPU-h, busy {busy}").format(
            cost=format_usd(t["cost_usd"]),
            runs=t["runs"],
            hours=_h(t["gpu_hours"]),
            busy=_pct(t["util_mean_pct"]),
        )
        + (
            _("; {n} run(s) without a cost").format(n=t["runs_without_cost"])
            if t["runs_without_cost"]
            else ""
        )
    ]
    if t["runs"]:
        for by in ("project", "gpu", "provider", "month"):
            lines += _group_lines(by, s[f"by_{by}"])
    return lines


def _utilization(u: dict[str, Any] | None) -> list[str]:
    if u is None:
        return [_("GPU time: no monitor history (`gpuwise monitor`, `exporter` or `idle run` record it).")]
    money = (
        ""
        if u["machine_cost_usd"] is None
        else _(" ≈ {cost} at the configured price").format(cost=format_usd(u["machine_cost_usd"]))
    )
    lines = [
        _(
            "GPU time sampled: {hours} GPU-h on {gpus} GPU(s), busy {busy} of those with a reading; "
            "idle {idle} GPU-h; no reading {unknown} GPU-h; machine {machine} h{money}"
        ).format(
            hours=_h(u["gpu_hours"]),
            gpus=len(u["by_gpu"]),
            busy=_pct(u["util_mean_pct"]),
            idle=_h(u["idle_gpu_hours"]),
            unknown=_h(u["unknown_util_gpu_hours"]),
            machine=_h(u["machine_hours"]),
            money=money,
        )
    ]
    for g in u["by_gpu"]:
        lines.append(
            "  "
            + _("GPU {gpu} {name}: {hours} GPU-h, busy {busy}, idle {idle} h").format(
                gpu=g["gpu"],
                name=g["name"] or "",
                hours=_h(g["gpu_hours"]),
                busy=_pct(g["util_mean_pct"]),
                idle=_h(g["idle_gpu_hours"]),
            )
        )
    return lines


def _idle(i: dict[str, Any]) -> list[str]:
    if not i["found"]:
        return [_("Idle stops: the idle stopper has not run here (`gpuwise idle install`).")]
    saved = _("unknown (no price)") if i["saved_usd"] is None else format_usd(i["saved_usd"])
    return [
        _("Idle stops: {stops} stop(s), {hours} h off, saved {saved}").format(
            stops=i["stops"], hours=_h(i["hours_off"]), saved=saved
        )
    ]


def _planned_vs_actual(pva: dict[str, Any]) -> list[str]:
    if not pva["by_gpu_task"]:
        return []
    lines = [_("Planned vs actual hours:")]
    for g in pva["by_gpu_task"]:
        lines.append(
            "  "
            + _("{task} on {gpu}: {ratio}× planned (median of {runs})").format(
                task=g["task"], gpu=g["gpu"], ratio=f"{g['hours_ratio_median']:.2f}", runs=g["runs"]
            )
        )
    return lines


def render_text(r: dict[str, Any]) -> list[str]:
    w = r["window"]
    lines = [
        _("gpuwise report {since} .. {until} UTC").format(since=w["since"][:16], until=w["until"][:16])
        + (_(", project {project}").format(project=w["project"]) if w["project"] else "")
    ]
    lines += _spend(r["spend"]) + _utilization(r["utilization"]) + _idle(r["idle"])
    if r["costliest_runs"]:
        lines.append(_("Costliest runs:"))
        for run in r["costliest_runs"][:5]:
            lines.append(
                "  "
                + _("{cost}  {project}  {run_id}  {hours}  busy {busy}").format(
                    cost=format_usd(run["cost_usd"]),
                    project=run["project"] or "-",
                    run_id=run["run_id"],
                    hours=format_run_hours(run["hours"]),
                    busy=_pct(run["gpu_util_mean_pct"]),
                )
            )
    lines += _planned_vs_actual(r["planned_vs_actual"])
    if r["findings"]:
        lines.append(_("Findings:"))
        lines += [f"  - {f}" for f in r["findings"]]
    return lines
