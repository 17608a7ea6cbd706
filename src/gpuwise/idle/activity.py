"""The user's own activity checks: `[idle] activity_command` (exit 0 = busy) and `activity_url`
(HTTP 200 = busy), each with `activity_timeout_s`.

A check runs in a background thread, so a slow one never holds up the daemon's loop: each observation
reads the latest finished answer and starts the next check when none is running. Every way a check can
fail counts as busy (it can only delay a stop): the program cannot be started, it times out, it is killed
by a signal, it exits 126 or 127 (a shell's "cannot execute" and "not found"), the URL gives no answer, a
5xx, or 401/403/404/407/408/429 (the check does not reach the endpoint it was written for). Only a clear
answer is quiet: the command exits with another non-zero code, or the server answers another status.
Until the first check has finished, and when the latest answer is older than two timeouts plus the
sampling interval (a check stuck in a thread), the signal is "unknown": busy.

The command is split with shlex and run without a shell (the user wrote it; no shell is added), in its
own session so a timeout kills everything it started. Its output is never logged: a command line or a
URL may carry a token, so both are named, not shown (URLs through `redact_url`).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuwise import httpclient
from gpuwise.gpu.sample import Snapshot
from gpuwise.idle.message import Msg, join
from gpuwise.idle.policy import Signal
from gpuwise.locale import N_

# exit codes a POSIX shell uses for "found but not executable" and "not found": the check did not run
_CANNOT_RUN_EXITS = (126, 127)
# statuses that say the request did not reach the check the user wrote (auth, wrong path, throttling; a
# malformed or refused request such as Django's 400 for a Host not in ALLOWED_HOSTS, a route written for
# POST only (405), a server that wants another protocol (421, 426))
_FAILED_STATUSES = (400, 401, 403, 404, 405, 407, 408, 421, 426, 429)
_URL_MAX_BYTES = 64 * 1024  # the answer's body is not read for meaning; a check needs no more


@dataclass(frozen=True)
class CheckResult:
    """One finished check: "active" (busy), "quiet", or "unknown" (failed: counts as busy)."""

    state: str
    detail: str
    finished_s: float


def run_command(argv: list[str], timeout_s: float) -> tuple[str, str]:
    """Run `argv` (no shell) → (state, detail). Kills the whole session on timeout."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        return "unknown", Msg(
            N_("cannot start {program}: {reason}"), program=repr(argv[0]), reason=str(exc.strerror or exc)
        )
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        return "unknown", Msg(N_("timed out after {seconds:g} s"), seconds=timeout_s)
    if code == 0:
        return "active", Msg(N_("exit 0 (busy)"))
    if code < 0:
        return "unknown", Msg(N_("killed by signal {signal}"), signal=-code)
    if code in _CANNOT_RUN_EXITS:
        return "unknown", Msg(N_("exit {code} (the check could not run)"), code=code)
    return "quiet", Msg(N_("exit {code} (not busy)"), code=code)


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()  # the group is gone already or not ours: the child at least
    proc.wait()


def fetch_status(url: str, timeout_s: float) -> tuple[str, str]:
    """GET `url` → (state, detail): 200 busy, a failed request unknown, any other answer quiet."""
    try:
        answer = httpclient.request(
            "GET", url, timeout_s=timeout_s, max_bytes=_URL_MAX_BYTES, use_proxy=False
        )  # a check of this machine's own service: never through a proxy
    except httpclient.HttpError as exc:
        return "unknown", Msg(N_("no answer: {reason}"), reason=exc.reason)
    if answer.status == 200:
        return "active", Msg(N_("HTTP 200 (busy)"))
    if answer.status >= 500 or answer.status in _FAILED_STATUSES:
        return "unknown", Msg(N_("HTTP {status} (the check failed)"), status=answer.status)
    return "quiet", Msg(N_("HTTP {status} (not busy)"), status=answer.status)


def _start_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="gpuwise-idle-activity-check", daemon=True).start()


@dataclass
class ActivityCheck:
    """A gatherer that runs `check` in the background and reports its latest answer.

    `check` returns (state, detail); `start` runs a callable in the background (a daemon thread; tests
    pass one that runs it at once); `interval_s` is the daemon's sampling interval (for staleness)."""

    name: str
    what: str  # how the check is named in reasons ("activity_command", "activity_url <redacted>")
    check: Callable[[], tuple[str, str]]
    timeout_s: float
    interval_s: float = 30.0
    start: Callable[[Callable[[], None]], None] = _start_thread
    clock: Callable[[], float] = time.time
    _latest: CheckResult | None = field(default=None, init=False)
    _running: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _work(self) -> None:
        try:
            state, detail = self.check()
        except Exception as exc:  # a check that raises is a failed check: busy
            state, detail = "unknown", f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._latest = CheckResult(state, detail, self.clock())
            self._running = False

    def gather(self, now: float, snapshot: Snapshot) -> Signal:  # noqa: ARG002 - the Gatherer protocol
        with self._lock:
            start = not self._running
            self._running = True
        if start:
            try:
                self.start(self._work)
            except Exception as exc:  # no thread could be started: the check failed (busy)
                with self._lock:
                    self._running = False
                failed = Msg(N_("{what}: cannot start the check: {reason}"), what=self.what, reason=str(exc))
                return Signal(self.name, "unknown", failed)
        with self._lock:
            latest = self._latest
        if latest is None:
            return Signal(
                self.name, "unknown", Msg(N_("{what}: first check not finished yet"), what=self.what)
            )
        stale_s = 2 * self.timeout_s + self.interval_s
        if now - latest.finished_s > stale_s:
            return Signal(
                self.name,
                "unknown",
                Msg(
                    N_("{what}: no answer for {seconds:.0f} s (the check is stuck)"),
                    what=self.what,
                    seconds=now - latest.finished_s,
                ),
            )
        if latest.state == "active":
            return Signal(self.name, "active", join(": ", [self.what, latest.detail]))
        if latest.state == "quiet":
            return Signal(self.name, "quiet", join(": ", [self.what, latest.detail]))
        return Signal(self.name, "unknown", join(": ", [self.what, latest.detail]))


def activity_checks(
    command: str | None, url: str | None, timeout_s: float, interval_s: float
) -> list[ActivityCheck]:
    """The checks the settings name (none, one or both). `command` was validated by the settings."""
    out: list[ActivityCheck] = []
    if command:
        argv = shlex.split(command)
        out.append(
            ActivityCheck(
                "activity_command",
                "activity_command",
                lambda: run_command(argv, timeout_s),
                timeout_s,
                interval_s,
            )
        )
    if url:
        out.append(
            ActivityCheck(
                "activity_url",
                f"activity_url {httpclient.redact_url(url)}",
                lambda: fetch_status(url, timeout_s),
                timeout_s,
                interval_s,
            )
        )
    return out
