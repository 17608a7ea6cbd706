"""Hourly rollups of the monitor history, kept by SQLite as samples are written (the writer's side).

`monitor_hourly` holds, per GPU per hour, what `gpuwise report` needs from `monitor_samples`: how many rows,
how many had a utilisation reading, their sum, how many were idle, and the first and last timestamps. A
trigger on `monitor_samples` keeps it with one UPSERT per inserted row, so a report over 90 days of 8 GPUs
reads ~17 k rollup rows instead of 6 M samples. `monitor_meta` says the rollups cover every sample (and
under which idle threshold): an older history gets them backfilled once, in the same transaction that
creates the trigger, and a reader that does not find that mark reads the samples themselves.

A row belongs to hour CAST(ts / 3600 AS INTEGER), the expression the report's own query groups by. Standard
library only; imports nothing from gpuwise.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

BUCKET_S = 3600  # one rollup row per GPU per hour
IDLE_UTIL_PCT = 5.0  # a sample at or below this utilisation is idle: the monitor's and the report's threshold

ROLLUP_TABLE = "monitor_hourly"
META_TABLE = "monitor_meta"
# What monitor_meta must say for the rollups to stand for the samples. A threshold that changes in a later
# version makes the rollups stale: the store rebuilds them, a reader ignores them until it has.
ROLLUP_META: dict[str, str] = {
    "hourly_rollup": "complete",
    "hourly_rollup_idle_util_pct": repr(IDLE_UTIL_PCT),
}

_HOUR = f"CAST(ts / {BUCKET_S}.0 AS INTEGER)"
_META_SQL = f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_TABLE_SQL = f"""
CREATE TABLE IF NOT EXISTS {ROLLUP_TABLE} (
    hour INTEGER NOT NULL,      -- CAST(ts / 3600 AS INTEGER)
    gpu INTEGER NOT NULL,
    samples INTEGER NOT NULL,   -- every row, lost ones included
    known INTEGER NOT NULL,     -- not lost, with a utilisation reading
    util_sum REAL NOT NULL,     -- the sum of those readings
    idle INTEGER NOT NULL,      -- known rows at or below the idle threshold
    first_ts REAL NOT NULL,
    last_ts REAL NOT NULL,
    PRIMARY KEY (hour, gpu)
) WITHOUT ROWID
"""
_TRIGGER_SQL = f"""
CREATE TRIGGER IF NOT EXISTS monitor_hourly_add AFTER INSERT ON monitor_samples BEGIN
    INSERT INTO {ROLLUP_TABLE} VALUES (
        CAST(NEW.ts / {BUCKET_S}.0 AS INTEGER), NEW.gpu, 1,
        NEW.lost = 0 AND NEW.util_gpu_pct IS NOT NULL,
        CASE WHEN NEW.lost = 0 AND NEW.util_gpu_pct IS NOT NULL THEN NEW.util_gpu_pct ELSE 0.0 END,
        NEW.lost = 0 AND NEW.util_gpu_pct IS NOT NULL AND NEW.util_gpu_pct <= {IDLE_UTIL_PCT},
        NEW.ts, NEW.ts)
    ON CONFLICT (hour, gpu) DO UPDATE SET
        samples = samples + 1, known = known + excluded.known, util_sum = util_sum + excluded.util_sum,
        idle = idle + excluded.idle, first_ts = MIN(first_ts, excluded.first_ts),
        last_ts = MAX(last_ts, excluded.last_ts);
END
"""
# The same figures from the samples themselves, for a backfill and for the hour a prune cuts through.
_AGGREGATE_SQL = f"""
INSERT INTO {ROLLUP_TABLE}
SELECT {_HOUR} AS h, gpu, COUNT(*), SUM(lost = 0 AND util_gpu_pct IS NOT NULL),
       TOTAL(CASE WHEN lost = 0 THEN util_gpu_pct END),
       SUM(lost = 0 AND util_gpu_pct IS NOT NULL AND util_gpu_pct <= {IDLE_UTIL_PCT}), MIN(ts), MAX(ts)
FROM monitor_samples {{where}} GROUP BY h, gpu
"""


def rollups_current(meta: Mapping[str, str]) -> bool:
    """Whether `monitor_meta`'s rows say the rollups cover every sample, under today's idle threshold."""
    return all(meta.get(k) == v for k, v in ROLLUP_META.items())


def _meta(db: sqlite3.Connection) -> dict[str, str]:
    if not db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (META_TABLE,)
    ).fetchone():
        return {}
    return {str(k): str(v) for k, v in db.execute(f"SELECT key, value FROM {META_TABLE}")}


def ensure_rollups(db: sqlite3.Connection) -> bool:
    """Create the rollup table and its trigger, backfilling from the samples already there; once per file.

    Runs under SQLite's write lock (BEGIN IMMEDIATE), so no sample lands between the backfill and the
    trigger. Returns whether it (re)built them. Raises sqlite3.Error; the caller words it."""
    if rollups_current(_meta(db)):
        return False
    db.execute("BEGIN IMMEDIATE")
    try:
        built = not rollups_current(_meta(db))  # another writer may have built them while we waited
        if built:
            db.execute(_META_SQL)
            db.execute(_TABLE_SQL)
            db.execute("DROP TRIGGER IF EXISTS monitor_hourly_add")
            db.execute(f"DELETE FROM {ROLLUP_TABLE}")
            db.execute(
                _AGGREGATE_SQL.format(where="")
            )  # one GROUP BY over every sample: 1.2 s per 1 M rows (benchmarks/report_speed.py)
            db.execute(_TRIGGER_SQL)
            db.executemany(f"INSERT OR REPLACE INTO {META_TABLE} VALUES (?, ?)", ROLLUP_META.items())
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return built


def trim_rollups(db: sqlite3.Connection, cutoff_s: float) -> None:
    """After `DELETE FROM monitor_samples WHERE ts < cutoff_s`, in the same transaction: drop the rollups of
    the hours wholly deleted and recompute the hour the cutoff falls in from the rows it kept, so rollups and
    samples agree exactly (retention stays to the second). Every kept row is in that hour or a later one,
    because CAST(ts / 3600) never decreases as ts grows."""
    hour = f"CAST(? / {BUCKET_S}.0 AS INTEGER)"
    db.execute(f"DELETE FROM {ROLLUP_TABLE} WHERE hour <= {hour}", (cutoff_s,))
    # ts < cutoff + 2 h bounds the index walk: hour 0 spans (-3600, 3600) under CAST's truncation
    where = f"WHERE ts >= ? AND ts < ? + {2 * BUCKET_S} AND {_HOUR} = {hour}"
    db.execute(_AGGREGATE_SQL.format(where=where), (cutoff_s, cutoff_s, cutoff_s))
