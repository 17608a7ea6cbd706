"""The supervisor behind `gpuwise run` (the edge that owns the child process).

The command runs in its own process group with gpuwise's stdin, stdout and stderr (its output is streamed
as it is written, at no cost). Signals gpuwise receives are forwarded to that group; SIGTERM and a
preemption notice start the shutdown: the job gets SIGTERM and `grace_s` seconds to write a final
checkpoint (then SIGKILL), and the newest complete checkpoint is uploaded before gpuwise exits with the
job's exit code (128 + N when a signal N ended it, as a shell reports it).

While it runs, `<data dir>/run/<run id>@<gpuwise pid>.pid` holds gpuwise's pid, the job's and the run's
ledger row, which the idle stopper reads as "a job is running here". The name carries gpuwise's pid because
one run id can run twice at once (a launcher's id such as $SKYPILOT_TASK_ID shared by jobs in different
checkpoint directories): with one file per id, the first run to end deleted the file the other still
needed, and the idle stopper saw no job. gpuwise touches it every HEARTBEAT_S, so when gpuwise is killed
outright (kill -9, the OOM killer, a crash of the machine) the file is left with its last sign of life: the
next run of the same id closes the ledger row named in it at that time (`interrupted`).
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from gpuwise.errors import GpuwiseError, StorageError, UsageError
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.locale import _, child_environment
from gpuwise.run.dirlock import DirLock, claim
from gpuwise.run.manifest import Candidate, newest, run_id_from
from gpuwise.run.store import CheckpointStore, scan_local
from gpuwise.run.syncer import Syncer, SyncStats
from gpuwise.run.watchers import Notice, WatchThread, approve_azure_event

log = logging.getLogger("gpuwise.run")

FORWARDED = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
HEARTBEAT_S = 60.0  # how often the pid file's time is renewed: the error of an interrupted run's end


@dataclass(frozen=True)
class Interrupted:
    """A pid file left by a `gpuwise run` that was killed outright: when it was last alive, and the ledger
    row it had opened (None in a file without one: --no-ledger, or an older gpuwise)."""

    path: Path
    last_alive: float
    ledger_row: int | None


def pid_file_name(run_id: str, pid: int) -> str:
    """`<run id>@<pid>.pid`: `@` never occurs in a run id, so the name parses back."""
    return f"{run_id}@{pid}.pid"


def _interrupted_file(path: Path) -> Interrupted | None:
    try:
        fields = path.read_text(encoding="utf-8").split()
        pid = int(fields[0])
        mtime = path.stat().st_mtime
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    except PermissionError:  # alive, someone else's
        return None
    else:
        if pid != os.getpid():  # alive; our own pid in an old file is a reboot's reuse
            return None
    row = fields[2] if len(fields) > 2 else ""
    return Interrupted(path, mtime, int(row) if row.isdigit() else None)


def interrupted(pid_dir: Path, run_id: str) -> list[Interrupted]:
    """The pid files of runs of `run_id` whose gpuwise was killed outright (its pid no longer runs), with
    their last sign of life; [] when none is left. Files of runs still going are not listed."""
    paths = [pid_dir / f"{run_id}.pid"]  # the older name, one per run id, that an upgrade may leave
    with contextlib.suppress(OSError):
        paths += [
            p
            for p in pid_dir.glob(f"{glob.escape(run_id)}@*.pid")
            if p.name.removeprefix(f"{run_id}@").removesuffix(".pid").isdigit()
        ]
    return [found for p in paths if (found := _interrupted_file(p)) is not None]


@dataclass(frozen=True)
class RunOptions:
    command: tuple[str, ...]
    checkpoint_dir: Path
    pid_dir: Path
    sync_url: str | None = None
    endpoint_url: str | None = None
    region: str | None = None  # oss:// and cos://: the bucket's region
    resume: bool = False
    grace_s: float = 30.0
    keep: int = 3
    run_id: str | None = None
    poll_s: float = 2.0
    preemption: str = "auto"  # auto | aws | gcp | azure | off
    endpoints: MetadataEndpoints = field(default_factory=MetadataEndpoints)
    watch_poll_s: float = 1.0
    heartbeat_s: float = HEARTBEAT_S


@dataclass
class RunResult:
    run_id: str
    run_id_source: str
    exit_code: int
    resumed_from: str | None = None
    preemptions: int = 0
    notices: list[str] = field(default_factory=list)
    terminated_by: str | None = None
    checkpoints_uploaded: int = 0
    bytes_uploaded: int = 0
    newest_local: str | None = None
    upload_error: str | None = None
    flushed: bool = True
    elapsed_s: float = 0.0


def resolve_executable(command: tuple[str, ...], env: Mapping[str, str]) -> str:
    """The program's path, or UsageError (exit 2) naming the fix."""
    if not command:
        raise UsageError(
            _("No command to run"), fix=_("put the command after `--`: gpuwise run -- python train.py")
        )
    prog = command[0]
    if os.sep in prog:
        if not Path(prog).is_file():
            raise UsageError(
                _("Command {command} does not exist").format(command=repr(prog)), fix=_("check the path")
            )
        if not os.access(prog, os.X_OK):
            raise UsageError(
                _("Command {command} is not executable").format(command=repr(prog)),
                fix=_("chmod +x {command}, or run it via its interpreter").format(command=prog),
            )
        return prog
    found = shutil.which(prog, path=env.get("PATH", os.defpath))
    if found is None:
        raise UsageError(
            _("Command {command} not found on PATH").format(command=repr(prog)),
            fix=_("check the spelling, activate the environment that has it, or give its full path"),
        )
    return found


class Supervisor:
    def __init__(self, opts: RunOptions, env: Mapping[str, str] | None = None) -> None:
        self.opts = opts
        self.env = child_environment(env)  # the user's own locale variables, whatever --lang gpuwise got
        self.checkpoint_dir = opts.checkpoint_dir.expanduser().resolve()
        if opts.run_id:
            self.run_id, self.run_id_source = opts.run_id, "--run-id"
        else:
            self.run_id, self.run_id_source = run_id_from(self.env, opts.command, str(self.checkpoint_dir))
        self.store: CheckpointStore | None = None
        self._terminate = threading.Event()
        self._terminate_reason: str | None = None
        self._notices: list[Notice] = []
        self._syncer: Syncer | None = None
        self._lock: DirLock | None = None
        self._pid_file: Path | None = None
        self.ledger_row: int | None = None  # set by the caller that opened one: kept in the pid file

    # ----- before the job starts

    def open_store(self) -> None:
        """The --sync storage (a bad URL or a missing extra is bad input, exit 2); once."""
        if self.opts.sync_url and self.store is None:
            self.store = CheckpointStore(
                self.opts.sync_url, endpoint_url=self.opts.endpoint_url, region=self.opts.region
            )

    def find_resume(self) -> str | None:
        """The newest complete checkpoint, local or remote (downloaded when only remote). None if none."""
        try:
            local = scan_local(self.checkpoint_dir)
        except FileNotFoundError:
            local = []
        remote = []
        if self.store is not None:
            try:
                remote = self.store.checkpoints(self.run_id)
            except GpuwiseError as exc:
                log.warning("cannot list %s to resume from it: %s", self.opts.sync_url, exc.render())
        cands = [Candidate(m.name, m.step, m.created_at, "remote") for m in remote]
        cands += [c.candidate() for c in local]  # after the remote ones: a tie goes to the local copy
        best = newest(cands)
        if best is None:
            self._warn_other_runs()
            return None
        if best.where == "local":
            return str(next(c.path for c in local if c.name == best.name))
        assert self.store is not None
        m = next(m for m in remote if m.name == best.name)
        log.info(
            "downloading %s (%.1f MB) from %s to resume", m.name, m.total_bytes / 1e6, self.opts.sync_url
        )
        return str(self.store.download(m, self.checkpoint_dir))

    def _warn_other_runs(self) -> None:
        """--resume found nothing of this run: if --sync holds other runs, the likely cause is a run id that
        changed with the command line (a new flag, a new path): say so rather than start from scratch
        in silence."""
        if self.store is None:
            return
        try:
            others = [r for r in self.store.run_ids() if r != self.run_id]
        except GpuwiseError:
            return
        if others:
            shown = ", ".join(others[-5:]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            log.warning(
                "--resume: no complete checkpoint of run %s here or at %s, so the job starts from scratch; "
                "%s holds other runs: %s. The run id (from %s) changes with the command line and checkpoint "
                "directory: to continue one of those, give --run-id with its id",
                self.run_id,
                self.opts.sync_url,
                self.opts.sync_url,
                shown,
                self.run_id_source,
            )

    # ----- running

    def _on_notice(self, notice: Notice) -> None:
        self._notices.append(notice)
        if notice.kind == "terminate":
            log.warning("%s preemption notice: %s; stopping the job", notice.provider, notice.detail)
            self._request_terminate(f"{notice.provider} preemption notice")
        else:
            log.warning("%s %s: uploading the newest checkpoint now", notice.provider, notice.detail)
            if self._syncer is not None:
                threading.Thread(target=self._syncer.sync_once, daemon=True).start()

    def _request_terminate(self, reason: str) -> None:
        if self._terminate_reason is None:
            self._terminate_reason = reason
        self._terminate.set()

    def _write_pid_file(self, child_pid: int) -> Path | None:
        path = self.opts.pid_dir / pid_file_name(self.run_id, os.getpid())
        row = "-" if self.ledger_row is None else str(self.ledger_row)
        try:
            self.opts.pid_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{os.getpid()} {child_pid} {row}\n", encoding="utf-8")
        except OSError as exc:
            log.warning("cannot write %s (the idle stopper will not see this job): %s", path, exc.strerror)
            return None
        return path

    def _make_checkpoint_dir(self) -> None:
        try:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:  # a file where a folder belongs: the user's typo
            raise UsageError(
                _("--checkpoint-dir {path} is not a folder: it, or one above it, is a file").format(
                    path=self.checkpoint_dir
                ),
                fix=_("give --checkpoint-dir a folder (it is created when missing)"),
            ) from exc
        except OSError as exc:
            raise StorageError(
                _("Cannot create the checkpoint directory {path}: {error}").format(
                    path=self.checkpoint_dir, error=exc.strerror
                ),
                fix=_("give a --checkpoint-dir on a writable disk"),
            ) from exc

    def claim_checkpoint_dir(self) -> None:
        """Create the checkpoint directory and take its lock (UsageError when another run holds it)."""
        if self._lock is None:
            self._make_checkpoint_dir()
            self._lock = claim(self.checkpoint_dir, self.run_id)

    def release(self) -> None:
        """Let go of the checkpoint directory's lock (the job, if it still runs, keeps its own hold)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _child_env(self, resumed: str | None) -> dict[str, str]:
        """The job's environment: ours, plus where to write checkpoints, the run id and what to resume."""
        env = dict(self.env)
        env["GPUWISE_CHECKPOINT_DIR"] = str(self.checkpoint_dir)
        env["GPUWISE_RUN_ID"] = self.run_id
        env.pop("GPUWISE_RESUME_FROM", None)
        if resumed:
            env["GPUWISE_RESUME_FROM"] = resumed
            log.info("resuming from %s", resumed)
        return env

    def _make_syncer(self) -> Syncer:
        syncer = Syncer(
            self.checkpoint_dir, self.store, self.run_id, keep=self.opts.keep, poll_s=self.opts.poll_s
        )
        self._syncer = syncer
        if self.store is not None:
            with contextlib.suppress(GpuwiseError):
                syncer.remember_remote(self.store.checkpoints(self.run_id))
        return syncer

    def _spawn(self, exe: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        try:
            held = () if self._lock is None or self._lock.fd is None else (self._lock.fd,)
            # the job inherits the lock: killed with -9, gpuwise leaves a job that still holds it
            return subprocess.Popen(
                [exe, *self.opts.command[1:]], env=env, start_new_session=True, pass_fds=held
            )
        except OSError as exc:
            raise UsageError(
                _("Cannot start {command}: {error}").format(
                    command=repr(self.opts.command[0]), error=exc.strerror
                ),
                fix=_("check the command"),
            ) from exc

    def _install_signal_handlers(self, pgid: int) -> Callable[[int, FrameType | None], None]:
        """Forward the usual signals to the job's group; SIGTERM starts the shutdown. Returns the forwarder
        (it sends a signal to the group)."""

        def forward(signum: int, _frame: FrameType | None) -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signum)

        def on_term(_signum: int, _frame: FrameType | None) -> None:
            self._request_terminate("SIGTERM")

        for s in FORWARDED:
            signal.signal(s, forward)
        signal.signal(signal.SIGTERM, on_term)
        return forward

    def _start_watch(self) -> WatchThread | None:
        if self.opts.preemption == "off":
            return None
        watch = WatchThread(
            self.opts.preemption, self.opts.endpoints, self._on_notice, poll_s=self.opts.watch_poll_s
        )
        watch.start()
        return watch

    def _wait(self, proc: subprocess.Popen[bytes], forward: Callable[[int, FrameType | None], None]) -> int:
        """Wait for the job; once a shutdown is requested it gets SIGTERM, then SIGKILL after the grace.

        A thread blocks in waitpid, so this loop wakes five times a second to look at the shutdown flag;
        `Popen.wait(timeout=...)` polls instead, with sleeps of at most 50 ms (~45 wake-ups a second)."""
        exited = threading.Event()

        def reap() -> None:
            proc.wait()
            exited.set()

        threading.Thread(target=reap, name="gpuwise-job-wait", daemon=True).start()
        kill_at: float | None = None
        beat_at = time.monotonic() + self.opts.heartbeat_s
        while not exited.wait(0.2):
            if self._pid_file is not None and time.monotonic() >= beat_at:
                with contextlib.suppress(OSError):  # alive: what an interrupted run's row is closed at
                    os.utime(self._pid_file)
                beat_at = time.monotonic() + self.opts.heartbeat_s
            if self._terminate.is_set() and kill_at is None:
                log.warning(
                    "%s: sending SIGTERM to the job; %g s to write a final checkpoint",
                    self._terminate_reason,
                    self.opts.grace_s,
                )
                forward(signal.SIGTERM, None)
                kill_at = time.monotonic() + self.opts.grace_s
            if kill_at is not None and time.monotonic() >= kill_at:
                log.warning("the job did not exit within %g s: SIGKILL", self.opts.grace_s)
                forward(signal.SIGKILL, None)
                kill_at = float("inf")
        return proc.wait()

    def _approve_notices(self, flushed: bool) -> None:
        """Azure lets a VM approve its eviction early; that is safe only once the final checkpoint landed."""
        for n in self._notices:
            if n.event_id is None:
                continue
            if flushed:
                approve_azure_event(self.opts.endpoints, n.event_id)
            else:
                log.warning("not approving Azure event %s early: the checkpoint is only local", n.event_id)

    def _result(
        self, rc: int, resumed: str | None, st: SyncStats, flushed: bool, elapsed_s: float
    ) -> RunResult:
        return RunResult(
            run_id=self.run_id,
            run_id_source=self.run_id_source,
            exit_code=rc if rc >= 0 else 128 - rc,
            resumed_from=resumed,
            preemptions=sum(1 for n in self._notices if n.kind == "terminate"),
            notices=[f"{n.provider}: {n.detail}" for n in self._notices],
            terminated_by=self._terminate_reason,
            checkpoints_uploaded=st.checkpoints_uploaded,
            bytes_uploaded=st.bytes_uploaded,
            newest_local=st.newest_local,
            upload_error=st.last_error,
            flushed=flushed,
            elapsed_s=elapsed_s,
        )

    def run(self) -> RunResult:
        """Prepare (checkpoint dir, store, resume), start the job, supervise it, flush, and report."""
        started = time.monotonic()
        exe = resolve_executable(self.opts.command, self.env)
        self.claim_checkpoint_dir()
        try:
            return self._run_locked(exe, started)
        finally:
            self.release()

    def _run_locked(self, exe: str, started: float) -> RunResult:
        self.open_store()
        resumed = self.find_resume() if self.opts.resume else None
        env = self._child_env(resumed)
        syncer = self._make_syncer()
        previous = {s: signal.getsignal(s) for s in (*FORWARDED, signal.SIGTERM)}
        proc = self._spawn(exe, env)
        pid_file = self._pid_file = self._write_pid_file(proc.pid)
        if self._lock is not None:
            self._lock.note(self.run_id, proc.pid)
        forward = self._install_signal_handlers(proc.pid)
        watch = self._start_watch()
        syncer.start()
        try:
            rc = self._wait(proc, forward)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            if watch is not None:
                watch.stop()
        flushed = syncer.flush() if self.store is not None else True
        self._approve_notices(flushed)
        if pid_file is not None:
            pid_file.unlink(missing_ok=True)
        return self._result(rc, resumed, syncer.stats, flushed, time.monotonic() - started)
