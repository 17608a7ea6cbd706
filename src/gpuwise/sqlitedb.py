"""Opening gpuwise's SQLite file (monitor history, run ledger) the one way: WAL so readers never block the
writer, a busy timeout so two long-running commands share it, and a StorageError that says what to do.
Standard library only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gpuwise.errors import StorageError
from gpuwise.locale import _


def open_db(
    path: Path, schema: str, *, what: str, fix: str, synchronous_normal: bool = False
) -> sqlite3.Connection:
    """Open (creating) the database at ``path`` and apply ``schema`` (idempotent CREATE … IF NOT EXISTS)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), timeout=5.0, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        if synchronous_normal:  # WAL + NORMAL: a power cut may lose the last commits, never corrupt the file
            db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(schema)
    except (sqlite3.Error, OSError) as exc:
        raise StorageError(
            _("Cannot open the {what} database {path}: {error}").format(what=what, path=path, error=exc),
            why=_("the directory is not writable, the disk is full, or the file is not an SQLite database"),
            fix=fix,
        ) from exc
    return db
