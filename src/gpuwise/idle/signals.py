"""Signal gatherers (the edge): what besides the GPUs says someone is using the machine.

Each gatherer returns one `Signal` per observation: "active", "quiet" or "unknown" (counts as busy), with
`last_active_s` when the source knows when it was last used. They read the system through injected
callables so tests feed them recorded data:

* gpu_processes — CPU time (with children: data-loader workers) and read/write chars (files, pipes and
  sockets: /proc/PID/io rchar/wchar) of the processes that hold GPU memory; a CPU-bound evaluation or
  a job downloading its next shard is busy although its GPU sits at 0 %.
* ssh — remote logins from utmp; each counts from its terminal's last input (the tty's atime, as `w`
  shows it), so a forgotten terminal does not keep a machine forever.
* jupyter — the Jupyter server's /api/kernels (through gpuwise.httpclient, never through a proxy): a busy
  kernel is active; `last_activity` moves the clock.
* gpuwise_run — a `gpuwise run` job alive: a `*.pid` file under <data dir>/run whose pid exists.
* keepalive — a file whose mtime the user or a hook touches (`touch <data dir>/idle/keepalive`).
* host — CPU and network use of everything on the machine (gpuwise.idle.hostload): a download, a build
  or an upload with no GPU process.

psutil is imported inside the functions that need it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from gpuwise import httpclient
from gpuwise.errors import ConfigError
from gpuwise.files import pid_alive
from gpuwise.gpu.sample import Failed, NotSupported, Snapshot
from gpuwise.idle.hostload import HostActivity
from gpuwise.idle.message import Msg, join
from gpuwise.idle.policy import Signal
from gpuwise.idle.settings import IdleSettings
from gpuwise.locale import N_, _


class Gatherer(Protocol):
    name: str

    def gather(self, now: float, snapshot: Snapshot) -> Signal: ...


@dataclass(frozen=True)
class ProcCounters:
    cpu_s: float  # user + system, including children still alive
    io_chars: int | None  # rchar + wchar, None when not readable (another user's process)


def read_proc_counters(pid: int) -> ProcCounters | None:
    """CPU seconds and I/O chars of `pid` and its live children; None when the pid is not visible."""
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    cpu = 0.0
    io: int | None = 0
    for q in procs:
        try:
            t = q.cpu_times()
            cpu += t.user + t.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        try:
            c = q.io_counters()
            chars = getattr(c, "read_chars", c.read_bytes) + getattr(c, "write_chars", c.write_bytes)
            io = None if io is None else io + int(chars)
        except (psutil.NoSuchProcess, psutil.AccessDenied, AttributeError, NotImplementedError):
            if q is p:
                io = None
    return ProcCounters(cpu, io)


@dataclass
class GpuProcessActivity:
    cpu_pct: float = 10.0
    io_kib_per_s: float = 64.0
    read: Callable[[int], ProcCounters | None] = read_proc_counters
    name: str = "gpu_processes"
    _prev: dict[int, tuple[float, ProcCounters]] = field(default_factory=dict)

    def gather(self, now: float, snapshot: Snapshot) -> Signal:
        pids: set[int] = set()
        unknown_lists = 0
        for s in snapshot.samples:
            if isinstance(s.processes, NotSupported | Failed):
                unknown_lists += 1
                continue
            pids.update(p.pid for p in s.processes if p.kind != "graphics")
        if not pids:
            self._prev.clear()
            detail = (
                Msg(N_("no GPU processes")) if not unknown_lists else Msg(N_("GPU process list not reported"))
            )
            return Signal(self.name, "quiet", detail)
        busy: list[str] = []
        seen: dict[int, tuple[float, ProcCounters]] = {}
        hidden = 0
        for pid in sorted(pids):
            c = self.read(pid)
            if c is None:
                hidden += 1  # another PID namespace (a container): the GPU side still sees its memory
                continue
            seen[pid] = (now, c)
            prev = self._prev.get(pid)
            if prev is None or now <= prev[0]:
                continue
            dt = now - prev[0]
            cpu = 100.0 * max(0.0, c.cpu_s - prev[1].cpu_s) / dt
            if cpu >= self.cpu_pct:
                busy.append(Msg(N_("pid {pid} at {cpu:.0f}% CPU"), pid=pid, cpu=cpu))
            elif c.io_chars is not None and prev[1].io_chars is not None:
                kib_s = max(0, c.io_chars - prev[1].io_chars) / 1024 / dt
                if kib_s >= self.io_kib_per_s:
                    busy.append(Msg(N_("pid {pid} doing {rate:.0f} KiB/s of I/O"), pid=pid, rate=kib_s))
        self._prev = seen
        n = len(pids)
        what = Msg(N_("{n} GPU process") if n == 1 else N_("{n} GPU processes"), n=n)
        if busy:
            return Signal(self.name, "active", join("", [what, ": ", join(", ", busy)]))
        note = Msg(N_(" ({n} not visible here)"), n=hidden) if hidden else ""
        quiet = Msg(
            N_("{what} with CPU < {cpu:g}% and little I/O{note}"), what=what, cpu=self.cpu_pct, note=note
        )
        return Signal(self.name, "quiet", quiet)


@dataclass(frozen=True)
class Login:
    user: str
    terminal: str | None
    host: str | None


def read_logins() -> list[Login]:
    import psutil

    return [Login(u.name, u.terminal, u.host) for u in psutil.users()]


@dataclass
class SshSessions:
    users: Callable[[], Sequence[Login]] = read_logins
    tty_atime: Callable[[str], float] = lambda term: Path("/dev", term).stat().st_atime
    name: str = "ssh"

    def gather(self, now: float, snapshot: Snapshot) -> Signal:  # noqa: ARG002 - the Gatherer protocol
        try:
            remote = [u for u in self.users() if u.host and u.host not in ("localhost", ":0", ":0.0")]
        except Exception as exc:
            return Signal(self.name, "unknown", Msg(N_("cannot list logins: {reason}"), reason=str(exc)))
        if not remote:
            return Signal(self.name, "quiet", Msg(N_("no SSH sessions")))
        latest: float | None = None
        for u in remote:
            if not u.terminal:
                return Signal(
                    self.name, "active", Msg(N_("SSH session of {user} without a terminal"), user=u.user)
                )
            try:
                t = self.tty_atime(u.terminal)
            except OSError:
                unread = Msg(N_("cannot read the terminal of {user}'s SSH session"), user=u.user)
                return Signal(self.name, "unknown", unread)
            latest = t if latest is None else max(latest, t)
        who = ", ".join(sorted({u.user for u in remote}))
        ago = (
            ""
            if latest is None
            else Msg(N_(", last input {minutes:.0f} min ago"), minutes=max(0.0, now - latest) / 60)
        )
        return Signal(
            self.name,
            "quiet",
            Msg(
                N_("{n} SSH session ({who}{ago})")
                if len(remote) == 1
                else N_("{n} SSH sessions ({who}{ago})"),
                n=len(remote),
                who=who,
                ago=ago,
            ),
            last_active_s=latest,
        )


def _iso_to_epoch(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


# A kernel list is ~1 KB per kernel; a larger answer is not a Jupyter server's.
_KERNELS_MAX_BYTES = 5_000_000


def fetch_json(url: str, headers: dict[str, str], timeout_s: float) -> Any:
    """GET a JSON document. HttpError when there is no 2xx answer, ValueError when it is not JSON."""
    answer = httpclient.request(
        "GET", url, headers=headers, timeout_s=timeout_s, max_bytes=_KERNELS_MAX_BYTES, use_proxy=False
    )  # a local server: no proxy
    if not answer.ok:
        raise httpclient.HttpError(httpclient.redact_url(url), f"HTTP {answer.status}")
    return json.loads(answer.body)


@dataclass
class JupyterKernels:
    url: str
    token: str | None = None
    fetch: Callable[[str, dict[str, str], float], Any] = fetch_json
    timeout_s: float = 5.0
    name: str = "jupyter"

    def gather(self, now: float, snapshot: Snapshot) -> Signal:  # noqa: ARG002 - the Gatherer protocol
        headers = {"Authorization": f"token {self.token}"} if self.token else {}
        try:
            kernels = self.fetch(self.url.rstrip("/") + "/api/kernels", headers, self.timeout_s)
        except (httpclient.HttpError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return Signal(
                self.name, "unknown", Msg(N_("Jupyter server did not answer: {reason}"), reason=str(reason))
            )
        if not isinstance(kernels, list):
            return Signal(self.name, "unknown", Msg(N_("Jupyter /api/kernels did not return a list")))
        if not kernels:
            return Signal(self.name, "quiet", Msg(N_("no Jupyter kernels")))
        busy = [k for k in kernels if isinstance(k, dict) and k.get("execution_state") == "busy"]
        if busy:
            return Signal(self.name, "active", Msg(N_("{n} Jupyter kernel(s) busy"), n=len(busy)))
        times = [_iso_to_epoch(str(k.get("last_activity", ""))) for k in kernels if isinstance(k, dict)]
        known = [t for t in times if t is not None]
        if len(known) < len(kernels):
            return Signal(self.name, "unknown", Msg(N_("a Jupyter kernel without last_activity")))
        latest = max(known)
        return Signal(
            self.name,
            "quiet",
            Msg(
                N_("{n} idle Jupyter kernel(s), last activity {minutes:.0f} min ago"),
                n=len(kernels),
                minutes=max(0.0, now - latest) / 60,
            ),
            last_active_s=latest,
        )


@dataclass
class GpuwiseRunJobs:
    """`gpuwise run` writes <data dir>/run/<run id>@<gpuwise pid>.pid (`<run id>.pid` before) holding the
    job's pid while it runs; the job is named by its run id."""

    run_dir: Path
    alive: Callable[[int], bool] = pid_alive
    name: str = "gpuwise_run"

    def gather(self, now: float, snapshot: Snapshot) -> Signal:  # noqa: ARG002 - the Gatherer protocol
        try:
            files = sorted(self.run_dir.glob("*.pid")) if self.run_dir.is_dir() else []
        except OSError as exc:
            return Signal(
                self.name,
                "unknown",
                Msg(N_("cannot list {path}: {reason}"), path=str(self.run_dir), reason=exc.strerror),
            )
        live: list[str] = []
        for f in files:
            try:
                pid = int(f.read_text(encoding="utf-8").split()[0])
            except (OSError, ValueError, IndexError):
                return Signal(self.name, "unknown", Msg(N_("unreadable pid file {name}"), name=f.name))
            if self.alive(pid):
                live.append(f"{f.stem.partition('@')[0]} (pid {pid})")
        if live:
            return Signal(self.name, "active", Msg(N_("gpuwise run job alive: {jobs}"), jobs=", ".join(live)))
        return Signal(self.name, "quiet", Msg(N_("no gpuwise run job")))


@dataclass
class KeepAliveFile:
    path: Path
    name: str = "keepalive"

    def gather(self, now: float, snapshot: Snapshot) -> Signal:  # noqa: ARG002 - the Gatherer protocol
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return Signal(
                self.name, "quiet", Msg(N_("keep-alive file {path} not touched"), path=str(self.path))
            )
        except OSError as exc:
            unread = Msg(
                N_("cannot stat keep-alive file {path}: {reason}"), path=str(self.path), reason=exc.strerror
            )
            return Signal(self.name, "unknown", unread)
        ago = max(0.0, now - mtime) / 60
        touched = Msg(N_("keep-alive touched {minutes:.0f} min ago"), minutes=ago)
        return Signal(self.name, "quiet", touched, last_active_s=mtime)


def gatherers_for(settings: IdleSettings, data_dir: Path) -> list[Gatherer]:
    """The gatherers `settings.signals` names, in that order. ConfigError when the Jupyter token file
    cannot be read."""
    out: list[Gatherer] = []
    for name in settings.signals:
        if name == "gpu_processes":
            out.append(GpuProcessActivity(settings.process_cpu_pct, settings.process_io_kib_per_s))
        elif name == "ssh":
            out.append(SshSessions())
        elif name == "jupyter":
            assert settings.jupyter_url is not None  # IdleSettings.validate requires it with this signal
            out.append(JupyterKernels(settings.jupyter_url, _jupyter_token(settings.jupyter_token_file)))
        elif name == "gpuwise_run":
            out.append(GpuwiseRunJobs(data_dir / "run"))
        elif name == "keepalive":
            out.append(KeepAliveFile(settings.keepalive_path(data_dir)))
        elif name == "host":
            out.append(HostActivity(settings.host_cpu_pct, settings.host_net_kib_per_s))
    return out


def _jupyter_token(token_file: str | None) -> str | None:
    if not token_file:
        return None
    try:
        return Path(token_file).expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(
            _("cannot read jupyter_token_file {path}: {reason}").format(path=token_file, reason=exc.strerror),
            fix=_("point jupyter_token_file at a file holding the Jupyter server's token"),
        ) from exc
    except UnicodeDecodeError as exc:  # a binary file given by mistake: bad input, not a traceback
        raise ConfigError(
            _("jupyter_token_file {path} is not a text file").format(path=token_file),
            why=_("a Jupyter token is a line of text"),
            fix=_("point jupyter_token_file at a file holding the Jupyter server's token"),
        ) from exc


def gather_all(gatherers: Iterable[Gatherer], now: float, snapshot: Snapshot) -> list[Signal]:
    """Every gatherer's signal; a gatherer that raises gives an "unknown" signal (counted busy)."""
    out: list[Signal] = []
    for g in gatherers:
        try:
            out.append(g.gather(now, snapshot))
        except Exception as exc:
            out.append(Signal(g.name, "unknown", f"{type(exc).__name__}: {exc}"))
    return out


def now_s() -> float:
    return time.time()
