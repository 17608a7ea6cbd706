"""The edge of `gpuwise report`: reads the history SQLite file (monitor samples and hints, the run ledger
and the plans runs came from) read-only, and the idle stopper's state file.

The database is opened with SQLite's `mode=ro` URI, so the report never writes to it: a damaged file is
bad input (exit 2, naming it) and stays as it was. Samples are aggregated per GPU per hour: a 90-day, 8-GPU,
10-second history is 6 M rows, too many to bring into Python and too many to GROUP BY in under 5 s. When
the monitor's hourly rollups cover every sample (`monitor_meta` says so; gpuwise.monitor.rollup keeps
them), whole hours come from `monitor_hourly` and only the hours at a window's edges from the samples;
otherwise (an older file the report, being read-only, will not upgrade) every sample is grouped in SQL.
Both give the same buckets.
"""

from __future__ import annotations

import json
import math
import shlex
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from gpuwise.errors import ConfigError, StorageError
from gpuwise.idle.state import load_state
from gpuwise.locale import _
from gpuwise.monitor.rollup import BUCKET_S, IDLE_UTIL_PCT, META_TABLE, ROLLUP_TABLE, rollups_current
from gpuwise.report.rows import History, Planned, RunRow, SampleBucket

_GPU_SLOTS = 1 << 20  # (hour, GPU) as one integer sort key: SQLite's GROUP BY sorts every row, and one
# integer compares faster than two columns (NVML's GPU indices are far below this)
_BUCKETS_SQL = f"""
SELECT CAST(ts / {BUCKET_S} AS INTEGER) * {_GPU_SLOTS} + gpu AS k, COUNT(*),
       SUM(lost = 0 AND util_gpu_pct IS NOT NULL),
       TOTAL(CASE WHEN lost = 0 THEN util_gpu_pct END),
       SUM(lost = 0 AND util_gpu_pct <= {IDLE_UTIL_PCT}),
       MIN(ts), MAX(ts)
FROM monitor_samples WHERE {{ts}} >= ? AND {{ts}} < ? AND gpu >= 0 AND gpu < {_GPU_SLOTS} GROUP BY k
"""
# `+ts` keeps SQLite off the ts index for the whole window: a report reads most of the table, and a full
# scan in file order is faster than an index walk with a table lookup per row. A run's window (--project)
# is small: there the index is used. The GPU's name is read apart, from the newest rows (a string compared
# on 6 M rows cost more than the rest of the aggregate): the first 4096 named ones among at most
# _NAMES_SCAN rows. The bound on rows looked at matters where samples carry no name (a GPU lost for the
# whole window): the search for a name walked every row of the window, 3.8 s of a 5.2 s report on a 90-day,
# 8-GPU history. 65,536 rows are a day of an 8-GPU history sampled every 10 s; a GPU named only before its
# newest 65,536 rows is shown without a name.
_NAMES_SCAN = 65_536
_NAMES_SQL = (
    "SELECT gpu, name FROM (SELECT gpu, name FROM monitor_samples WHERE ts >= ? AND ts < ? "
    "ORDER BY ts DESC LIMIT ?) WHERE name IS NOT NULL LIMIT 4096"
)
_HOURLY_SQL = f"""
SELECT hour, gpu, samples, known, util_sum, idle, first_ts, last_ts FROM {ROLLUP_TABLE}
WHERE hour >= ? AND hour <= ? AND gpu >= 0 AND gpu < {_GPU_SLOTS}
"""
# The GROUP BY sorts every row: in memory, with SQLite's helper threads, it is the report's main cost.
_PRAGMAS = ("PRAGMA temp_store = MEMORY", "PRAGMA cache_size = -131072", "PRAGMA threads = 2")

_RUNS_SQL = """
SELECT l.id, l.run_id, l.project, l.tags, l.command, l.started_at, l.ended_at, l.exit_code, l.gpu, l.gpus,
       l.provider, l.instance_type, l.price_usd_per_hour, l.gpu_util_mean_pct, l.preemptions{plan_cols}
FROM run_ledger AS l{plan_join} WHERE l.started_at >= ? AND l.started_at < ? ORDER BY l.started_at, l.id
"""
_PLAN_COLS = ", p.plan_file, p.pick, p.workload, p.task, p.gpu, p.gpus, p.planned_hours, p.planned_cost_usd"
_PLAN_JOIN = " LEFT JOIN run_plans AS p ON p.ledger_id = l.id"


def _damaged(path: Path, exc: sqlite3.Error) -> ConfigError:
    return ConfigError(
        _("The history database {path} cannot be read: {error}").format(path=path, error=exc),
        why=_("the file is damaged or is not an SQLite database (the report left it as it was)"),
        fix=_(
            "move it aside (mv {path} {path}.damaged); gpuwise monitor and gpuwise run start a new one"
        ).format(path=path),
    )


def connect_read_only(path: Path) -> sqlite3.Connection:
    """The database at `path`, opened so that nothing can be written to it."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        for pragma in _PRAGMAS:
            db.execute(pragma)
        return db
    except sqlite3.OperationalError as exc:  # cannot open (permissions, a folder): not the file's content
        raise StorageError(
            _("Cannot open the history database {path}: {error}").format(path=path, error=exc)
        ) from exc
    except sqlite3.DatabaseError as exc:  # "file is not a database": the header itself is wrong
        raise _damaged(path, exc) from exc


def _query(db: sqlite3.Connection, path: Path, sql: str, args: Sequence[Any] = ()) -> list[Any]:
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError as exc:  # locked past the timeout, unreadable: a fault, not input
        if "malformed" in str(exc) or "not a database" in str(exc):
            raise _damaged(path, exc) from exc
        raise StorageError(
            _("Cannot read the history database {path}: {error}").format(path=path, error=exc),
            fix=_("try again; if it persists, check the file's permissions"),
        ) from exc
    except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
        raise _damaged(path, exc) from exc


def merge_windows(windows: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping [start, end) windows merged, so no sample is counted twice."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(w for w in windows if w[1] > w[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


# (hour, gpu, samples, known, util_sum, idle, first_ts, last_ts): one GPU's samples in one hour
_Agg = tuple[int, int, int, int, float, int, float, float]


def _grouped(db: sqlite3.Connection, path: Path, sql: str, start: float, end: float) -> list[_Agg]:
    """The samples of [start, end) grouped per hour and GPU in SQL, in (hour, GPU) order."""
    out = []
    for r in _query(db, path, sql, (start, end)):
        hour, gpu = divmod(int(r[0]), _GPU_SLOTS)
        out.append((hour, gpu, int(r[1]), int(r[2] or 0), float(r[3] or 0.0), int(r[4] or 0), r[5], r[6]))
    return out


def _rolled(db: sqlite3.Connection, path: Path, start: float, end: float, oldest: float) -> list[_Agg]:
    """The same as `_grouped` from the hourly rollups: a rollup row whose first and last samples both lie in
    [start, end) is taken whole; one cut by an edge of the window (or holding samples older than the oldest
    one left, which only a prune that predates rollups leaves) has its samples grouped from the table."""
    out: list[_Agg] = []
    edges: dict[int, list[tuple[int, float, float]]] = {}  # hour -> (gpu, first_ts, last_ts) cut by an edge
    # ±1: CAST truncates toward zero, so a hour's rows may reach a little past floor(ts / 3600)
    hours = (math.floor(start / BUCKET_S) - 1, math.floor(end / BUCKET_S) + 1)
    for r in _query(db, path, _HOURLY_SQL, hours):
        first, last = float(r[6]), float(r[7])
        if last < start or first >= end or last < oldest:  # none of its samples in the window
            continue
        if start <= first and last < end and first >= oldest:
            out.append((int(r[0]), int(r[1]), int(r[2]), int(r[3]), float(r[4]), int(r[5]), first, last))
        else:
            edges.setdefault(int(r[0]), []).append((int(r[1]), first, last))
    sql = _BUCKETS_SQL.format(ts="ts")  # an edge is at most an hour of rows: the ts index finds them
    for hour, cut in edges.items():
        gpus = {g for g, _, _ in cut}
        lo, hi = max(start, min(f for _, f, _ in cut)), min(end, max(t for _, _, t in cut) + 1.0)
        out += [a for a in _grouped(db, path, sql, lo, hi) if a[0] == hour and a[1] in gpus]
    return sorted(out, key=lambda a: (a[0], a[1]))


def _buckets(
    db: sqlite3.Connection,
    path: Path,
    windows: Sequence[tuple[float, float]],
    *,
    whole: bool,
    oldest: float | None,
) -> Iterator[SampleBucket]:
    """Per window, the hour buckets: from the rollups when `oldest` is given (they cover every sample; the
    oldest sample left, or inf when none is), else grouped from the samples."""
    sql = _BUCKETS_SQL.format(ts="+ts" if whole else "ts")
    names: dict[int, str] = {}
    for start, end in reversed(windows):
        for gpu, name in _query(db, path, _NAMES_SQL, (start, end, _NAMES_SCAN)):
            names.setdefault(int(gpu), str(name))
    for start, end in windows:
        finite = math.isfinite(start) and math.isfinite(end)
        aggs = (
            _rolled(db, path, start, end, oldest)
            if oldest is not None and finite
            else _grouped(db, path, sql, start, end)
        )
        for hour, gpu, samples, known, util_sum, idle, first, last in aggs:
            yield SampleBucket(
                gpu=gpu,
                bucket=hour,
                samples=samples,
                known=known,
                util_sum_pct=util_sum,
                idle=idle,
                first_s=float(first),
                last_s=float(last),
                name=names.get(gpu),
            )


def _rollups_complete(db: sqlite3.Connection, path: Path, tables: set[str]) -> bool:
    """Whether the monitor's hourly rollups stand for every sample (see gpuwise.monitor.rollup)."""
    if ROLLUP_TABLE not in tables or META_TABLE not in tables:
        return False
    meta = {str(k): str(v) for k, v in _query(db, path, f"SELECT key, value FROM {META_TABLE}")}
    return rollups_current(meta)


def _run(r: Sequence[Any], with_plans: bool) -> RunRow:
    try:
        tags = tuple(str(t) for t in json.loads(r[3]))
    except (ValueError, TypeError):
        tags = ()
    try:
        command = shlex.join(str(a) for a in json.loads(r[4]))  # as `gpuwise ledger` writes it
    except (ValueError, TypeError):
        command = str(r[4])
    planned = None
    if with_plans and r[15] is not None:
        planned = Planned(r[15], r[16], r[17], r[18], r[19], int(r[20]), float(r[21]), r[22])
    return RunRow(
        ledger_id=int(r[0]),
        run_id=str(r[1]),
        project=r[2],
        tags=tags,
        command=command,
        started_at=float(r[5]),
        ended_at=r[6],
        exit_code=r[7],
        gpu=r[8],
        gpus=r[9],
        provider=r[10],
        instance_type=r[11],
        price_usd_per_hour=r[12],
        gpu_util_mean_pct=r[13],
        preemptions=int(r[14] or 0),
        planned=planned,
    )


def _hints(db: sqlite3.Connection, path: Path, run: RunRow, until: float) -> dict[str, int]:
    end = run.ended_at if run.ended_at is not None else until
    rows = _query(
        db,
        path,
        "SELECT event_id, COUNT(*) FROM monitor_events WHERE kind = 'hint' AND ts >= ? AND ts <= ? "
        "GROUP BY event_id ORDER BY event_id",
        (run.started_at, end),
    )
    return {str(k): int(n) for k, n in rows}


def _tables(db: sqlite3.Connection, path: Path) -> set[str]:
    return {r[0] for r in _query(db, path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def _read_db(
    path: Path, since: float, until: float, project: str | None
) -> tuple[list[SampleBucket] | None, int, list[RunRow] | None, list[str], float | None]:
    with closing(connect_read_only(path)) as db:
        tables = _tables(db, path)
        runs: list[RunRow] | None = None
        projects: list[str] = []
        firsts: list[float] = []
        if "run_ledger" in tables:
            with_plans = "run_plans" in tables
            sql = _RUNS_SQL.format(
                plan_cols=_PLAN_COLS if with_plans else "", plan_join=_PLAN_JOIN if with_plans else ""
            )
            runs = [_run(r, with_plans) for r in _query(db, path, sql, (since, until))]
            projects = [
                str(p)
                for (p,) in _query(
                    db, path, "SELECT DISTINCT project FROM run_ledger WHERE project IS NOT NULL"
                )
            ]
            firsts += [
                r[0] for r in _query(db, path, "SELECT MIN(started_at) FROM run_ledger") if r[0] is not None
            ]
        if project is not None and runs is not None:
            runs = [r for r in runs if r.project == project]
        buckets: list[SampleBucket] | None = None
        if "monitor_samples" in tables:
            windows = [(since, until)]
            if project is not None:  # the machine's samples while the project's runs ran
                windows = merge_windows(
                    (max(since, r.started_at), min(until, r.ended_at if r.ended_at is not None else until))
                    for r in runs or []
                )
            oldest = [
                r[0] for r in _query(db, path, "SELECT MIN(ts) FROM monitor_samples") if r[0] is not None
            ]
            rolled = _rollups_complete(db, path, tables)
            buckets = list(
                _buckets(
                    db,
                    path,
                    windows,
                    whole=project is None,
                    oldest=(float(oldest[0]) if oldest else math.inf) if rolled else None,
                )
            )
            firsts += oldest
            if "monitor_events" in tables and runs:
                runs = [RunRow(**{**r.__dict__, "hints": _hints(db, path, r, until)}) for r in runs]
        rows = sum(b.samples for b in buckets or [])
    return buckets, rows, runs, sorted(set(projects)), min(firsts) if firsts else None


def read_history(
    db_path: Path, idle_state_path: Path | None, *, since: float, until: float, project: str | None = None
) -> History:
    """What the report needs from the window [since, until). A missing database reads as nothing recorded;
    a damaged one is a ConfigError (exit 2); the idle state file is read whole (it is small)."""
    idle_state = load_state(idle_state_path) if idle_state_path is not None else None
    if not db_path.is_file():
        return History(None, None, 0, None, [], str(idle_state_path) if idle_state_path else None, idle_state)
    buckets, rows, runs, projects, first = _read_db(db_path, since, until, project)
    return History(
        db_path=str(db_path),
        buckets=buckets,
        sample_rows=rows,
        runs=runs,
        projects=projects,
        idle_state_path=str(idle_state_path) if idle_state_path else None,
        idle_state=idle_state,
        first_record_s=first,
    )
