"""A history with known totals for `gpuwise report` tests: monitor samples (with unknown-utilization
stretches), hints, ledger runs (two launched from a plan), and an idle stopper state file.

T0 is midnight UTC two days ago, so `--since 10d` covers it. Hand-computed totals are in test_report_json.py.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from gpuwise.monitor.history import HistoryStore
from gpuwise.run.ledger import LedgerStore

T0 = (int(time.time()) // 86400 - 2) * 86400
H = 3600.0
A100 = "NVIDIA A100-SXM4-80GB"


def _samples() -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for i in range(720):  # two hours every 10 s
        ts = T0 + i * 10
        first_hour = i < 360
        gpu0 = 80.0 if first_hour else (0.0 if i < 540 else None)  # last half hour: no reading
        rows.append((ts, 0, None, A100, gpu0, None, None, None, None, None, None, 0))
        gpu1, lost = (40.0, 0) if first_hour else (None, 1)  # second hour: the GPU was lost
        rows.append((ts, 1, None, A100, gpu1, None, None, None, None, None, None, lost))
    return rows


def _runs() -> list[tuple[object, ...]]:
    def row(  # noqa: PLR0917 - one positional per column, as the table reads
        run_id: str, project: str, start_h: float, end_h: float | None, gpus: int, provider: str,
            price: float | None, util: float | None) -> tuple[object, ...]:  # fmt: skip
        end = None if end_h is None else T0 + end_h * H
        return (run_id, project, "[]", '["python", "train.py"]', T0 + start_h * H, end, 0 if end else None,
                A100, gpus, provider, "p4d", price, util)  # fmt: skip

    return [
        row("r1", "llm", 0, 2, 2, "aws", 10.0, 48.0),
        row("r2", "llm", 3, 4, 2, "aws", 10.0, 30.0),
        row("r3", "vision", 5, 5.5, 1, "lambda", None, None),
        row("r4", "vision", 6, None, 1, "lambda", None, None),  # still running: hours unknown
    ]


def build_history(data_dir: Path) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "gpuwise.sqlite"
    HistoryStore(path).close()
    LedgerStore(path).close()
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO monitor_samples VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", _samples())
        db.executemany(
            "INSERT INTO monitor_events VALUES (?,?,?,?,?,?)",
            [(T0 + 600 + k, "hint", 0, "input_bound", "warn", "input-bound") for k in range(3)],
        )
        db.executemany(
            "INSERT INTO run_ledger (run_id, project, tags, command, started_at, ended_at, exit_code, gpu, "
            "gpus, provider, instance_type, price_usd_per_hour, gpu_util_mean_pct) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            _runs(),
        )
        db.executemany(
            "INSERT INTO run_plans VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    row,
                    "plan.json",
                    "balanced",
                    "llama",
                    "finetune",
                    "A100-80GB",
                    2,
                    "aws",
                    "p4d",
                    "on_demand",
                    h,
                    usd,
                )
                for row, h, usd in ((1, 1.0, 12.0), (2, 0.8, 8.0))
            ],
        )
    state = {
        "version": 1,
        "stops": [{"at": T0 + 7 * H, "ok": True, "dry_run": False, "reason": "idle 60 min", "idle_s": 3600}],
        "boots": [{"daemon_start": T0 + 9 * H + 60, "system_boot": T0 + 9 * H}],
    }
    (data_dir / "idle").mkdir(exist_ok=True)
    (data_dir / "idle" / "state.json").write_text(json.dumps(state), encoding="utf-8")
    return path
