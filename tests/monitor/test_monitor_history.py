"""History: the SQLite store (WAL, retention) and the pure summary `monitor --since` shows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from monitor_fakes import GIB, FakeClock, FakeProbe, gpu, snap

from gpuwise.errors import StorageError
from gpuwise.monitor.history import HistoryStore, SampleRow, summarize
from gpuwise.monitor.sampler import Sampler


def test_store_round_trip_wal_and_retention(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    store = HistoryStore(db, retention_s=3600)
    store.add_snapshot(snap(gpu(0, ts=1000.0), gpu(1, ts=1000.0, util_gpu_pct=0.0)))
    store.add_snapshot(snap(gpu(0, ts=5000.0)))
    store.add_event(5000.0, "alert", 0, "temperature", "firing", "GPU 0: hot")
    assert [(r.ts, r.gpu) for r in store.samples(0)] == [(1000.0, 0), (1000.0, 1), (5000.0, 0)]
    assert store.samples(2000)[0].memory_used_bytes == 60 * GIB
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.prune(5000.0) == 2  # the two rows older than an hour
    assert store.prune(5001.0) == 0  # at most hourly
    assert [r.ts for r in store.samples(0)] == [5000.0]
    assert len(store.events(0)) == 1
    store.close()


def test_unwritable_database_is_a_storage_error(tmp_path: Path) -> None:
    not_a_db = tmp_path / "h.sqlite"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="not a database") as info:
        HistoryStore(not_a_db)
    assert "--no-history" in info.value.fix


def _rows(utils: list[float | None], start: float = 0.0, step: float = 60.0) -> list[SampleRow]:
    return [
        SampleRow(start + i * step, 0, "H100", u, int(u or 0) * GIB, 80 * GIB, 300.0, 60.0)
        for i, u in enumerate(utils)
    ]


def test_summary_idle_stretches_and_peaks() -> None:
    # 10 busy minutes, 20 idle minutes, 5 busy minutes (one sample a minute)
    rows = _rows([90.0] * 10 + [0.0] * 20 + [95.0] * 5)
    summary = summarize(rows, [], 0.0, 34 * 60.0)
    (g,) = summary.gpus
    assert g.max_util_pct == 95.0
    assert g.memory_peak_bytes == 95 * GIB
    assert [(s.start_s, s.end_s) for s in g.idle_stretches] == [(600.0, 1740.0)]
    assert g.idle_seconds == 1140.0
    assert len(g.util_sparkline) == 48
    assert g.util_sparkline[0] == 90.0 and g.util_sparkline[-1] == 95.0


def test_a_gap_in_the_samples_is_not_idleness() -> None:
    """The monitor was not running for an hour: that hour is unknown, not idle."""
    rows = _rows([0.0] * 6, step=60.0) + _rows([0.0] * 6, start=3600.0 + 360.0, step=60.0)
    g = summarize(rows, [], 0.0, 8000.0, min_idle_s=240.0).gpus[0]
    assert len(g.idle_stretches) == 2
    assert g.idle_seconds == 600.0


def test_sampler_writes_history_hints_and_alerts(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite", retention_s=10**9)
    clock = FakeClock(1000.0)
    snaps = [snap(gpu(0, ts=1000.0 + i), gpu(1, ts=1000.0 + i, util_gpu_pct=0.0)) for i in range(6)]
    from gpuwise.monitor.alerts import AlertEngine, AlertsConfig

    sampler = Sampler(
        FakeProbe(snaps),
        history=store,
        history_every_s=2.0,
        clock=clock,
        alerts=AlertEngine.from_config(AlertsConfig(temperature_c=60, temperature_clear_c=50)),
    )
    for _ in range(6):
        sampler.tick()
        clock.advance(1.0)
    assert sorted({r.ts for r in store.samples(0)}) == [1000.0, 1002.0, 1004.0]
    events = {(e.kind, e.event_id, e.gpu) for e in store.events(0)}
    assert ("hint", "gpu_idle_while_peers_busy", 1) in events
    assert ("alert", "temperature", 0) in events
    # a hint is stored when it appears, not on every tick
    assert sum(1 for e in store.events(0) if e.kind == "hint") == 1
    store.close()
