"""Host facts next to the GPU samples: CPU, I/O wait, RAM, disk and network rates (psutil, an edge).

`HostStats` is plain data the hints read; `HostReader` turns psutil's cumulative counters into rates
between two reads. psutil is imported inside the reader so importing this module stays cheap.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_MIN_CPU_INTERVAL_S = 0.25


@dataclass(frozen=True)
class HostStats:
    """One look at the host. Rates are averages since the previous read (None on the first read)."""

    timestamp_s: float
    cpu_pct: float | None = None  # all cores together, 0-100
    iowait_pct: float | None = None  # share of CPU time waiting for I/O (Linux only), 0-100
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    disk_read_bytes_per_s: float | None = None
    disk_write_bytes_per_s: float | None = None
    net_rx_bytes_per_s: float | None = None
    net_tx_bytes_per_s: float | None = None


class HostReader:
    """Reads host stats with psutil; call `read()` once per sample."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        import psutil

        self._psutil: Any = psutil
        self._clock = clock
        self._last: tuple[float, Any, Any] | None = None
        # Prime cpu_times_percent so the first real read covers the interval since now; a read sooner
        # than _MIN_CPU_INTERVAL_S after priming would be noise, so its CPU figures stay unknown.
        psutil.cpu_times_percent(interval=None)
        self._primed_at: float | None = clock()

    def read(self) -> HostStats:
        ps = self._psutil
        now = self._clock()
        cpu = ps.cpu_times_percent(interval=None)
        cpu_pct: float | None = max(0.0, min(100.0, 100.0 - float(cpu.idle)))
        iowait = getattr(cpu, "iowait", None)
        if self._primed_at is not None and now - self._primed_at < _MIN_CPU_INTERVAL_S:
            cpu_pct = iowait = None
        self._primed_at = None
        mem = ps.virtual_memory()
        disk = _safe(ps.disk_io_counters)
        net = _safe(ps.net_io_counters)
        rates: dict[str, float | None] = dict.fromkeys(("dr", "dw", "nr", "nt"))
        if self._last is not None:
            last_t, last_disk, last_net = self._last
            dt = now - last_t
            if dt > 0:
                if disk is not None and last_disk is not None:
                    rates["dr"] = max(0.0, (disk.read_bytes - last_disk.read_bytes) / dt)
                    rates["dw"] = max(0.0, (disk.write_bytes - last_disk.write_bytes) / dt)
                if net is not None and last_net is not None:
                    rates["nr"] = max(0.0, (net.bytes_recv - last_net.bytes_recv) / dt)
                    rates["nt"] = max(0.0, (net.bytes_sent - last_net.bytes_sent) / dt)
        self._last = (now, disk, net)
        return HostStats(
            timestamp_s=now,
            cpu_pct=cpu_pct,
            iowait_pct=None if iowait is None else float(iowait),
            memory_used_bytes=int(mem.total - mem.available),
            memory_total_bytes=int(mem.total),
            disk_read_bytes_per_s=rates["dr"],
            disk_write_bytes_per_s=rates["dw"],
            net_rx_bytes_per_s=rates["nr"],
            net_tx_bytes_per_s=rates["nt"],
        )


def _safe(fn: Callable[[], Any]) -> Any:
    # Containers without /proc/diskstats make psutil raise or return None; the rate is then unknown.
    try:
        return fn()
    except (OSError, RuntimeError):
        return None
