"""How long `gpuwise report` takes on a large history, as a ratio to reading the same rows with sqlite3.

Builds 90 days x 8 GPUs x one sample every 10 s of monitor history (about 6.2 M rows in the monitor's own
schema, made inside SQLite) plus 200 ledger runs in a temporary directory, then times the report's work
(read + figures + JSON, in this process) and a plain `SELECT ts, gpu, util_gpu_pct FROM monitor_samples`
fetched whole with the standard library. Target: the report under 5 s. The report reads the monitor's
hourly rollups (gpuwise.monitor.rollup); `--raw` times it without them (every sample grouped in SQL).
Usage: python benchmarks/report_speed.py [--days 90] [--gpus 8] [--interval-s 10].
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from gpuwise.monitor.history import HistoryStore
from gpuwise.report.core import build_report
from gpuwise.report.reader import read_history
from gpuwise.run.ledger import LedgerStore

NOW = 1_795_000_000.0  # a fixed "now" (2026-11-18), so every run builds the same history


# One INSERT … SELECT over a recursive counter: the rows are made inside SQLite, about 10x faster than
# building 6 M tuples in Python for executemany. Utilisation: work (60-100 %) two stretches in three, idle
# (0 %) in the third, and one sample in 997 without a reading.
_FILL = """
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :rows - 1)
INSERT INTO monitor_samples
SELECT :start + (i / :gpus) * :interval, i % :gpus, NULL, 'NVIDIA H100 80GB HBM3',
       CASE WHEN (i / :gpus) % 997 = 0 THEN NULL
            WHEN ((i / :gpus) / 2000) % 3 = 0 THEN 0.0
            ELSE 60 + (i * 2654435761) % 41 END,
       NULL, NULL, NULL, NULL, NULL, NULL, 0
FROM n
"""


def build(path: Path, days: int, gpus: int, interval_s: float, *, raw: bool = False) -> int:
    HistoryStore(path).close()  # the monitor's own schema
    LedgerStore(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous=OFF")
    # The rollup trigger costs ~3.5 µs a row (3.3x this bulk insert): build the samples without it and let
    # the store backfill the rollups when it opens the file, as it does for a history older than rollups.
    db.execute("DROP TRIGGER monitor_hourly_add")
    db.execute("DELETE FROM monitor_meta")
    start = NOW - days * 86400
    rows = int(days * 86400 / interval_s) * gpus
    db.execute(_FILL, {"rows": rows, "start": start, "gpus": gpus, "interval": interval_s})
    runs = []
    for k in range(200):
        begin = start + k * (days * 86400 / 200)
        runs.append((f"run-{k}", f"p{k % 5}", "[]", '["python", "train.py"]', begin, begin + 6 * 3600, 0,
                     "NVIDIA H100 80GB HBM3", gpus, "aws", "p5.48xlarge", 98.32, "config.toml"))  # fmt: skip
    db.executemany(
        "INSERT INTO run_ledger (run_id, project, tags, command, started_at, ended_at, exit_code, gpu, gpus, "
        "provider, instance_type, price_usd_per_hour, price_source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        runs,
    )
    db.commit()
    db.close()
    if not raw:
        t0 = time.perf_counter()
        HistoryStore(path).close()
        print(f"backfilled the hourly rollups in {time.perf_counter() - t0:.1f} s")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval-s", type=float, default=10.0)
    parser.add_argument("--raw", action="store_true", help="no hourly rollups: group every sample")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpuwise.sqlite"
        t0 = time.perf_counter()
        rows = build(path, args.days, args.gpus, args.interval_s, raw=args.raw)
        print(
            f"built {rows:,} sample rows in {time.perf_counter() - t0:.1f} s "
            f"({path.stat().st_size / 1e6:,.0f} MB)"
        )
        since = NOW - args.days * 86400

        t0 = time.perf_counter()
        with sqlite3.connect(path) as db:
            plain = db.execute("SELECT ts, gpu, util_gpu_pct FROM monitor_samples").fetchall()
        plain_s = time.perf_counter() - t0
        del plain

        t0 = time.perf_counter()
        history = read_history(path, None, since=since, until=NOW)
        report = build_report(history, since=since, until=NOW, project=None, price_usd_per_hour=None)
        json.dumps(report)
        report_s = time.perf_counter() - t0
    print(f"plain sqlite3 read of the same rows: {plain_s:.2f} s")
    print(f"gpuwise report:                      {report_s:.2f} s  (ratio {report_s / plain_s:.2f}x)")
    print(f"target: under 5 s -> {'met' if report_s < 5 else 'NOT met'}")
    return 0 if report_s < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
