"""`IdleTracker`: the idle policy's running answer, for readers outside the idle room (the exporter).

The exporter's background sampler feeds it snapshots and `gpuwise_idle_seconds` reads it, so the
exporter reports the same idleness `gpuwise idle` would act on. It lives here, beside the policy, so
the idle room never imports the monitor room (the CLI wires the two together).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gpuwise.gpu.sample import Snapshot
from gpuwise.idle.policy import IdlePolicy, Observation


class IdleTracker:
    """Feeds snapshots to an `IdlePolicy` and remembers its latest idle time.

    Thread-safe: the background sampler observes, scrapes read."""

    def __init__(self, policy: IdlePolicy, *, clock: Callable[[], float] = time.time) -> None:
        self._policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        self._idle_s: float | None = None

    def observe(self, snapshot: Snapshot) -> None:
        with self._lock:
            decision = self._policy.observe(Observation.from_snapshot(self._clock(), snapshot))
            self._idle_s = float(decision.idle_s)

    def seconds(self) -> float | None:
        """Seconds idle by the policy after the latest snapshot; None before the first one."""
        with self._lock:
            return self._idle_s
