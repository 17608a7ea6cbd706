"""One `gpuwise run` per checkpoint directory.

Two runs in one directory (the same command started twice, or a relaunch while the first copy still runs)
write the same `step-N` folders over each other, upload the same names and delete each other's
checkpoints past `--keep`. So a run takes an exclusive flock on `<checkpoint dir>/.gpuwise-run.lock` (a
dot name: never a checkpoint) before it resumes or records anything, and a second run is refused (exit 2)
naming the first one's pids, which the file holds.

The lock's descriptor is also handed to the job, so that a job left running when gpuwise itself is killed
(kill -9) still holds it: the lock ends only when neither is alive, and the kernel ends it then, whatever
killed them. Where the file system has no flock (some network mounts), the run goes ahead unlocked with a
warning; without fcntl (Windows) there is no lock.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path

from gpuwise.errors import UsageError
from gpuwise.files import pid_alive
from gpuwise.locale import _

log = logging.getLogger("gpuwise.run")

LOCK_NAME = ".gpuwise-run.lock"
_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)
_UNLOCKED = "cannot %s %s (two runs in this directory are not prevented): %s"


class DirLock:
    """The held lock: `fd` goes to the job (`pass_fds`); `note` writes who holds it; `release` ends ours."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    def note(self, run_id: str, child_pid: int | None = None) -> None:
        """Write the holder's pids and run id into the file (what a refused second run names)."""
        if self.fd is None:
            return
        text = f"{os.getpid()} {child_pid if child_pid is not None else '-'} {run_id}\n".encode()
        with contextlib.suppress(OSError):  # the message is a courtesy; the lock is what counts
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text, 0)

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _holder(path: Path) -> tuple[str, str, str]:
    """(gpuwise pid, job pid, run id) as the holder wrote them; '?' where unreadable."""
    try:
        parts = path.read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        parts = []
    parts += ["?"] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def _alive(pid: str) -> bool:
    """A pid as the lock file holds it ('-' or '?' when unknown)."""
    return pid.isdigit() and pid_alive(int(pid))


def _orphaned(directory: Path, path: Path, run_id: str) -> UsageError:
    """The holder's gpuwise and job are gone, yet the lock is held: a process the job started in the
    background inherited it (a shell's `cmd &`) and still runs in that directory."""
    return UsageError(
        _("Another gpuwise run is using the checkpoint directory {path}").format(path=directory),
        why=_(
            "run {run_id} has ended, but a process it started in the background still holds the directory's "
            "lock and may still write there"
        ).format(run_id=run_id),
        fix=_(
            "find it with `fuser -v {lock}` (or `lsof {lock}`) and stop it, or give this run its own "
            "--checkpoint-dir"
        ).format(lock=path),
    )


def claim(directory: Path, run_id: str) -> DirLock:
    """The checkpoint directory's lock, or UsageError (exit 2) when another run holds it."""
    path = directory / LOCK_NAME
    try:
        import fcntl
    except ImportError:  # Windows: no flock
        return DirLock(path, None)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        log.warning(_UNLOCKED, "create", path, exc.strerror)
        return DirLock(path, None)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in _BUSY:
            log.warning(_UNLOCKED, "lock", path, exc.strerror)
            return DirLock(path, None)
        pid, job, other = _holder(path)
        if not any(_alive(x) for x in (pid, job)):
            raise _orphaned(directory, path, other) from None
        raise UsageError(
            _("Another gpuwise run is using the checkpoint directory {path}").format(path=directory),
            why=_(
                "run {run_id} (gpuwise pid {pid}, job pid {job}) holds it; two jobs in one directory "
                "would write, upload and delete each other's checkpoints"
            ).format(run_id=other, pid=pid, job=job),
            fix=_(
                "wait for that run to end or stop it (kill {job}); to run a second job at the same time, "
                "give it its own --checkpoint-dir"
            ).format(job=job if job not in ("-", "?") else pid),
        ) from None
    lock = DirLock(path, fd)
    lock.note(run_id)
    return lock
