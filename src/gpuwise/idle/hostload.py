"""The `host` signal: work on this machine that no GPU shows.

A job does not always hold a GPU while it works: a 140-GB model download before training, `pip install
flash-attn` compiling for an hour, a checkpoint upload started after the training process exited, an
evaluation or preprocessing step in a separate CPU-only process. Each is a live job with idle, empty GPUs,
and the GPU-process signal (`signals.GpuProcessActivity`) cannot see it, so a 60-minute window stopped the
machine under it. This signal is active while the processes visible here use at least `cpu_pct` of one core
(their own CPU time plus that of children they reaped: a compiler's short-lived workers), or the network
interfaces other than loopback move at least `net_kib_per_s` in and out together.

What is left out, and why: the daemon's own process and its children (its probe, checks and hooks are not
the user's work); disk counters, which a container reads for the whole host, other tenants included. In a
container the process list is the container's own and the network counters its own namespace's, so other
tenants never keep it up; with host networking they are the host's, and busy neighbours can only delay a
stop. A reading that fails is "unknown" (counts as busy); the first reading has nothing to compare with and
is quiet.

The defaults: 50 % of one core is far above what an idle cloud machine's agents and shells use (a few %)
and below one busy core (a compiler, a CPU evaluation, a Python download client); 1 MiB/s is far above an
idle machine's monitoring traffic (a Prometheus scrape of 8 GPUs is ~37 KB per scrape) and below any
download or upload worth waiting for. psutil is imported inside the reader.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuwise.gpu.sample import Snapshot
from gpuwise.idle.message import Msg, join
from gpuwise.idle.policy import Signal
from gpuwise.locale import N_


@dataclass(frozen=True)
class HostCounters:
    """CPU seconds per visible process (with its reaped children) and since when it exists, and the bytes
    the non-loopback interfaces received and sent (None when not readable)."""

    cpu_s: dict[int, tuple[float, float]]  # pid -> (cpu seconds, create time)
    net_bytes: int | None
    names: dict[int, str] = field(default_factory=dict)  # pid -> process name, to say who keeps it busy


def read_host_counters(own_pid: int | None = None) -> HostCounters:
    """Every visible process except `own_pid` (default: this one) and its descendants, and the network."""
    import psutil

    me = os.getpid() if own_pid is None else own_pid
    skip = {me}
    with contextlib.suppress(psutil.Error):
        skip.update(p.pid for p in psutil.Process(me).children(recursive=True))
    cpu: dict[int, tuple[float, float]] = {}
    names: dict[int, str] = {}
    for p in psutil.process_iter():
        if p.pid in skip:
            continue
        try:
            t = p.cpu_times()
            used = t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
            cpu[p.pid] = (float(used), float(p.create_time()))
            names[p.pid] = p.name()[:40]
        except psutil.Error:  # gone, a zombie, or not ours to read
            continue
    try:
        nics = psutil.net_io_counters(pernic=True)
        net: int | None = sum(
            c.bytes_recv + c.bytes_sent for name, c in nics.items() if not name.startswith("lo")
        )
    except (OSError, RuntimeError):
        net = None
    return HostCounters(cpu, net, names)


@dataclass
class HostActivity:
    cpu_pct: float = 50.0
    net_kib_per_s: float = 1024.0
    read: Callable[[], HostCounters] = read_host_counters
    name: str = "host"
    _prev: tuple[float, HostCounters] | None = field(default=None, init=False)

    def gather(self, now: float, snapshot: Snapshot) -> Signal:  # noqa: ARG002 - the Gatherer protocol
        try:
            counters = self.read()
        except Exception as exc:  # psutil cannot read /proc: unknown, which counts as busy
            return Signal(
                self.name, "unknown", Msg(N_("cannot read CPU and network use: {reason}"), reason=str(exc))
            )
        prev, self._prev = self._prev, (now, counters)
        if prev is None or now <= prev[0]:
            return Signal(self.name, "quiet", Msg(N_("host CPU and network: first reading")))
        dt = now - prev[0]
        used = 0.0
        top: tuple[float, int] = (0.0, 0)  # the busiest process: who to look at when the machine stays up
        for pid, (cpu, created) in counters.cpu_s.items():
            before = prev[1].cpu_s.get(pid)
            if before is not None and before[1] == created:
                mine = max(0.0, cpu - before[0])
            elif created >= prev[0]:  # started since the last reading: all its CPU time is new
                mine = cpu
            else:
                continue
            used += mine
            top = max(top, (mine, pid))
        cpu_pct = 100.0 * used / dt
        busy: list[str] = []
        if cpu_pct >= self.cpu_pct:
            name = counters.names.get(top[1])
            busy.append(
                Msg(N_("processes here at {cpu:.0f}% CPU"), cpu=cpu_pct)
                if name is None
                else Msg(
                    N_("processes here at {cpu:.0f}% CPU (most: {name}, pid {pid}, {own:.0f}%)"),
                    cpu=cpu_pct,
                    name=name,
                    pid=top[1],
                    own=100.0 * top[0] / dt,
                )
            )
        net_rate: float | None = None
        if counters.net_bytes is not None and prev[1].net_bytes is not None:
            net_rate = max(0, counters.net_bytes - prev[1].net_bytes) / 1024 / dt
            if net_rate >= self.net_kib_per_s:
                busy.append(Msg(N_("network at {rate:.0f} KiB/s"), rate=net_rate))
        if busy:
            moves = net_rate is not None and net_rate >= self.net_kib_per_s
            return Signal(self.name, "active", join(", ", busy), moves_data=moves)
        net = "?" if net_rate is None else f"{net_rate:.0f}"
        return Signal(
            self.name,
            "quiet",
            Msg(N_("processes here at {cpu:.0f}% CPU, network {net} KiB/s"), cpu=cpu_pct, net=net),
        )
