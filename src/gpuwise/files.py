"""Writing files a user names: refuse what is not a regular file, then write whole or append safely.

Every output path (`plan --html`, `monitor --record`, the idle state and unit, the catalog) goes through
here, so one policy holds everywhere:

- An existing device, named pipe, socket or directory at the path is refused as bad input
  (:class:`UnsafeOutputError`, exit 2): renaming over `/dev/null` would replace the device node (as root it
  breaks the host), and appending to a FIFO nobody reads blocks forever.
- A symlink is written *through*, to its resolved target, when every link on the way is owned by the
  running user (or root) and the target is an existing regular file; the link itself stays. A link
  owned by someone else is refused: that is the /tmp trick where another user
  plants `plan.html -> /etc/passwd` for root to overwrite (the rule Linux's fs.protected_symlinks applies
  in sticky directories, applied everywhere here). A dangling link and a loop are refused too.
- :func:`write_atomic` writes beside the (resolved) target and renames over it, so a reader sees the old
  file or the new one, never half; on any error, a full disk (ENOSPC) included, the temporary file is
  removed and the old file is untouched. A writer killed outright leaves its temporary file; the next
  write of the same target removes it (the writer's PID is in its name and no longer runs).
- :func:`open_append` opens with O_NOFOLLOW|O_NONBLOCK and checks the opened file is regular, so a path
  swapped for a FIFO or a device after the check cannot hang or feed it.

Standard library and gpuwise.errors only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from gpuwise.errors import UsageError
from gpuwise.locale import _

_MAX_LINK_HOPS = 40  # as the kernel's own limit (ELOOP after 40 links)


class UnsafeOutputError(UsageError):
    """An output path that is not a regular file (device, FIFO, socket, directory) or an unsafe symlink."""


def describe_mode(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return _("a directory")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return _("a device")
    if stat.S_ISFIFO(mode):
        return _("a named pipe (FIFO)")
    if stat.S_ISSOCK(mode):
        return _("a socket")
    return _("not a regular file")


def _refuse(path: Path, what: str, why: str, *, fix: str = "", label: str = "") -> UnsafeOutputError:
    return UnsafeOutputError(
        _("{path} is {what}").format(path=f"{label + ' ' if label else ''}{path}", what=what),
        why=why,
        fix=fix or _("give the path of a regular file (a new name is fine), e.g. in your home directory"),
    )


def resolve_output(path: Path, label: str = "") -> Path:
    """The regular file (existing or to be created) that writing to ``path`` must touch.

    ``label`` (an option name such as ``--html``) starts the error message. Raises UnsafeOutputError for
    a device, FIFO, socket or directory, and for a symlink that is dangling, loops or is owned by another
    user (see the module docstring). A missing path is returned as is.
    """
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    current = path
    for _hop in range(_MAX_LINK_HOPS):
        try:
            st = current.lstat()
        except FileNotFoundError:
            if current is path:
                return path  # a new file: the writer creates it
            raise _refuse(
                path,
                _("a symlink to {target}, which does not exist").format(target=current),
                _("gpuwise writes through a symlink only to an existing regular file"),
                fix=_("remove the link (rm {path}) or point it at an existing file").format(path=path),
                label=label,
            ) from None
        except OSError as exc:
            raise _refuse(
                path,
                _("not reachable ({reason})").format(reason=exc.strerror or exc),
                _("its path cannot be followed"),
                label=label,
            ) from exc
        if stat.S_ISLNK(st.st_mode):
            if euid is not None and st.st_uid not in (euid, 0):
                raise _refuse(
                    path,
                    _("a symlink owned by another user (uid {uid})").format(uid=st.st_uid),
                    _("writing through it would let that user choose which file gpuwise overwrites"),
                    fix=_("remove the link (rm {path}) or give another path").format(path=current),
                    label=label,
                )
            target = current.readlink()
            current = target if target.is_absolute() else current.parent / target
            continue
        kind = describe_mode(st.st_mode)
        if kind is None:
            return current
        shown = (
            kind if current is path else _("a symlink to {target}, {kind}").format(target=current, kind=kind)
        )
        raise _refuse(
            path,
            _("{kind}, not a regular file").format(kind=shown),
            _("writing there would replace or feed it instead of creating a file"),
            label=label,
        )
    raise _refuse(path, _("a symlink loop"), _("its links never reach a file"), label=label)


def write_atomic(path: Path, data: str | bytes, *, private: bool = False) -> None:
    """Write ``data`` to ``path`` atomically. ``private`` keeps the file owner-only (0600, as mkstemp makes
    it); otherwise it gets the mode a plain open() would give under the umask.

    Raises UnsafeOutputError (bad input) for a path that is not a regular file, OSError for a failed write;
    either way the old file is untouched and no temporary file is left behind."""
    target = resolve_output(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    # the PID in the name lets a later write tell a killed writer's leftover from a live writer's file
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    try:
        if not private:
            umask = os.umask(0)
            os.umask(umask)
            Path(tmp).chmod(0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            _write_all(fh, payload)
        # The path may have been swapped since it was checked: check again just before the rename.
        if resolve_output(path) != target:
            raise _refuse(path, "changed while it was written", "another process replaced it")
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _remove_dead_temps(target)


def _remove_dead_temps(target: Path) -> None:
    """Remove ``.<name>.<pid>.*.tmp`` files beside ``target`` whose writer is gone (killed mid-write):
    only our own (same owner), only when no process has that PID."""
    prefix = f".{target.name}."
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid_text = name[len(prefix) :].split(".", 1)[0]
            if not pid_text.isdigit() or int(pid_text) == os.getpid() or pid_alive(int(pid_text)):
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and (uid is None or st.st_uid == uid):
                with contextlib.suppress(OSError):
                    Path(entry.path).unlink()


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (another user's counts; a number no pid can be counts as alive, so
    nothing of it is removed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # exists, but another user's (EPERM); or not a pid at all
    return True


def _write_all(fh: IO[bytes], payload: bytes) -> None:
    """The one place bytes reach the disk (a test injects a full disk here)."""
    fh.write(payload)
    fh.flush()


_write_fd = os.write  # the one place appended bytes reach the disk (a test injects a full disk here)


def write_fd(fd: int, data: memoryview) -> int:
    """os.write through the module's injectable hook (for writers that wrap their own)."""
    return _write_fd(fd, data)


class Appender:
    """An append-only file that takes whole pieces or nothing: a write that fails part-way (a full disk)
    is cut back off, so the file never ends in half a line."""

    def __init__(self, fd: int, write: Callable[[int, memoryview], int] | None = None) -> None:
        self._fd = fd
        self._write = write  # None: the module's _write_fd, looked up at each write (tests inject there)

    @property
    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def append(self, text: str) -> None:
        """Append ``text`` (UTF-8) whole, or raise OSError with the file as it was."""
        view = memoryview(text.encode("utf-8"))
        start = self.size  # O_APPEND: every write lands at the end
        try:
            while view:
                view = view[(self._write or _write_fd)(self._fd, view) :]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def open_append(path: Path, *, write: Callable[[int, memoryview], int] | None = None) -> Appender:
    """Open ``path`` (resolved as :func:`resolve_output` does) for appending whole pieces of text.

    O_NOFOLLOW and O_NONBLOCK make the open itself safe even if the path changed after the check: a link
    is not followed, and a FIFO without a reader fails at once (ENXIO) instead of blocking; the opened
    file must then be regular. Raises UnsafeOutputError or OSError."""
    target = resolve_output(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK
    try:
        fd = os.open(target, flags, 0o666)
    except OSError as exc:
        if exc.errno in (getattr(os, "ENXIO", -1), getattr(os, "ELOOP", -1)):
            raise _refuse(path, "not a regular file", "it changed into a pipe or a link") from exc
        raise
    try:
        kind = describe_mode(os.fstat(fd).st_mode)
        if kind is not None:
            raise _refuse(path, f"{kind}, not a regular file", "appending there would never reach a file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return Appender(fd, write)


class UnreadableInputError(UsageError):
    """An input path that is not a regular file, or larger than its reader allows."""


def read_regular(path: Path, *, limit: int, label: str = "") -> bytes:
    """The bytes of the regular file at ``path`` (a symlink to one is fine), at most ``limit`` of them.

    A FIFO, device, socket or directory is refused before a byte is read (O_NONBLOCK: opening a FIFO
    without a writer returns at once instead of waiting), and a file over ``limit`` bytes is refused
    without reading more than ``limit + 1``: `/dev/zero` or a 10 GB file cannot hang or exhaust memory.
    Raises UnreadableInputError, or OSError when the file cannot be opened."""
    shown = f"{label + ' ' if label else ''}{path}"
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        kind = describe_mode(os.fstat(fd).st_mode)
        if kind is not None:
            raise UnreadableInputError(
                _("{file} is {kind}, not a regular file").format(file=shown, kind=kind),
                why=_("reading it could wait for a writer or never end"),
                fix=_("give a regular file (copy the data into one first)"),
            )
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise UnreadableInputError(
            _("{file} is larger than {size}").format(file=shown, size=_size(limit)),
            why=_("gpuwise reads such files whole and refuses ones this large"),
            fix=_("check that it is the right file"),
        )
    return b"".join(chunks)


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"
