"""A full disk and a killed writer, for monitor's two writers: the `--record` CSV and the SQLite history.

Red-team findings: a full disk during `--record` or a history write was a traceback; the standard is a
clear error, the live view going on, and nothing already written lost or left half-written. The full disk
is injected at our own interfaces (Recorder's raw write; SQLite's own "database or disk is full", reached
through a page limit), and the writer is killed with SIGKILL at random points in a real child process.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from monitor_fakes import FakeClock, FakeProbe, gpu, snap

from gpuwise.errors import StorageError
from gpuwise.gpu.smi_csv import read_query_csv
from gpuwise.monitor.history import HistoryStore
from gpuwise.monitor.record import Recorder
from gpuwise.monitor.sampler import Sampler

T0 = 1785556800.0


class DiskFillsAfter:
    """os.write that stores ``room`` more bytes, then fails with ENOSPC: mid-row, like a real full disk."""

    def __init__(self, room: int) -> None:
        self.room = room

    def __call__(self, fd: int, data: memoryview) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = os.write(fd, data[: self.room])
        self.room -= n
        return n


def test_a_full_disk_keeps_every_complete_row_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "rec.csv"
    rec = Recorder(path)
    rec.write((gpu(0, ts=T0), gpu(1, ts=T0)))
    before = path.read_bytes()
    rec._os_write = DiskFillsAfter(100)  # type: ignore[method-assign]  # the full disk, at our interface
    with pytest.raises(StorageError, match="No space left on device") as caught:
        rec.write((gpu(0, ts=T0 + 1), gpu(1, ts=T0 + 1)))
    assert "every earlier row is complete" in caught.value.render()
    assert path.read_bytes() == before  # the 100 bytes of a half row are gone again
    rec._os_write = os.write  # type: ignore[method-assign]  # space freed
    rec.write((gpu(0, ts=T0 + 2), gpu(1, ts=T0 + 2)))
    rec.close()
    assert sorted({s.timestamp_s for s in read_query_csv(path)}) == [T0, T0 + 2]


def test_the_live_view_goes_on_while_the_disk_is_full(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "rec.csv"
    rec = Recorder(path)
    snapshots = [snap(gpu(0, ts=T0 + i)) for i in range(6)]
    sampler = Sampler(FakeProbe(snapshots), recorder=rec, clock=FakeClock())
    sampler.tick()
    rec._os_write = DiskFillsAfter(0)  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="gpuwise.monitor"):
        for _ in range(3):
            assert sampler.tick().snapshot.samples  # each tick still shows the GPUs
        assert isinstance(sampler.record_error, StorageError)
        rec._os_write = os.write  # type: ignore[method-assign]
        sampler.tick()
    assert sampler.record_error is None
    rec.close()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("No space left" in m for m in messages) == 1  # once when it starts, not every tick
    assert any("resumed" in m for m in messages)
    assert [s.timestamp_s for s in read_query_csv(path)] == [T0, T0 + 4]


def test_a_full_history_database_keeps_its_rows_and_the_sampler_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "h.sqlite"
    store = HistoryStore(db)
    store.add_snapshot(snap(gpu(0, ts=T0)))
    # SQLite's own SQLITE_FULL ("database or disk is full"), as on a full disk: no page may be added
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StorageError, match="full"):
        store.add_snapshot(snap(*(gpu(i, ts=T0 + 1, name="x" * 3000) for i in range(8))))
    clock = FakeClock(T0 + 10)
    sampler = Sampler(FakeProbe([snap(gpu(0, ts=T0 + 10, name="y" * 5000))]), history=store, clock=clock)
    with caplog.at_level(logging.ERROR, logger="gpuwise.monitor"):
        assert sampler.tick().snapshot.samples
    assert any("full" in r.getMessage() for r in caplog.records)
    store.close()
    reopened = HistoryStore(db)
    assert [r.ts for r in reopened.samples(0)] == [T0]
    reopened.close()


def test_a_damaged_history_is_a_storage_error_on_read(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    store = HistoryStore(db)
    store._db.execute("DROP TABLE monitor_events")  # a file another tool damaged
    with pytest.raises(StorageError, match="Cannot read the history database"):
        store.events(0)
    store.close()


_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from monitor_fakes import gpu, snap
    from gpuwise.monitor.history import HistoryStore

    store = HistoryStore(__import__("pathlib").Path(sys.argv[1]))
    n = len(store.samples(0))
    while True:
        store.add_snapshot(snap(*(gpu(i, ts=1785556800.0 + n) for i in range(8))))
        store.add_event(1785556800.0 + n, "hint", 0, "input_bound", "warning", "x" * 200)
        n += 8
        print(n, flush=True)  # committed: add_snapshot returns after COMMIT
    """
)


@pytest.mark.timeout(120)
def test_a_killed_history_writer_never_loses_committed_rows(tmp_path: Path) -> None:
    """SIGKILL at random points while a child writes: the database always opens, and holds at least
    every row the child reported committed. 8 kills, about a second each."""
    db = tmp_path / "h.sqlite"
    rng = random.Random(20261201)
    here = str(Path(__file__).resolve().parent)
    committed = 0
    for _ in range(8):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db), here], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        first = child.stdout.readline()  # wait until it writes, then kill it at a random moment
        assert first, "the writer did not start"
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        reported = [int(x) for x in [first, *out.split()] if x.strip()]
        committed = max(committed, *reported)
        store = HistoryStore(db)  # opens (WAL recovery), never "database disk image is malformed"
        rows = len(store.samples(0))
        assert store._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        store.close()
        assert rows >= committed, (rows, committed)
        assert rows % 8 == 0  # no snapshot half-stored: one transaction each


def test_monitor_once_with_a_full_disk_says_so_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from monitor_fakes import EIGHT_GPU_CSV

    from gpuwise.cli.main import main

    monkeypatch.setattr(Recorder, "_os_write", staticmethod(DiskFillsAfter(0)))
    path = tmp_path / "rec.csv"
    code = main(["monitor", "--once", "--no-history", "--replay", str(EIGHT_GPU_CSV), "--record", str(path)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err
    assert "Cannot write the recording" in err and "To fix:" in err
    # the disk was full from the first byte: the file holds nothing, or the header alone, never a half row
    assert path.read_text().count("\n") <= 1
    assert path.read_text() in ("", path.read_text().split("\n")[0] + "\n")
