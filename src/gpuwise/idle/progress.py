"""Progress of a job as its files show it: `[idle] watch_paths` (logs, checkpoint directories, globs).

`WatchedPaths.last_change(now)` says when any watched file last changed: the newest modification time of
the files (a directory is searched, up to `MAX_FILES` files), or the moment a poll saw the set of files
or their sizes differ from the previous poll (a copy that kept old mtimes). A path that cannot be read
counts as a change now: missing data can only delay a hang verdict. So does a poll where no watched path
exists at all: a typo in `watch_paths` (or a log not written yet) leaves nothing to see progress in, and
"no progress" read from nothing let `stop_on_hang` stop a healthy job that ran flat at full utilization.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from gpuwise.locale import _

MAX_FILES = 20_000  # a checkpoint tree is tens of files; a dataset directory is not what to watch


@dataclass
class WatchedPaths:
    patterns: tuple[str, ...]
    _fingerprint: tuple[tuple[str, int], ...] | None = field(default=None, init=False)
    _changed_s: float | None = field(default=None, init=False)
    problem: str | None = field(default=None, init=False)  # why the latest poll counted as a change

    def _paths(self) -> list[Path]:
        out: list[Path] = []
        for pattern in self.patterns:
            expanded = str(Path(pattern).expanduser())
            if any(c in expanded for c in "*?["):  # a glob pattern (absolute or relative)
                out.extend(Path(p) for p in sorted(glob.glob(expanded)))  # noqa: PTH207 - absolute patterns
            else:
                out.append(Path(expanded))
        return out

    def _scan(self) -> tuple[float | None, tuple[tuple[str, int], ...]]:
        newest: float | None = None
        seen: list[tuple[str, int]] = []

        def add(path: Path) -> None:
            nonlocal newest
            st = path.stat()
            newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
            seen.append((str(path), st.st_size))

        for path in self._paths():
            if not path.exists():
                continue
            add(path)
            if path.is_dir():
                for root, _dirs, files in os.walk(path, onerror=_raise):
                    add(Path(root))
                    for name in files:
                        add(Path(root, name))
                        if len(seen) > MAX_FILES:
                            raise OSError(f"more than {MAX_FILES} files under {path}")
        return newest, tuple(sorted(seen))

    def last_change(self, now: float) -> float | None:
        """When a watched path last changed; `now` when it cannot be told (see `problem`)."""
        try:
            newest, fingerprint = self._scan()
            self.problem = None
        except OSError as exc:
            self.problem = _("cannot read a watched path: {reason}").format(reason=exc.strerror or exc)
            self._changed_s = now
            self._fingerprint = None
            return now
        if not fingerprint:  # nothing watched exists: no evidence either way
            self.problem = _("no watched path exists ({patterns})").format(patterns=", ".join(self.patterns))
            self._changed_s = now
            self._fingerprint = None
            return now
        if self._fingerprint is not None and fingerprint != self._fingerprint:
            self._changed_s = now
        self._fingerprint = fingerprint
        times = [x for x in (newest, self._changed_s) if x is not None]
        return min(max(times), now) if times else None


def _raise(exc: OSError) -> None:
    raise exc
