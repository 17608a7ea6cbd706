"""Monitor history: an SQLite store (stdlib sqlite3, WAL) with retention, and a pure summary of it.

`HistoryStore` is the edge (a file at `gpuwise.paths.history_db()` by default); `summarize()` is pure
and turns rows into what `monitor --since 2h` shows. Tables are prefixed `monitor_` because the same
file will also hold the run ledger. Rows older than the retention (7 days by default, `[monitor]
history_retention_days`) are deleted when the store opens and then about once an hour. Opening the store
also makes sure the hourly rollups `gpuwise report` reads are there (monitor/rollup.py): an older history
gets them built once, which takes about 1.2 s per million samples (benchmarks/report_speed.py).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from gpuwise.errors import StorageError
from gpuwise.gpu.sample import Snapshot, value_or_none
from gpuwise.locale import _
from gpuwise.monitor.rollup import IDLE_UTIL_PCT, ensure_rollups, trim_rollups
from gpuwise.sqlitedb import open_db

DEFAULT_RETENTION_S = 7 * 86400
_PRUNE_EVERY_S = 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS monitor_samples (
    ts REAL NOT NULL,
    gpu INTEGER NOT NULL,
    uuid TEXT,
    name TEXT,
    util_gpu_pct REAL,
    util_memory_pct REAL,
    memory_used_bytes INTEGER,
    memory_total_bytes INTEGER,
    power_draw_watts REAL,
    temperature_c REAL,
    sm_clock_mhz REAL,
    lost INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS monitor_samples_ts ON monitor_samples (ts);
CREATE TABLE IF NOT EXISTS monitor_events (
    ts REAL NOT NULL,
    kind TEXT NOT NULL,          -- 'hint' | 'alert'
    gpu INTEGER,
    event_id TEXT NOT NULL,      -- hint id or alert rule id
    state TEXT NOT NULL,         -- hint severity, or 'firing' / 'resolved'
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS monitor_events_ts ON monitor_events (ts);
"""


@dataclass(frozen=True)
class SampleRow:
    ts: float
    gpu: int
    name: str | None
    util_gpu_pct: float | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    power_draw_watts: float | None
    temperature_c: float | None
    lost: bool = False


@dataclass(frozen=True)
class EventRow:
    ts: float
    kind: str
    gpu: int | None
    event_id: str
    state: str
    message: str


class HistoryStore:
    """Append samples and events; read them back by time. Not shared between threads."""

    def __init__(self, path: Path, *, retention_s: float = DEFAULT_RETENTION_S) -> None:
        self.path = path
        self.retention_s = retention_s
        self._last_prune = float("-inf")
        self._db = open_db(
            path,
            _SCHEMA,
            what="history",
            fix=_("set GPUWISE_DATA_DIR to a writable directory, or run with --no-history"),
            synchronous_normal=True,
        )
        try:
            ensure_rollups(self._db)
        except sqlite3.Error as exc:
            self._db.close()
            raise StorageError(
                _("Cannot build the hourly rollups in the history database {path}: {reason}").format(
                    path=path, reason=exc
                ),
                fix=_("set GPUWISE_DATA_DIR to a writable directory, or run with --no-history"),
            ) from exc

    def close(self) -> None:
        self._db.close()

    def add_snapshot(self, snapshot: Snapshot) -> None:
        rows = []
        for s in snapshot.samples:
            rows.append(
                (
                    s.timestamp_s,
                    s.index,
                    value_or_none(s.uuid),
                    value_or_none(s.name),
                    value_or_none(s.util_gpu_pct),
                    value_or_none(s.util_memory_pct),
                    value_or_none(s.memory_used_bytes),
                    value_or_none(s.memory_total_bytes),
                    value_or_none(s.power_draw_watts),
                    value_or_none(s.temperature_c),
                    value_or_none(s.sm_clock_mhz),
                    int(s.lost),
                )
            )
        self._write("INSERT INTO monitor_samples VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)

    def add_event(  # noqa: PLR0917 - one positional per column, in table order
        self, ts: float, kind: str, gpu: int | None, event_id: str, state: str, message: str
    ) -> None:
        self._write(
            "INSERT INTO monitor_events VALUES (?,?,?,?,?,?)", [(ts, kind, gpu, event_id, state, message)]
        )

    def _write(self, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
        try:
            with self._db:
                self._db.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise StorageError(
                _("Cannot write the history database {path}: {reason}").format(path=self.path, reason=exc)
            ) from exc

    def prune(self, now_s: float, *, force: bool = False) -> int:
        """Delete rows older than the retention; cheap to call often (runs at most hourly). The hourly
        rollups follow in the same transaction (the hour the cutoff cuts is recomputed from what is kept)."""
        if not force and now_s - self._last_prune < _PRUNE_EVERY_S:
            return 0
        self._last_prune = now_s
        cutoff = now_s - self.retention_s
        try:
            with self._db:
                n = self._db.execute("DELETE FROM monitor_samples WHERE ts < ?", (cutoff,)).rowcount
                n += self._db.execute("DELETE FROM monitor_events WHERE ts < ?", (cutoff,)).rowcount
                trim_rollups(self._db, cutoff)
        except sqlite3.Error as exc:
            raise StorageError(
                _("Cannot prune the history database {path}: {reason}").format(path=self.path, reason=exc)
            ) from exc
        return n

    def _read(self, sql: str, args: tuple[object, ...]) -> list[Any]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:  # a damaged file, or one locked past the timeout
            raise StorageError(
                _("Cannot read the history database {path}: {reason}").format(path=self.path, reason=exc),
                fix=_(
                    "move the file aside (a new one is started) or set GPUWISE_DATA_DIR to another directory"
                ),
            ) from exc

    def samples(self, since_s: float, until_s: float | None = None) -> list[SampleRow]:
        until = float("inf") if until_s is None else until_s
        cur = self._read(
            "SELECT ts, gpu, name, util_gpu_pct, memory_used_bytes, memory_total_bytes, power_draw_watts,"
            " temperature_c, lost FROM monitor_samples WHERE ts >= ? AND ts <= ? ORDER BY ts, gpu",
            (since_s, until),
        )
        return [
            SampleRow(
                ts=r[0],
                gpu=r[1],
                name=r[2],
                util_gpu_pct=r[3],
                memory_used_bytes=r[4],
                memory_total_bytes=r[5],
                power_draw_watts=r[6],
                temperature_c=r[7],
                lost=bool(r[8]),
            )
            for r in cur
        ]

    def events(self, since_s: float, until_s: float | None = None) -> list[EventRow]:
        until = float("inf") if until_s is None else until_s
        cur = self._read(
            "SELECT ts, kind, gpu, event_id, state, message FROM monitor_events"
            " WHERE ts >= ? AND ts <= ? ORDER BY ts",
            (since_s, until),
        )
        return [EventRow(*row) for row in cur]


# ---- the pure summary -------------------------------------------------------------------------


@dataclass(frozen=True)
class IdleStretch:
    start_s: float
    end_s: float

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class GpuSummary:
    gpu: int
    name: str | None
    samples: int
    first_s: float
    last_s: float
    mean_util_pct: float | None
    max_util_pct: float | None
    memory_peak_bytes: int | None
    memory_total_bytes: int | None
    max_temperature_c: float | None
    mean_power_watts: float | None
    idle_seconds: float
    idle_stretches: list[IdleStretch]
    util_sparkline: list[float | None]  # bucket means across the window, oldest first
    lost_samples: int = 0
    hints: dict[str, int] = field(default_factory=dict)  # hint id -> times seen
    alerts: list[str] = field(default_factory=list)  # "rule firing at ts" messages


@dataclass(frozen=True)
class HistorySummary:
    since_s: float
    until_s: float
    gpus: list[GpuSummary]
    events: list[EventRow]


def _stretches(
    rows: Sequence[SampleRow], idle_pct: float, min_idle_s: float, gap_s: float
) -> list[IdleStretch]:
    out: list[IdleStretch] = []
    start: float | None = None
    prev: float | None = None
    for r in rows:
        idle = r.util_gpu_pct is not None and r.util_gpu_pct <= idle_pct
        broken = prev is not None and r.ts - prev > gap_s  # no samples (monitor not running): unknown
        if start is not None and (not idle or broken):
            if prev is not None and prev - start >= min_idle_s:
                out.append(IdleStretch(start, prev))
            start = None
        if idle and start is None:
            start = r.ts
        prev = r.ts
    if start is not None and prev is not None and prev - start >= min_idle_s:
        out.append(IdleStretch(start, prev))
    return out


def summarize(
    rows: Sequence[SampleRow],
    events: Sequence[EventRow],
    since_s: float,
    until_s: float,
    *,
    idle_pct: float = IDLE_UTIL_PCT,
    min_idle_s: float = 300.0,
    buckets: int = 48,
) -> HistorySummary:
    """Per GPU: mean/max util, memory peak, idle stretches, sparkline, hints and alerts seen."""
    by_gpu: dict[int, list[SampleRow]] = {}
    for r in rows:
        by_gpu.setdefault(r.gpu, []).append(r)
    span = max(until_s - since_s, 1e-9)
    out = []
    for gpu, rs in sorted(by_gpu.items()):
        rs.sort(key=lambda r: r.ts)
        live = [r for r in rs if not r.lost]
        utils = [r.util_gpu_pct for r in live if r.util_gpu_pct is not None]
        mems = [r.memory_used_bytes for r in live if r.memory_used_bytes is not None]
        temps = [r.temperature_c for r in live if r.temperature_c is not None]
        powers = [r.power_draw_watts for r in live if r.power_draw_watts is not None]
        sums = [0.0] * buckets
        counts = [0] * buckets
        for r in live:
            if r.util_gpu_pct is None:
                continue
            b = min(buckets - 1, max(0, int((r.ts - since_s) / span * buckets)))
            sums[b] += r.util_gpu_pct
            counts[b] += 1
        spark = [sums[i] / counts[i] if counts[i] else None for i in range(buckets)]
        # A gap longer than a few sampling intervals means no data, not idleness.
        gaps = [b.ts - a.ts for a, b in itertools.pairwise(live)]
        typical = sorted(gaps)[len(gaps) // 2] if gaps else 1.0
        stretches = _stretches(live, idle_pct, min_idle_s, max(60.0, 5 * typical))
        hints: dict[str, int] = {}
        alerts: list[str] = []
        for e in events:
            if e.gpu != gpu:
                continue
            if e.kind == "hint":
                hints[e.event_id] = hints.get(e.event_id, 0) + 1
            elif e.kind == "alert":
                alerts.append(f"{e.event_id} {e.state}: {e.message}")
        names = [r.name for r in rs if r.name]
        totals = [r.memory_total_bytes for r in live if r.memory_total_bytes]
        out.append(
            GpuSummary(
                gpu=gpu,
                name=names[-1] if names else None,
                samples=len(rs),
                first_s=rs[0].ts,
                last_s=rs[-1].ts,
                mean_util_pct=fmean(utils) if utils else None,
                max_util_pct=max(utils) if utils else None,
                memory_peak_bytes=max(mems) if mems else None,
                memory_total_bytes=totals[-1] if totals else None,
                max_temperature_c=max(temps) if temps else None,
                mean_power_watts=fmean(powers) if powers else None,
                idle_seconds=sum(s.seconds for s in stretches),
                idle_stretches=stretches,
                util_sparkline=spark,
                lost_samples=len(rs) - len(live),
                hints=hints,
                alerts=alerts,
            )
        )
    return HistorySummary(since_s, until_s, out, list(events))
