"""The exporter's background sampler, kept alive and watched, so a fault shows on /metrics.

`run_watched()` ticks the sampler like `sampler.run_loop` but survives any exception a tick raises
(a failing probe, a broken alert command, a full disk under the history database), and records
each tick's outcome in a `SamplerHealth` that the collector serves as `gpuwise_up`,
`gpuwise_sampler_errors_total` and `gpuwise_last_sample_age_seconds`. Without it, an exception
other than `GpuwiseError` ended the background thread: history and alerts silently stopped while
/metrics kept answering.

Some sinks report failure by logging rather than raising (the history store's errors, an alert
webhook or command that failed): an ERROR logged under `gpuwise` by the sampler's own thread during
a tick also marks that tick failed. That keeps those sinks' contract ("failures are logged, never
raised") and still makes their failures visible.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gpuwise.monitor.sampler import Sampler, ticks

log = logging.getLogger("gpuwise.monitor.exporter")


@dataclass(frozen=True)
class HealthView:
    """One consistent reading of `SamplerHealth`."""

    up: bool | None  # the last tick succeeded; None before the first tick ended
    errors_total: int  # ticks that failed (raised or logged an error) since start
    last_good_age_s: float  # since the last good tick, or since start when there was none yet


class SamplerHealth:
    """Outcome of the background sampler's ticks; thread-safe (the sampler writes, scrapes read)."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._up: bool | None = None
        self._errors = 0
        self._last_good_s = clock()  # until the first good tick, the age counts from start

    def record(self, ok: bool) -> None:
        with self._lock:
            self._up = ok
            if ok:
                self._last_good_s = self._clock()
            else:
                self._errors += 1

    def view(self) -> HealthView:
        with self._lock:
            age = max(0.0, self._clock() - self._last_good_s)
            return HealthView(up=self._up, errors_total=self._errors, last_good_age_s=age)


class _ThreadErrors(logging.Handler):
    """Counts ERROR (and worse) records logged by one thread."""

    def __init__(self, thread_id: int) -> None:
        super().__init__(level=logging.ERROR)
        self.thread_id = thread_id
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread_id:
            self.count += 1


def run_watched(
    sampler: Sampler,
    health: SamplerHealth,
    *,
    interval_s: float,
    stop: threading.Event,
    max_ticks: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Tick every `interval_s` until `stop` is set (or `max_ticks` ticks), recording each outcome.

    Returns the ticks done. Never raises from a tick: the exception is logged and counted."""
    errors = _ThreadErrors(threading.get_ident())
    root = logging.getLogger("gpuwise")
    root.addHandler(errors)
    done = 0
    reported: set[str] = set()
    try:
        for _ in ticks(interval_s=interval_s, stop=stop, max_ticks=max_ticks, clock=clock):
            before = errors.count
            try:
                sampler.tick()
            except Exception as exc:  # any fault: count it and keep sampling
                what = f"{type(exc).__name__}: {exc}"
                if what not in reported:  # a traceback the first time, one line after that
                    reported.add(what)
                    log.exception("background sampling failed (history and alerts miss this tick)")
                else:
                    log.error("background sampling failed again: %s", what)
                health.record(False)
            else:
                health.record(errors.count == before)
            done += 1
    finally:
        root.removeHandler(errors)
    return done
