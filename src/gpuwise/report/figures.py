"""The figures of `gpuwise report`, each a pure function of rows (gpuwise.report.rows).

GPU-hours from monitor samples: each sample stands for one sampling interval of its GPU, the GPU's typical
interval being the median, over hour buckets with two samples or more, of (last - first) / (samples - 1).
A bucket holds at most an hour. Time without samples (the monitor not running) is not counted at all; time
with samples but no utilisation reading (a lost GPU, a field not supported) is counted as GPU-hours of
unknown utilisation: it never enters the mean, so unknown never reads as 0 %.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from gpuwise.monitor.rollup import BUCKET_S, IDLE_UTIL_PCT
from gpuwise.report.rows import RunRow, SampleBucket


def r4(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def sum_known(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known (never a silent 0)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


# ------------------------------------------------------------------------------------ monitor samples


def sample_intervals(buckets: Iterable[SampleBucket]) -> dict[int, float | None]:
    """Each GPU's typical sampling interval in seconds (None when no bucket has two samples)."""
    spans: dict[int, list[float]] = {}
    for b in buckets:
        spans.setdefault(b.gpu, [])
        if b.samples >= 2 and b.last_s > b.first_s:
            spans[b.gpu].append((b.last_s - b.first_s) / (b.samples - 1))
    return {gpu: statistics.median(s) if s else None for gpu, s in spans.items()}


class _Acc:
    """Seconds covered, with a known reading, idle, and utilisation x known seconds."""

    def __init__(self) -> None:
        self.covered = 0.0
        self.known = 0.0
        self.idle = 0.0
        self.util_s = 0.0

    def add(self, b: SampleBucket, interval: float) -> None:
        covered = min(float(BUCKET_S), b.samples * interval)
        self.covered += covered
        self.known += covered * b.known / b.samples
        self.idle += covered * b.idle / b.samples
        if b.known:
            self.util_s += b.util_sum_pct / b.known * covered * b.known / b.samples

    def json(self) -> dict[str, Any]:
        return {
            "gpu_hours": r4(self.covered / 3600),
            "unknown_util_gpu_hours": r4((self.covered - self.known) / 3600),
            "util_mean_pct": round(self.util_s / self.known, 2) if self.known > 0 else None,
            "idle_gpu_hours": r4(self.idle / 3600),
        }


def utilization(buckets: Sequence[SampleBucket], price_usd_per_hour: float | None) -> dict[str, Any]:
    """GPU-hours, the mean utilisation of those with a reading, idle GPU-hours (utilisation at or below
    IDLE_UTIL_PCT), machine hours (any GPU sampled) and, with a price, what those hours cost."""
    intervals = sample_intervals(buckets)
    total, by_gpu, by_day = _Acc(), dict[int, _Acc](), dict[str, _Acc]()
    names: dict[int, str] = {}
    machine: dict[int, float] = {}  # bucket -> the most any GPU covered in it
    no_interval = 0
    for b in buckets:
        interval = intervals.get(b.gpu)
        if interval is None:
            no_interval += b.samples
            continue
        day = datetime.fromtimestamp(b.bucket * BUCKET_S, UTC).strftime("%Y-%m-%d")
        for acc in (total, by_gpu.setdefault(b.gpu, _Acc()), by_day.setdefault(day, _Acc())):
            acc.add(b, interval)
        machine[b.bucket] = max(machine.get(b.bucket, 0.0), min(float(BUCKET_S), b.samples * interval))
        if b.name:
            names[b.gpu] = b.name
    machine_h = sum(machine.values()) / 3600
    missing = []
    if no_interval:
        missing.append(
            f"{no_interval} sample(s) on GPUs sampled once an hour or less: their time is not known"
        )
    return {
        **total.json(),
        "machine_hours": r4(machine_h),
        "machine_cost_usd": r4(machine_h * price_usd_per_hour) if price_usd_per_hour is not None else None,
        "idle_util_pct": IDLE_UTIL_PCT,
        "by_gpu": [
            {"gpu": g, "name": names.get(g), "sample_interval_s": r4(intervals.get(g)), **a.json()}
            for g, a in sorted(by_gpu.items())
        ],
        "by_day": [{"day": d, **a.json()} for d, a in sorted(by_day.items())],
        "missing": missing,
    }


# ---------------------------------------------------------------------------------------- ledger runs


def _group_key(by: str) -> Callable[[RunRow], str]:
    keys: dict[str, Callable[[RunRow], str]] = {
        "project": lambda r: r.project or "(none)",
        "gpu": lambda r: f"{r.gpus}× {r.gpu}" if r.gpu and r.gpus else (r.gpu or "(unknown)"),
        "provider": lambda r: r.provider or "(unknown)",
        "month": lambda r: datetime.fromtimestamp(r.started_at, UTC).strftime("%Y-%m"),
    }
    return keys[by]


def run_util_pct(runs: Iterable[RunRow]) -> float | None:
    """Mean utilisation over runs, weighted by their GPU-hours; runs without samples are left out."""
    pairs = [(r.gpu_hours, r.gpu_util_mean_pct) for r in runs]
    known = [(h, u) for h, u in pairs if h is not None and u is not None and h > 0]
    weight = sum(h for h, _ in known)
    return round(sum(h * u for h, u in known) / weight, 2) if weight > 0 else None


def run_totals(runs: Sequence[RunRow]) -> dict[str, Any]:
    return {
        "runs": len(runs),
        "hours": r4(sum_known(r.hours for r in runs)),
        "gpu_hours": r4(sum_known(r.gpu_hours for r in runs)),
        "cost_usd": r4(sum_known(r.cost_usd for r in runs)),
        "runs_without_cost": sum(1 for r in runs if r.cost_usd is None),
        "util_mean_pct": run_util_pct(runs),
        "runs_without_util": sum(1 for r in runs if r.gpu_util_mean_pct is None),
    }


def spend(runs: Sequence[RunRow]) -> dict[str, Any]:
    """Totals of the ledger's runs, and by project, GPU, provider and month (of the start)."""
    out: dict[str, Any] = {"totals": run_totals(runs)}
    for by in ("project", "gpu", "provider", "month"):
        groups: dict[str, list[RunRow]] = {}
        key = _group_key(by)
        for r in runs:
            groups.setdefault(key(r), []).append(r)
        out[f"by_{by}"] = [{"key": k, **run_totals(v)} for k, v in sorted(groups.items())]
    out["by_user"] = None  # `gpuwise run` records no user
    return out


def run_json(r: RunRow) -> dict[str, Any]:
    p = r.planned
    return {
        "run_id": r.run_id,
        "project": r.project,
        "tags": list(r.tags),
        "command": r.command,
        "started_at": iso(r.started_at),
        "ended_at": iso(r.ended_at),
        "exit_code": r.exit_code,
        "gpu": r.gpu,
        "gpus": r.gpus,
        "provider": r.provider,
        "instance_type": r.instance_type,
        "hours": r4(r.hours),
        "gpu_hours": r4(r.gpu_hours),
        "cost_usd": r4(r.cost_usd),
        "gpu_util_mean_pct": None if r.gpu_util_mean_pct is None else round(r.gpu_util_mean_pct, 2),
        "preemptions": r.preemptions,
        "hints": dict(r.hints),
        "planned_hours": None if p is None else r4(p.planned_hours),
        "planned_cost_usd": None if p is None else r4(p.planned_cost_usd),
    }


def costliest(runs: Sequence[RunRow], n: int = 10) -> list[dict[str, Any]]:
    priced = sorted(
        (r for r in runs if r.cost_usd is not None), key=lambda r: (-(r.cost_usd or 0), r.started_at)
    )
    return [run_json(r) for r in priced[:n]]


def _ratio(actual: float | None, planned: float | None) -> float | None:
    return None if actual is None or planned is None or planned <= 0 else actual / planned


def planned_vs_actual(runs: Sequence[RunRow]) -> dict[str, Any]:
    """Each finished run launched from a plan: actual / planned hours and cost, and per (GPU, task) the
    median hours ratio (what `--save-calibration` writes)."""
    rows = []
    groups: dict[tuple[str, str], list[float]] = {}
    cost_groups: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        p = r.planned
        if p is None or r.hours is None:
            continue
        hours_ratio = _ratio(r.hours, p.planned_hours)
        cost_ratio = _ratio(r.cost_usd, p.planned_cost_usd)
        key = (p.gpu, p.task or "(unknown)")
        if hours_ratio is not None:
            groups.setdefault(key, []).append(hours_ratio)
        if cost_ratio is not None:
            cost_groups.setdefault(key, []).append(cost_ratio)
        rows.append(
            {
                "run_id": r.run_id,
                "project": r.project,
                "plan_file": p.plan_file,
                "pick": p.pick,
                "workload": p.workload,
                "task": p.task,
                "gpu": p.gpu,
                "gpus": p.gpus,
                "planned_hours": r4(p.planned_hours),
                "actual_hours": r4(r.hours),
                "hours_ratio": r4(hours_ratio),
                "planned_cost_usd": r4(p.planned_cost_usd),
                "actual_cost_usd": r4(r.cost_usd),
                "cost_ratio": r4(cost_ratio),
            }
        )
    by = [
        {
            "gpu": gpu,
            "task": task,
            "runs": len(ratios),
            "hours_ratio_median": r4(statistics.median(ratios)),
            "cost_ratio_median": r4(statistics.median(cost_groups[(gpu, task)]))
            if cost_groups.get((gpu, task))
            else None,
        }
        for (gpu, task), ratios in sorted(groups.items())
    ]
    return {"runs": rows, "by_gpu_task": by}
