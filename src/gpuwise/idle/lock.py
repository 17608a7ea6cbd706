"""One `gpuwise idle run` per data directory.

Two daemons on one machine (the systemd unit `gpuwise idle install` set up, and a second one started by hand
or by a re-run of a SkyPilot task's `run` section) warned and stopped twice, and overwrote each other's state
file every interval, so `gpuwise idle status` flipped between them and stop records were lost; a dry-run
rehearsal beside the real daemon made `idle status` say "(dry run)" while the real one was armed. So the
daemon holds an exclusive flock on `<data dir>/idle/daemon.lock` (holding its pid and host, for the message)
for as long as it runs; the kernel drops the lock when the process dies, so a crash never leaves it held.

A lock that cannot be taken for a reason other than another holder (a read-only or network filesystem without
locks, no fcntl on this OS) is logged and the daemon runs without it: the lock guards against a mistake, and
refusing to watch the machine over it would leave the machine billing unwatched. Standard library only.

A second daemon started by hand is refused (exit 2: a person sees why at once). The systemd unit's daemon
instead waits for the lock (`--wait-for-other`): refused, it was restarted every RestartSec with an error
in the journal each time, `idle install` said "enabled and started" meanwhile, and it took over only by
chance of timing. Waiting gives the same hand-over (the first one's state file carries its evidence over)
with one line in the log; exiting for good instead would leave the machine unwatched once the hand-started
daemon ends, which is what the unit is there to prevent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from gpuwise.errors import UsageError
from gpuwise.idle.unit import UNIT_NAME
from gpuwise.locale import _

log = logging.getLogger("gpuwise.idle")


LOCK_NAME = "daemon.lock"  # beside the state file (idle/state.py)


def lock_path(data_dir: Path) -> Path:
    return data_dir / "idle" / LOCK_NAME


def _holder(fd: int) -> str:
    try:
        words = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
    except OSError:
        words = []
    if len(words) >= 2 and words[0].isdigit():  # "pid host", as `daemon_lock` writes it
        return _("pid {pid} on {host}").format(pid=words[0], host=words[1][:100])
    return _("its pid is not known")


def _flock(fcntl: ModuleType, fd: int, wait: bool) -> None:
    """Take the exclusive lock on `fd`; BlockingIOError when another holds it and not `wait`."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if not wait:
            raise
        log.warning(
            "another gpuwise idle daemon is already running here (%s): waiting for it to exit, then "
            "taking over",
            _holder(fd),
        )
        fcntl.flock(fd, fcntl.LOCK_EX)  # SIGTERM (systemctl stop) still ends the wait: its default kills


@contextlib.contextmanager
def daemon_lock(path: Path, *, wait: bool = False) -> Iterator[None]:
    """Hold the daemon's lock while the block runs. UsageError (exit 2) when another daemon holds it, or,
    with `wait`, block until that one exits and take over (what the systemd unit does)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): no lock, as the catalog's
        yield
        return
    flags = (
        os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        log.warning("cannot open the daemon lock %s (%s): running without it", path, exc.strerror or exc)
        yield
        return
    try:
        try:
            _flock(fcntl, fd, wait)
        except BlockingIOError:
            raise UsageError(
                _("another gpuwise idle daemon is already running here ({holder})").format(
                    holder=_holder(fd)
                ),
                why=_(
                    "two daemons would warn and stop twice and overwrite each other's state file every "
                    "interval"
                ),
                fix=_(
                    "keep one: stop the other (`systemctl stop {unit}` if `gpuwise idle install` set it up), "
                    "or add --wait-for-other to take over when it exits; `gpuwise idle status` shows what "
                    "the running one decides"
                ).format(unit=UNIT_NAME),
            ) from None
        except OSError as exc:  # ENOLCK on a network filesystem without locks
            log.warning("cannot lock %s (%s): running without the one-daemon lock", path, exc.strerror or exc)
        else:
            with contextlib.suppress(OSError):  # the holder's name is only for the message
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def lock_held(path: Path) -> bool | None:
    """Whether a running daemon holds the lock at `path`: None when that cannot be told (no lock file, as
    before a daemon with the lock ever ran here; no flock; an unreadable file)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False
