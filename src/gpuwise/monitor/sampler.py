"""The sampler: one tick reads the probe (and the host), updates the window, hints, alerts, history
and recording. Used by the live view, `--once`, and the exporter's background loop.

The clock, the host reader and every sink are injected, so tests drive ticks with a fake clock and a
fake probe. Logs, never prints.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from gpuwise.errors import GpuwiseError
from gpuwise.gpu.sample import Snapshot, value_or_none
from gpuwise.monitor.alerts import AlertDelivery, AlertEngine, AlertEvent
from gpuwise.monitor.hints import Hint, HintThresholds, compute_hints
from gpuwise.monitor.history import HistoryStore
from gpuwise.monitor.host import HostReader, HostStats
from gpuwise.monitor.record import Recorder
from gpuwise.monitor.source import Probe

log = logging.getLogger("gpuwise.monitor")


@dataclass(frozen=True)
class Tick:
    snapshot: Snapshot
    host: HostStats | None
    hints: list[Hint]
    events: list[AlertEvent]
    util_history: dict[int, list[float | None]]
    firing: list[tuple[str, int]]


@dataclass
class Sampler:
    probe: Probe
    host_reader: HostReader | None = None
    window: int = 30  # snapshots the hints look at (30 s at the default 1 s interval)
    spark_len: int = 60
    thresholds: HintThresholds = field(default_factory=HintThresholds)
    alerts: AlertEngine | None = None
    delivery: AlertDelivery | None = None
    history: HistoryStore | None = None
    history_every_s: float = 5.0
    recorder: Recorder | None = None
    observers: list[Callable[[Snapshot], None]] = field(default_factory=list)  # e.g. the idle tracker
    clock: Callable[[], float] = time.time
    _snaps: deque[Snapshot] = field(default_factory=deque)
    _hosts: deque[HostStats] = field(default_factory=deque)
    _utils: dict[int, deque[float | None]] = field(default_factory=dict)
    _active_hints: set[tuple[str, int | None]] = field(default_factory=set)
    _last_history_s: float = float("-inf")
    _last_snapshot: Snapshot | None = None
    last_hints: list[Hint] = field(default_factory=list)  # read by the exporter (atomic swap)
    record_error: GpuwiseError | None = None  # why the last recording write failed; None while it works

    def tick(self) -> Tick:
        snapshot = self.probe.read()
        host = self.host_reader.read() if self.host_reader is not None else None
        self._snaps.append(snapshot)
        while len(self._snaps) > self.window:
            self._snaps.popleft()
        if host is not None:
            self._hosts.append(host)
            while len(self._hosts) > self.window:
                self._hosts.popleft()
        for s in snapshot.samples:
            hist = self._utils.setdefault(s.index, deque(maxlen=self.spark_len))
            hist.append(None if s.lost else value_or_none(s.util_gpu_pct))
        hints = compute_hints(list(self._snaps), list(self._hosts), self.thresholds)
        self.last_hints = hints
        now = self.clock()
        events: list[AlertEvent] = []
        # A replay serves the same snapshot until its next sample is due; count it once.
        fresh = snapshot is not self._last_snapshot
        self._last_snapshot = snapshot
        if self.alerts is not None and fresh:
            events = self.alerts.update(snapshot)
            for ev in events:
                if self.delivery is not None:
                    self.delivery.deliver(ev)
        if self.recorder is not None and fresh:
            self._record(snapshot, host)
        for observe in self.observers:
            observe(snapshot)
        if self.history is not None:
            self._to_history(snapshot, hints, events, now, fresh)
        return Tick(
            snapshot=snapshot,
            host=host,
            hints=hints,
            events=events,
            util_history={i: list(h) for i, h in self._utils.items()},
            firing=self.alerts.firing() if self.alerts is not None else [],
        )

    def _record(self, snapshot: Snapshot, host: HostStats | None) -> None:
        assert self.recorder is not None
        try:
            self.recorder.write(snapshot.samples, host)
        except GpuwiseError as exc:
            # A full disk must not stop the view; say so when it starts and when it ends, not every tick.
            if self.record_error is None:
                log.error("%s", exc.render())
            self.record_error = exc
        else:
            if self.record_error is not None:
                log.warning("recording to %s resumed", self.recorder.path)
            self.record_error = None

    def _to_history(
        self, snapshot: Snapshot, hints: list[Hint], events: list[AlertEvent], now: float, fresh: bool
    ) -> None:
        assert self.history is not None
        try:
            if fresh and now - self._last_history_s >= self.history_every_s:
                self._last_history_s = now
                self.history.add_snapshot(snapshot)
            active = {(h.id, h.gpu) for h in hints}
            # Events carry the samples' own time (a replay's clock), like the sample rows.
            ts = max((s.timestamp_s for s in snapshot.samples), default=now)
            for h in hints:
                if (h.id, h.gpu) not in self._active_hints:  # store a hint when it appears, not every tick
                    self.history.add_event(ts, "hint", h.gpu, h.id, h.severity, h.message)
            self._active_hints = active
            for ev in events:
                self.history.add_event(ev.timestamp_s, "alert", ev.gpu, ev.rule, ev.state, ev.message)
            self.history.prune(now)
        except GpuwiseError as exc:
            # History is a side channel: losing it must not stop the live view or the exporter.
            log.error("%s", exc.render())


def ticks(
    *,
    interval_s: float,
    stop: threading.Event,
    max_ticks: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[int]:
    """Yield the tick number every `interval_s` until `stop` is set (or `max_ticks` ticks). A loop that falls
    behind (a slow probe) skips ahead instead of bursting to catch up."""
    done = 0
    next_at = clock()
    while not stop.is_set() and (max_ticks is None or done < max_ticks):
        yield done
        done += 1
        next_at += interval_s
        delay = next_at - clock()
        if delay < 0:
            next_at = clock()
            delay = 0
        if max_ticks is not None and done >= max_ticks:
            break
        stop.wait(delay)


def run_loop(
    sampler: Sampler,
    *,
    interval_s: float,
    on_tick: Callable[[Tick], None] | None = None,
    stop: threading.Event | None = None,
    max_ticks: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Tick every `interval_s` until `stop` is set (or `max_ticks` ticks); returns the ticks done."""
    done = 0
    for _ in ticks(interval_s=interval_s, stop=stop or threading.Event(), max_ticks=max_ticks, clock=clock):
        try:
            tick = sampler.tick()
        except GpuwiseError as exc:
            log.error("reading the GPUs failed: %s", exc.render())
        else:
            if on_tick is not None:
                on_tick(tick)
        done += 1
    return done
