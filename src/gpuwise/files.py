"""Writing a file whole: beside the target, then renamed over it, so a reader sees the old file or the new
one and never half of one (reports, state, caches, catalogs). Standard library only."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, *, private: bool = False) -> None:
    """Write ``data`` to ``path`` atomically. ``private`` keeps the file owner-only (0600, as mkstemp makes
    it); otherwise it gets the mode a plain open() would give under the umask. Raises OSError."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if not private:
            umask = os.umask(0)
            os.umask(umask)
            Path(tmp).chmod(0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
