"""The rows `gpuwise report` rests on, as plain data: hour buckets of monitor samples, ledger runs (with the
plan each came from, when recorded), monitor hints and the idle stopper's stops. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuwise.units import RunSpan


@dataclass(frozen=True)
class SampleBucket:
    """One GPU's monitor samples within one hour bucket (`bucket` = floor(ts / BUCKET_S), the hour of
    gpuwise.monitor.rollup: 6 M rows of 90 days become ~17 k buckets)."""

    gpu: int
    bucket: int
    samples: int  # every row, lost ones included
    known: int  # rows with a utilisation reading (not lost, util not null)
    util_sum_pct: float  # sum of those readings
    idle: int  # known rows at or below IDLE_UTIL_PCT (gpuwise.monitor.rollup)
    first_s: float
    last_s: float
    name: str | None


@dataclass(frozen=True)
class Planned:
    plan_file: str
    pick: str
    workload: str | None
    task: str | None
    gpu: str
    gpus: int
    planned_hours: float
    planned_cost_usd: float | None


@dataclass(frozen=True)
class RunRow(RunSpan):
    """A `run_ledger` row, read-only, with what the report derives from it."""

    ledger_id: int
    run_id: str
    project: str | None
    tags: tuple[str, ...]
    command: str
    started_at: float
    ended_at: float | None
    exit_code: int | None
    gpu: str | None
    gpus: int | None
    provider: str | None
    instance_type: str | None
    price_usd_per_hour: float | None
    gpu_util_mean_pct: float | None
    preemptions: int
    planned: Planned | None = None
    hints: dict[str, int] = field(default_factory=dict)  # monitor hint id -> times raised during the run


@dataclass(frozen=True)
class IdleStop:
    at: float
    reason: str | None
    idle_s: float | None


@dataclass(frozen=True)
class History:
    """Everything read for one report. A part that is absent is None (not recorded), not empty."""

    db_path: str | None
    buckets: list[SampleBucket] | None  # None: no monitor table in the file (or no file)
    sample_rows: int
    runs: list[RunRow] | None  # None: no ledger table
    projects: list[str]  # every project in the ledger, all time (for "unknown project" messages)
    idle_state_path: str | None
    idle_state: dict[str, Any] | None  # the idle daemon's cleaned state file, None when absent
    first_record_s: float | None = None  # the oldest sample or run in the whole file

    def empty(self, since: float, until: float) -> bool:
        """Nothing recorded in [since, until): no sample, no run, no stop of the idle stopper."""
        stops = (self.idle_state or {}).get("stops", [])
        return not self.sample_rows and not self.runs and not any(since <= s["at"] < until for s in stops)
