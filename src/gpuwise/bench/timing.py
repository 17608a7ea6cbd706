"""Repeated timing with warm-up, a repetition count and a time cap: the median and the spread.

Every standard task is bounded twice: by steps (warm-up and repetitions) and by seconds (the cap), so a
slow machine returns fewer repetitions instead of running long. Pure: the clock and the device
synchronisation are injected.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Seconds per call over the timed repetitions (warm-up excluded)."""

    median_s: float
    min_s: float
    max_s: float
    repetitions: int
    total_s: float  # warm-up included: what the measurement cost in wall time

    @property
    def spread_pct(self) -> float:
        """(slowest - fastest) / median, in percent: how much the repetitions disagreed."""
        return 100.0 * (self.max_s - self.min_s) / self.median_s if self.median_s > 0 else 0.0


def _noop() -> None:
    return None


def time_calls(
    fn: Callable[[], object],
    *,
    warmup: int,
    repetitions: int,
    max_seconds: float,
    sync: Callable[[], None] = _noop,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Call `fn` `warmup` times untimed, then up to `repetitions` times timed, each between two `sync()`
    calls (a GPU runs asynchronously: without them the clock measures the launch, not the work).

    Stops early once `max_seconds` have passed since the start, warm-up included; at least one timed
    repetition always runs, so a result always exists (its spread is then 0 and says nothing).
    """
    start = clock()
    for _ in range(warmup):
        fn()
        if clock() - start > max_seconds / 2:  # warm-up may take half the cap at most
            break
    sync()
    times: list[float] = []
    while len(times) < max(1, repetitions):
        t0 = clock()
        fn()
        sync()
        times.append(clock() - t0)
        if clock() - start > max_seconds:
            break
    return Timing(
        median_s=statistics.median(times),
        min_s=min(times),
        max_s=max(times),
        repetitions=len(times),
        total_s=clock() - start,
    )
