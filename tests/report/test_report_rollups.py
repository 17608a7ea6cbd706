"""The report's hourly-rollup path gives the very buckets the raw GROUP BY over every sample gives.

The history is written through HistoryStore (so the trigger keeps the rollups), with lost GPUs, readings
missing and at the idle threshold, three GPUs, and windows whose edges fall inside hours. The raw path is the
same file with its `monitor_meta` mark removed: the reader then groups the samples itself. Utilisations are
multiples of 1/4, so sums are exact whatever order SQLite adds them in and buckets compare with ==.
"""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from gpuwise.errors import StorageError
from gpuwise.gpu.sample import NOT_SUPPORTED, Sample, Snapshot
from gpuwise.monitor.history import HistoryStore
from gpuwise.monitor.rollup import IDLE_UTIL_PCT, ROLLUP_META
from gpuwise.report.reader import read_history
from gpuwise.report.rows import SampleBucket
from gpuwise.run.ledger import LedgerStore

H = 3600.0
T0 = 1_790_000_000.0 + 1234.5  # not on an hour
STEP = 37.0  # a sampling interval that does not divide an hour
UTILS = (0.0, IDLE_UTIL_PCT, 5.25, 37.75, 99.0, 100.0)


def _snapshots(n: int, seed: int = 7) -> list[Snapshot]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        ts = T0 + i * STEP
        samples = []
        for g in range(3):
            lost = g == 2 and 40 <= i % 150 < 70  # GPU 2 falls off the bus for a while, repeatedly
            util = NOT_SUPPORTED if rnd.random() < 0.1 else rnd.choice(UTILS)
            if lost and i % 2:  # a lost GPU's reading is not counted, even when one was left in the row
                util = NOT_SUPPORTED
            samples.append(Sample(ts, g, name=f"GPU{g}", util_gpu_pct=util, lost=lost))
        out.append(Snapshot(samples=tuple(samples)))
    return out


def _write(path: Path, snapshots: list[Snapshot]) -> None:
    store = HistoryStore(path, retention_s=30 * 86400)
    for s in snapshots:
        store.add_snapshot(s)
    store.close()


def _raw_copy(path: Path, dest: Path) -> Path:
    """The same rows without the mark that says the rollups cover them: the reader's raw path."""
    with closing(sqlite3.connect(path)) as src, closing(sqlite3.connect(dest)) as dst:
        src.backup(dst)
        dst.execute("DELETE FROM monitor_meta")
        dst.commit()
    return dest


def _buckets(path: Path, since: float, until: float, project: str | None = None) -> list[SampleBucket]:
    buckets = read_history(path, None, since=since, until=until, project=project).buckets
    assert buckets is not None
    return buckets


WINDOWS = [
    (T0 - 5 * H, T0 + 30 * H),  # every sample
    (T0 + 0.3 * H, T0 + 5.6 * H),  # both edges inside hours
    (T0 + 100.0, T0 + 900.0),  # inside a single hour
    (float(int(T0 / H) + 2) * H, float(int(T0 / H) + 5) * H),  # edges on hour boundaries
    (T0 + 50 * H, T0 + 60 * H),  # no sample at all
]


def _assert_same(path: Path, raw: Path) -> None:
    for since, until in WINDOWS:
        rolled = _buckets(path, since, until)
        assert rolled == _buckets(raw, since, until), (since, until)
    assert len(_buckets(path, *WINDOWS[0])) >= 12  # the comparison covers several hours of three GPUs


def test_rollup_path_equals_the_raw_path_bucket_by_bucket(tmp_path: Path) -> None:
    path = tmp_path / "gpuwise.sqlite"
    _write(path, _snapshots(800))  # about 8.2 hours
    _assert_same(path, _raw_copy(path, tmp_path / "raw.sqlite"))
    # the rollups are what the reader used: change one whole hour there and the report follows it
    with closing(sqlite3.connect(path)) as db:
        db.execute(
            "UPDATE monitor_hourly SET util_sum = util_sum + 1 WHERE hour = ? AND gpu = 0", (int(T0 / H) + 3,)
        )
        db.commit()
    assert _buckets(path, *WINDOWS[0]) != _buckets(tmp_path / "raw.sqlite", *WINDOWS[0])


def test_a_prune_keeps_rollups_and_samples_in_step(tmp_path: Path) -> None:
    path = tmp_path / "gpuwise.sqlite"
    _write(path, _snapshots(800))
    store = HistoryStore(path, retention_s=H)
    cutoff = T0 + 2.4 * H  # inside an hour: that hour's rollups are recomputed from the rows kept
    deleted = store.prune(cutoff + H, force=True)
    store.close()
    assert deleted == 3 * sum(1 for i in range(800) if T0 + i * STEP < cutoff)  # retention to the second
    raw = _raw_copy(path, tmp_path / "raw.sqlite")
    _assert_same(path, raw)
    with closing(sqlite3.connect(path)) as db:
        (oldest,) = db.execute("SELECT MIN(first_ts) FROM monitor_hourly").fetchone()
    assert oldest >= cutoff


def test_samples_deleted_behind_the_rollups_back_are_read_from_the_table(tmp_path: Path) -> None:
    """A prune by a gpuwise that predates the rollups deletes samples and leaves their rollups."""
    path = tmp_path / "gpuwise.sqlite"
    _write(path, _snapshots(800))
    with closing(sqlite3.connect(path)) as db:
        db.execute("DROP TRIGGER monitor_hourly_add")  # as that version would not fire it either
        db.execute("DELETE FROM monitor_samples WHERE ts < ?", (T0 + 3.5 * H,))
        db.commit()
    _assert_same(path, _raw_copy(path, tmp_path / "raw.sqlite"))


def _old_history(path: Path, snapshots: list[Snapshot]) -> None:
    """A history written before rollups existed: the samples table alone."""
    _write(path, snapshots)
    with closing(sqlite3.connect(path)) as db:
        db.executescript(
            "DROP TRIGGER monitor_hourly_add; DROP TABLE monitor_hourly; DROP TABLE monitor_meta;"
        )


def _tables(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master")}


def test_an_older_history_gets_its_rollups_when_the_store_opens_it(tmp_path: Path) -> None:
    path = tmp_path / "gpuwise.sqlite"
    _old_history(path, _snapshots(500))
    before = {w: _buckets(path, *w) for w in WINDOWS}
    assert "monitor_hourly" not in _tables(path)  # the read-only report did not add them
    HistoryStore(path).close()
    assert {"monitor_hourly", "monitor_meta", "monitor_hourly_add"} <= _tables(path)
    with closing(sqlite3.connect(path)) as db:
        assert dict(db.execute("SELECT key, value FROM monitor_meta").fetchall()) == ROLLUP_META
    assert {w: _buckets(path, *w) for w in WINDOWS} == before
    _write(path, _snapshots(100, seed=8)[50:])  # new samples after the backfill are counted by the trigger
    _assert_same(path, _raw_copy(path, tmp_path / "raw.sqlite"))


def test_rollups_under_another_idle_threshold_are_rebuilt_and_not_read_before(tmp_path: Path) -> None:
    path = tmp_path / "gpuwise.sqlite"
    _write(path, _snapshots(300))
    with closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE monitor_meta SET value = '3.0' WHERE key = 'hourly_rollup_idle_util_pct'")
        db.execute("UPDATE monitor_hourly SET idle = idle + 1000")  # as another threshold would count
        db.commit()
    raw = _raw_copy(path, tmp_path / "raw.sqlite")
    assert _buckets(path, *WINDOWS[0]) == _buckets(raw, *WINDOWS[0])  # stale rollups are not read
    HistoryStore(path).close()
    with closing(sqlite3.connect(path)) as db:
        assert dict(db.execute("SELECT key, value FROM monitor_meta").fetchall()) == ROLLUP_META
        assert db.execute("SELECT MAX(idle) FROM monitor_hourly").fetchone()[0] < 1000
    _assert_same(path, raw)


@pytest.mark.parametrize("runs", [[(0.5, 1.2), (1.0, 2.7), (4.1, None)], [(0.0, 9.0)]])
def test_project_windows_agree_too(tmp_path: Path, runs: list[tuple[float, float | None]]) -> None:
    path = tmp_path / "gpuwise.sqlite"
    _write(path, _snapshots(800))
    LedgerStore(path).close()
    with closing(sqlite3.connect(path)) as db:
        db.executemany(
            "INSERT INTO run_ledger (run_id, project, tags, command, started_at, ended_at, gpu, gpus) "
            "VALUES (?, 'p', '[]', '[]', ?, ?, 'H100', 3)",
            [(f"r{k}", T0 + a * H, None if b is None else T0 + b * H) for k, (a, b) in enumerate(runs)],
        )
        db.commit()
    raw = _raw_copy(path, tmp_path / "raw.sqlite")
    since, until = T0 - H, T0 + 7.3 * H
    rolled = _buckets(path, since, until, "p")
    assert rolled == _buckets(raw, since, until, "p")
    assert rolled


def test_rollups_that_cannot_be_built_are_a_storage_error_and_the_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "gpuwise.sqlite"
    _old_history(path, _snapshots(50))
    with closing(sqlite3.connect(path)) as db:  # a table of that name, not ours: the backfill cannot fit it
        db.execute("CREATE TABLE monitor_hourly (hour INTEGER PRIMARY KEY, note TEXT)")
        db.commit()
    try:  # not pytest.raises: keep the traceback (and the store in it) alive, as a caller would
        HistoryStore(path)
    except StorageError as exc:
        error = exc
    assert "hourly rollups" in str(error) and "--no-history" in error.fix
    assert "monitor_hourly_add" not in _tables(path) and "monitor_meta" not in _tables(path)
    with closing(sqlite3.connect(path, timeout=0)) as db:  # rolled back: the write lock is not kept
        db.execute("INSERT INTO monitor_samples (ts, gpu, lost) VALUES (?, 0, 1)", (T0 + 10.0,))
        db.commit()
    assert len(_buckets(path, *WINDOWS[0])) == 6  # two hours of three GPUs, read from the samples themselves
