"""The run ledger: one row per `gpuwise run` launch in the history SQLite file (table `run_ledger`), and a
pure summary of those rows.

`LedgerStore` is the edge (stdlib sqlite3, WAL, the file `gpuwise.paths.history_db()` that the monitor
history also uses; the monitor's own tables are only read, for the GPU utilisation during a run).
`entry_json()`, `summarize()` and `budget_state()` are pure.

GPU-hours = GPUs × wall hours; cost = the machine's price per hour × wall hours (`[machine]
price_usd_per_hour` in config.toml, which is the price of the whole machine). Unknown stays null.
"""

from __future__ import annotations

import json
import math
import shlex
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuwise.errors import StorageError
from gpuwise.locale import _
from gpuwise.run.planref import PlannedRun
from gpuwise.sqlitedb import open_db
from gpuwise.units import RunSpan

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    project TEXT,
    tags TEXT NOT NULL DEFAULT '[]',          -- JSON list
    command TEXT NOT NULL,                    -- JSON list (argv)
    started_at REAL NOT NULL,                 -- Unix seconds
    ended_at REAL,                            -- null while running (or when gpuwise was killed)
    exit_code INTEGER,
    gpu TEXT,
    gpus INTEGER,
    provider TEXT,
    instance_type TEXT,
    price_usd_per_hour REAL,
    price_source TEXT,
    gpu_util_mean_pct REAL,
    preemptions INTEGER NOT NULL DEFAULT 0,
    checkpoints INTEGER NOT NULL DEFAULT 0,
    bytes_uploaded INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS run_ledger_started ON run_ledger (started_at);
-- the plan a run was launched from (`gpuwise run --plan`); a table of its own: run_ledger is unchanged
CREATE TABLE IF NOT EXISTS run_plans (
    ledger_id INTEGER PRIMARY KEY,            -- run_ledger.id
    plan_file TEXT NOT NULL,
    pick TEXT NOT NULL,
    workload TEXT,
    task TEXT,
    gpu TEXT NOT NULL,                        -- the catalog's canonical GPU name
    gpus INTEGER NOT NULL,
    provider TEXT,
    instance_type TEXT,
    pricing TEXT,
    planned_hours REAL NOT NULL,
    planned_cost_usd REAL
);
"""

BY_CHOICES = ("project", "tag", "month", "gpu")


@dataclass(frozen=True)
class RunStart:
    run_id: str
    project: str | None
    tags: tuple[str, ...]
    command: tuple[str, ...]
    started_at: float
    gpu: str | None
    gpus: int | None
    provider: str | None
    instance_type: str | None
    price_usd_per_hour: float | None
    price_source: str | None


@dataclass(frozen=True)
class LedgerEntry(RunSpan):
    run_id: str
    project: str | None
    tags: tuple[str, ...]
    command: tuple[str, ...]
    started_at: float
    ended_at: float | None
    exit_code: int | None
    gpu: str | None
    gpus: int | None
    provider: str | None
    instance_type: str | None
    price_usd_per_hour: float | None
    price_source: str | None
    gpu_util_mean_pct: float | None
    preemptions: int
    checkpoints: int
    bytes_uploaded: int


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def entry_json(e: LedgerEntry) -> dict[str, Any]:
    return {
        "run_id": e.run_id,
        "project": e.project,
        "tags": list(e.tags),
        "command": shlex.join(e.command),
        "started_at": _iso(e.started_at),
        "ended_at": _iso(e.ended_at),
        "exit_code": e.exit_code,
        "gpu": e.gpu,
        "gpus": e.gpus,
        "provider": e.provider,
        "instance_type": e.instance_type,
        "price_usd_per_hour": e.price_usd_per_hour,
        "price_source": e.price_source,
        "gpu_hours": _round(e.gpu_hours, 4),
        "gpu_util_mean_pct": _round(e.gpu_util_mean_pct, 1),
        "preemptions": e.preemptions,
        "checkpoints": e.checkpoints,
        "bytes_uploaded": e.bytes_uploaded,
        "cost_usd": _round(e.cost_usd, 4),
    }


def _sum(values: Iterable[float | None]) -> float | None:
    """Sum of the known values; None when none is known (never a silent 0 for unknown)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def totals(entries: Sequence[LedgerEntry]) -> dict[str, Any]:
    unknown_cost = sum(1 for e in entries if e.cost_usd is None)
    return {
        "runs": len(entries),
        "hours": _round(_sum(e.hours for e in entries), 4),
        "gpu_hours": _round(_sum(e.gpu_hours for e in entries), 4),
        "cost_usd": _round(_sum(e.cost_usd for e in entries), 4),
        "runs_without_cost": unknown_cost,
        "preemptions": sum(e.preemptions for e in entries),
        "checkpoints": sum(e.checkpoints for e in entries),
        "bytes_uploaded": sum(e.bytes_uploaded for e in entries),
    }


def group_keys(e: LedgerEntry, by: str) -> list[str]:
    if by == "project":
        return [e.project or "(none)"]
    if by == "tag":
        return list(e.tags) or ["(none)"]  # a run with two tags counts under each
    if by == "month":
        return [datetime.fromtimestamp(e.started_at, UTC).strftime("%Y-%m")]
    if by == "gpu":
        return [f"{e.gpus}× {e.gpu}" if e.gpu and e.gpus else (e.gpu or "(unknown)")]
    raise ValueError(f"unknown grouping {by!r}")


def summarize(entries: Sequence[LedgerEntry], by: str | None) -> dict[str, Any]:
    """`{"runs": [...], "totals": {...}}`, plus `"groups": [{"key", …totals}]` when grouped."""
    out: dict[str, Any] = {"runs": [entry_json(e) for e in entries], "totals": totals(entries)}
    if by is not None:
        groups: dict[str, list[LedgerEntry]] = {}
        for e in entries:
            for k in group_keys(e, by):
                groups.setdefault(k, []).append(e)
        out["by"] = by
        out["groups"] = [{"key": k, **totals(v)} for k, v in sorted(groups.items())]
    return out


@dataclass(frozen=True)
class BudgetState:
    project: str
    budget_usd: float
    spent_usd: float
    runs_without_cost: int

    @property
    def fraction(self) -> float:
        return self.spent_usd / self.budget_usd if self.budget_usd > 0 else float("inf")

    @property
    def level(self) -> str:
        """ "ok", "warn" (80 % or more spent) or "over" (100 % or more)."""
        if self.fraction >= 1.0:
            return "over"
        return "warn" if self.fraction >= 0.8 else "ok"


def budget_state(entries: Iterable[LedgerEntry], project: str, budget_usd: float) -> BudgetState:
    mine = [e for e in entries if e.project == project]
    return BudgetState(
        project,
        budget_usd,
        sum(e.cost_usd or 0.0 for e in mine),
        sum(1 for e in mine if e.cost_usd is None),
    )


class LedgerStore:
    def __init__(self, path: Path, *, fix: str | None = None) -> None:
        """`fix`: what to do when the file cannot be opened (the default names `gpuwise run --no-ledger`)."""
        self.path = path
        self.skipped: list[int] = []  # after entries(): the ids of rows too damaged to read (no start time)
        self._db = open_db(
            path,
            _SCHEMA,
            what=_("ledger"),
            fix=fix or _("set GPUWISE_DATA_DIR to a writable directory, or run with --no-ledger"),
        )

    def close(self) -> None:
        self._db.close()

    def _write(self, sql: str, args: Sequence[Any]) -> int:
        try:
            with self._db:
                cur = self._db.execute(sql, args)
                return int(cur.lastrowid or 0)
        except sqlite3.Error as exc:
            raise StorageError(
                _("Cannot write the ledger {path}: {error}").format(path=self.path, error=exc),
                why=_("the disk is full or another process holds the database locked"),
                fix=_("free space on that disk (or set GPUWISE_DATA_DIR elsewhere)"),
            ) from exc

    def start(self, r: RunStart) -> int:
        return self._write(
            "INSERT INTO run_ledger (run_id, project, tags, command, started_at, gpu, gpus, provider, "
            "instance_type, price_usd_per_hour, price_source) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                r.run_id,
                r.project,
                json.dumps(list(r.tags)),
                json.dumps(list(r.command)),
                r.started_at,
                r.gpu,
                r.gpus,
                r.provider,
                r.instance_type,
                r.price_usd_per_hour,
                r.price_source,
            ),
        )

    def record_plan(self, row: int, p: PlannedRun) -> None:
        """Keep the plan the run at ledger row `row` was launched from."""
        self._write(
            "INSERT OR REPLACE INTO run_plans (ledger_id, plan_file, pick, workload, task, gpu, gpus, "
            "provider, instance_type, pricing, planned_hours, planned_cost_usd) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                row,
                p.source,
                p.pick,
                p.workload,
                p.task,
                p.gpu,
                p.gpus,
                p.provider,
                p.instance_type,
                p.pricing,
                p.planned_hours,
                p.planned_cost_usd,
            ),
        )

    def finish(  # noqa: PLR0917 - one positional per column updated
        self,
        row: int,
        ended_at: float,
        exit_code: int,
        preemptions: int,
        checkpoints: int,
        bytes_uploaded: int,
    ) -> None:
        util = self.gpu_util_mean(row, ended_at)
        self._write(
            "UPDATE run_ledger SET ended_at=?, exit_code=?, preemptions=?, checkpoints=?, bytes_uploaded=?, "
            "gpu_util_mean_pct=? WHERE id=?",
            (ended_at, exit_code, preemptions, checkpoints, bytes_uploaded, util, row),
        )

    def close_interrupted(self, run_id: str, last_alive: float, row: int | None = None) -> int:
        """Close the row `row` of `run_id` left open by a gpuwise that was killed outright: it ends at its
        last sign of life, with the exit code unknown (null). Without `row` (a pid file written without
        one), every open row of `run_id` started before then. Returns how many were closed."""
        sql = "SELECT id FROM run_ledger WHERE run_id=? AND ended_at IS NULL AND started_at <= ?"
        args: tuple[Any, ...] = (run_id, last_alive)
        if row is not None:  # another run of the same id may be going in another checkpoint directory
            sql, args = sql + " AND id=?", (*args, row)
        try:
            rows = self._db.execute(sql, args).fetchall()
        except sqlite3.Error:
            return 0
        for (found,) in rows:
            self._write(
                "UPDATE run_ledger SET ended_at=?, gpu_util_mean_pct=? WHERE id=?",
                (last_alive, self.gpu_util_mean(found, last_alive), found),
            )
        return len(rows)

    def gpu_util_mean(self, row: int, ended_at: float) -> float | None:
        """Mean GPU utilisation of the monitor's samples taken during the run (None without samples: the
        monitor, exporter or idle daemon was not recording)."""
        try:
            (started,) = self._db.execute("SELECT started_at FROM run_ledger WHERE id=?", (row,)).fetchone()
            got = self._db.execute(
                "SELECT AVG(util_gpu_pct) FROM monitor_samples WHERE ts BETWEEN ? AND ? "
                "AND util_gpu_pct IS NOT NULL",
                (started, ended_at),
            ).fetchone()
        except (sqlite3.Error, TypeError):
            return None  # no monitor table in this file yet
        return None if got is None or got[0] is None else float(got[0])

    def entries(self, since_ts: float | None = None) -> list[LedgerEntry]:
        sql = (
            "SELECT run_id, project, tags, command, started_at, ended_at, exit_code, gpu, gpus, provider, "
            "instance_type, price_usd_per_hour, price_source, gpu_util_mean_pct, preemptions, checkpoints, "
            "bytes_uploaded, id FROM run_ledger"
        )
        args: tuple[Any, ...] = ()
        if since_ts is not None:
            sql += " WHERE started_at >= ?"
            args = (since_ts,)
        try:
            rows = self._db.execute(sql + " ORDER BY started_at, id", args).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(
                _("Cannot read the ledger {path}: {error}").format(path=self.path, error=exc)
            ) from exc
        entries = [_entry(r) for r in rows]
        self.skipped = [int(r[17]) for r, e in zip(rows, entries, strict=True) if e is None]
        return [e for e in entries if e is not None]


def _number(value: object) -> float | None:
    """A finite number from the database, else None (a damaged field reads as unknown)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _whole(value: object) -> int | None:
    n = _number(value)
    return None if n is None else int(n)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _words(value: object) -> tuple[str, ...] | None:
    """A JSON list of strings (tags, argv), or None when the field is not one."""
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return tuple(str(w) for w in parsed) if isinstance(parsed, list) else None


def _entry(r: Sequence[Any]) -> LedgerEntry | None:
    """One ledger row; None when its start time is not a number (nothing about it can be placed). Other
    damaged fields read as unknown: a row written by hand or by a damaged disk must not end the listing."""
    started = _number(r[4])
    if started is None:
        return None
    command = _words(r[3])
    return LedgerEntry(
        run_id=str(r[0]),
        project=_text(r[1]),
        tags=_words(r[2]) or (),
        command=command if command is not None else (str(r[3]),),
        started_at=started,
        ended_at=_number(r[5]),
        exit_code=_whole(r[6]),
        gpu=_text(r[7]),
        gpus=_whole(r[8]),
        provider=_text(r[9]),
        instance_type=_text(r[10]),
        price_usd_per_hour=_number(r[11]),
        price_source=_text(r[12]),
        gpu_util_mean_pct=_number(r[13]),
        preemptions=_whole(r[14]) or 0,
        checkpoints=_whole(r[15]) or 0,
        bytes_uploaded=_whole(r[16]) or 0,
    )
