"""What the report reads of the history, set against the data it rests on.

The report's search for each GPU's name looks at a bounded number of the newest samples: on a history
whose samples carry no name (a GPU lost for the whole window) it walked every row of the window, 3.8 s
of a 5.2 s report on a 90-day, 8-GPU history. Work is counted in SQLite virtual-machine steps (a progress
handler on the report's own connection), not seconds, so the test does not depend on the machine's load."""

from __future__ import annotations

import shlex
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuwise.monitor.history import HistoryStore
from gpuwise.report import reader
from gpuwise.report.reader import read_history
from gpuwise.run.ledger import LedgerStore, RunStart, entry_json

NOW = 1_795_000_000.0
ROWS = 40_000  # 8 GPUs x 5,000 samples 10 s apart (about 14 h)
_FILL = """
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :rows - 1)
INSERT INTO monitor_samples
SELECT :start + (i / 8) * 10, i % 8, NULL, :name, 50.0, NULL, NULL, NULL, NULL, NULL, NULL, 0 FROM n
"""


def _history(path: Path, name: str | None) -> Path:
    HistoryStore(path).close()  # the monitor's schema and its hourly rollups
    with sqlite3.connect(path) as db:
        db.execute(_FILL, {"rows": ROWS, "start": NOW - ROWS / 8 * 10, "name": name})
    return path


def _steps(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, set[str | None]]:
    """SQLite steps (in hundreds) the report's reading of the whole history took, and the names it found."""
    count = [0]
    opened: Callable[[Path], sqlite3.Connection] = reader.connect_read_only

    def counted(p: Path) -> sqlite3.Connection:
        db = opened(p)
        db.set_progress_handler(lambda: count.__setitem__(0, count[0] + 1) or 0, 100)
        return db

    monkeypatch.setattr(reader, "connect_read_only", counted)
    monkeypatch.setattr(reader, "_NAMES_SCAN", 4096, raising=False)  # under this history's 40,000 rows
    history = read_history(path, None, since=NOW - 86400, until=NOW)
    monkeypatch.undo()
    return count[0], {b.name for b in history.buckets or []}


def test_a_history_without_gpu_names_is_read_no_slower_than_one_with_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named_steps, named = _steps(_history(tmp_path / "named.sqlite", "NVIDIA H100 80GB HBM3"), monkeypatch)
    unnamed_steps, unnamed = _steps(_history(tmp_path / "unnamed.sqlite", None), monkeypatch)
    assert named == {"NVIDIA H100 80GB HBM3"} and unnamed == {None}
    # the named history's search ends at its first 4,096 rows, the unnamed one's after 4,096 rows looked at
    assert unnamed_steps < 1.5 * named_steps, (unnamed_steps, named_steps)


def test_a_runs_command_reads_as_the_ledger_writes_it(tmp_path: Path) -> None:
    """Quoted as a shell would take it, so the report's and the ledger's commands are the same text and
    can be pasted back into a shell."""
    argv = ["python", "-c", "import time; time.sleep(2)"]
    store = LedgerStore(tmp_path / "gpuwise.sqlite")
    store.start(RunStart("r", None, (), tuple(argv), NOW - 60, None, None, None, None, None, None))
    (entry,) = store.entries()
    store.close()
    history = read_history(tmp_path / "gpuwise.sqlite", None, since=NOW - 3600, until=NOW)
    (run,) = history.runs or []
    assert run.command == entry_json(entry)["command"] == shlex.join(argv)
