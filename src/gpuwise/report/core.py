"""`gpuwise report` as data: a `History` (what was read) in, the report's JSON document out. Pure.

Each section names the data it rests on (`rests_on`) and what it lacks (`missing`); a figure that cannot be
known from what was recorded is null, never 0. `calibration()` turns planned-vs-actual runs into the
calibration file `estimate --calibration` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuwise.idle.state import compute_savings
from gpuwise.locale import N_, _
from gpuwise.report.figures import (
    costliest,
    iso,
    planned_vs_actual,
    r4,
    run_totals,
    spend,
    utilization,
)
from gpuwise.report.rows import History, RunRow

SCHEMA_VERSION = 1
NOTHING_YET = N_("nothing recorded yet; start `gpuwise monitor` or `gpuwise run`")  # shown through _()
LOW_UTIL_PCT = 50.0  # below this mean utilisation, a project's runs get a finding

# monitor hint ids (gpuwise.monitor.hints) in plain words (translated where a finding names them)
HINT_WORDS = {
    "input_bound": N_("input-bound (the GPU waited while the host CPU was saturated)"),
    "throttled": N_("throttled (clocks held down by power or heat)"),
    "memory_nearly_full": N_("memory nearly full"),
    "pcie_below_max": N_("PCIe link below its maximum"),
    "encoder_bound": N_("video encoder/decoder-bound"),
    "gpu_idle_while_peers_busy": N_("one GPU idle while its peers worked"),
}


def _money(x: float) -> str:
    from gpuwise.plan.currency import cents  # dollars unless `report --currency` shows another currency

    return cents(x)


def _idle(history: History, since: float, until: float, price: float | None) -> dict[str, Any]:
    state = history.idle_state
    if state is None:
        return {
            "found": False,
            "stops": None,
            "counted_stops": None,
            "hours_off": None,
            "saved_usd": None,
            "price_usd_per_hour": price,
            "stop_list": [],
            "assumptions": [],
            "rests_on": [],
            "missing": ["no idle stopper state file: `gpuwise idle run` has not run on this machine"],
        }
    if price is None and isinstance(state.get("price_usd_per_hour"), int | float):
        price = float(state["price_usd_per_hour"])
    stops = [s for s in state.get("stops", []) if since <= float(s["at"]) < until]
    savings = compute_savings({**state, "stops": stops}, price)
    real = [s for s in stops if s.get("ok") and not s.get("dry_run")]
    missing = [
        "the daemon keeps its last decision and its stops, not every decision: idle time it saw but did not "
        "stop for is counted from monitor samples (utilization.idle_gpu_hours) only"
    ]
    if price is None:
        missing.append(
            "no price: set [machine] price_usd_per_hour in config.toml to turn hours off into money"
        )
    return {
        "found": True,
        "stops": savings.stops,
        "counted_stops": savings.counted_stops,
        "hours_off": r4(savings.hours_off),
        "saved_usd": savings.saved_usd,
        "price_usd_per_hour": price,
        "stop_list": [
            {"at": iso(float(s["at"])), "reason": s.get("reason"), "idle_min": _minutes(s.get("idle_s"))}
            for s in real
        ],
        "assumptions": list(savings.assumptions),
        "rests_on": [f"idle stopper state file {history.idle_state_path}"],
        "missing": missing,
    }


def _minutes(value: object) -> float | None:
    return (
        round(float(value) / 60, 1)
        if isinstance(value, int | float) and not isinstance(value, bool)
        else None
    )


def _hint_text(hints: dict[str, int]) -> str:
    if not hints:
        return ""
    top = sorted(hints.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    words = ", ".join(f"{_(HINT_WORDS[k]) if k in HINT_WORDS else k} ({n}×)" for k, n in top)
    return _("; monitor hints during them: {hints}").format(hints=words)


def _project_findings(runs: Sequence[RunRow]) -> list[str]:
    out = []
    projects: dict[str, list[RunRow]] = {}
    for r in runs:
        projects.setdefault(r.project or "(none)", []).append(r)
    for name, rs in sorted(projects.items()):
        t = run_totals(rs)
        util = t["util_mean_pct"]
        if util is None or util >= LOW_UTIL_PCT:
            continue
        hints: dict[str, int] = {}
        for r in rs:
            for k, n in r.hints.items():
                hints[k] = hints.get(k, 0) + n
        idle_cost = sum(
            (r.cost_usd or 0.0) * (1 - (r.gpu_util_mean_pct or 0.0) / 100)
            for r in rs
            if r.gpu_util_mean_pct is not None and r.cost_usd is not None
        )
        money = (
            _(" ({cost} of their cost paid for GPU time not used)").format(cost=_money(idle_cost))
            if idle_cost > 0
            else ""
        )
        out.append(
            _("runs of project {name} used {util} % of their GPU-hours{money}{hints}").format(
                name=name, util=f"{util:.0f}", money=money, hints=_hint_text(hints)
            )
        )
    return out


def findings(report: dict[str, Any], runs: Sequence[RunRow]) -> list[str]:
    """What the figures say, in plain words, most costly first."""
    out = _project_findings(runs)
    for g in report["planned_vs_actual"]["by_gpu_task"]:
        ratio = g["hours_ratio_median"]
        if ratio is not None and abs(ratio - 1) >= 0.1:
            out.append(
                _(
                    "{task} runs on {gpu} took {ratio}× the planned hours (median of {runs} run(s)): "
                    "`gpuwise report --save-calibration FILE` then `estimate --calibration FILE`"
                ).format(task=g["task"], gpu=g["gpu"], ratio=f"{ratio:.2f}", runs=g["runs"])
            )
    u = report["utilization"]
    if u is not None and u["gpu_hours"]:
        idle_share = u["idle_gpu_hours"] / u["gpu_hours"]
        if idle_share >= 0.2:
            out.append(
                _(
                    "{idle} of {total} sampled GPU-hours ({share}) were idle "
                    "(utilization at or below {pct} %)"
                ).format(
                    idle=f"{u['idle_gpu_hours']:,.1f}",
                    total=f"{u['gpu_hours']:,.1f}",
                    share=f"{idle_share:.0%}",
                    pct=f"{u['idle_util_pct']:.0f}",
                )
                + ("" if report["idle"]["found"] else _(": `gpuwise idle install` stops a machine left idle"))
            )
        if u["unknown_util_gpu_hours"]:
            out.append(
                _("{hours} sampled GPU-hours have no utilization reading (unknown)").format(
                    hours=f"{u['unknown_util_gpu_hours']:,.2f}"
                )
            )
    unsampled = report["spend"]["totals"]["runs_without_util"] if report["spend"] else 0
    if unsampled:
        out.append(
            _(
                "{n} run(s) have no utilization: nothing recorded samples while they ran "
                "(`gpuwise monitor`, `gpuwise exporter` or `gpuwise idle run` record them)"
            ).format(n=unsampled)
        )
    idle = report["idle"]
    if idle["found"] and idle["stops"]:
        saved = (
            "" if idle["saved_usd"] is None else _(", saving {cost}").format(cost=_money(idle["saved_usd"]))
        )
        out.append(
            _("gpuwise idle stopped the machine {stops} time(s): {hours} h off{saved}").format(
                stops=idle["stops"], hours=f"{idle['hours_off']:,.1f}", saved=saved
            )
        )
    return out


def _inputs(history: History, price: float | None, price_source: str | None) -> dict[str, Any]:
    return {
        "database": history.db_path,
        "monitor_samples": history.sample_rows if history.buckets is not None else None,
        "ledger_runs": None if history.runs is None else len(history.runs),
        "runs_with_plan": None if history.runs is None else sum(1 for r in history.runs if r.planned),
        "idle_state_file": history.idle_state_path if history.idle_state is not None else None,
        "price_usd_per_hour": price,
        "price_source": price_source if price is not None else None,
        "first_record": iso(history.first_record_s),
    }


def build_report(
    history: History,
    *,
    since: float,
    until: float,
    project: str | None,
    price_usd_per_hour: float | None,
    price_source: str | None = None,
) -> dict[str, Any]:
    """The whole report (`gpuwise report --json`)."""
    runs = history.runs or []
    util = None if history.buckets is None else utilization(history.buckets, price_usd_per_hour)
    if util is not None:
        util["rests_on"] = [f"{history.sample_rows:,} monitor samples in {history.db_path}"]
        if project is not None:
            util["rests_on"].append(f"only samples taken while project {project}'s runs ran")
        if price_usd_per_hour is None:
            util["missing"].append("no [machine] price_usd_per_hour: machine hours are not turned into money")
    spent = None if history.runs is None else spend(runs)
    if spent is not None:
        spent["rests_on"] = [f"{len(runs)} run(s) in the ledger of {history.db_path}"]
        spent["missing"] = ["per-user totals: `gpuwise run` records no user"]
        if spent["totals"]["runs_without_cost"]:
            spent["missing"].append(
                f"{spent['totals']['runs_without_cost']} run(s) without a cost "
                "(no [machine] price when they ran, "
                "or not finished)"
            )
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "window": {"since": iso(since), "until": iso(until), "project": project},
        "nothing_recorded": history.empty(since, until),
        "inputs": _inputs(history, price_usd_per_hour, price_source),
        "spend": spent,
        "utilization": util,
        "idle": _idle(history, since, until, price_usd_per_hour),
        "costliest_runs": costliest(runs),
        "planned_vs_actual": {
            **planned_vs_actual(runs),
            "rests_on": ["runs launched with `gpuwise run --plan PLAN.json`"],
            "missing": []
            if any(r.planned for r in runs)
            else ["no run in the window was launched with --plan"],
        },
    }
    report["findings"] = findings(report, runs)
    report["sources"] = _sources(report)
    return report


_ABSENT = {
    "spend": "no run ledger: `gpuwise run` records one row per run",
    "utilization": "no monitor history: `gpuwise monitor`, `exporter` or `idle run` record samples",
}


def _sources(report: dict[str, Any]) -> list[dict[str, Any]]:
    """What each section rests on and what it lacks, as one list."""
    out = []
    for name in ("spend", "utilization", "idle", "planned_vs_actual"):
        section = report[name]
        if section is None:
            out.append({"section": name, "rests_on": [], "missing": [_ABSENT[name]]})
        else:
            out.append({"section": name, "rests_on": section["rests_on"], "missing": section["missing"]})
    return out


def calibration(report: dict[str, Any], created_at: str) -> dict[str, Any] | None:
    """The `gpuwise-calibration` file from the report's planned-vs-actual runs (None when there are none)."""
    groups = [g for g in report["planned_vs_actual"]["by_gpu_task"] if g["task"] != "(unknown)"]
    if not groups:
        return None
    window = report["window"]
    return {
        "kind": "gpuwise-calibration",
        "version": 1,
        "created_at": created_at,
        "source": f"gpuwise report: {sum(g['runs'] for g in groups)} runs with a plan, "
        f"{(window['since'] or '')[:10]}..{(window['until'] or '')[:10]}",
        "entries": [
            {
                "gpu": g["gpu"],
                "task": g["task"],
                "hours_ratio": g["hours_ratio_median"],
                "runs": g["runs"],
                "source": f"actual/planned hours, median of {g['runs']} run(s)",
            }
            for g in groups
        ],
    }
