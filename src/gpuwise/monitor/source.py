"""Where the monitor's snapshots come from: the gpu room's probe (`gpuwise.gpu.probe.open_probe`).

`open_source()` is the one place monitor and exporter open a probe. While the gpu room's probe module
is not available it falls back to `SeriesProbe`, which serves a `--query-gpu` CSV time series (CONTRACTS
§4) in real time from its first sample, using the gpu room's CSV parser. Tests inject their own probes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from gpuwise.errors import GpuError
from gpuwise.gpu.sample import Sample, Snapshot


class Probe(Protocol):
    def read(self) -> Snapshot: ...

    def close(self) -> None: ...


class SeriesProbe:
    """Serves time-ordered snapshots in real time: the first `read()` gives the first snapshot, and each
    later read gives the last snapshot whose offset from the first is at most the time elapsed since
    the first read. With `loop`, the series starts again after its end (a gap of one median interval);
    without it the last snapshot is served from then on."""

    def __init__(
        self, snapshots: Sequence[Snapshot], *, clock: Callable[[], float] = time.time, loop: bool = False
    ) -> None:
        if not snapshots:
            raise ValueError("no snapshots to serve")
        self.snapshots = list(snapshots)
        self.clock = clock
        self.loop = loop
        t0 = _ts(self.snapshots[0])
        self.offsets = [_ts(s) - t0 for s in self.snapshots]
        gaps = sorted(b - a for a, b in zip(self.offsets, self.offsets[1:], strict=False))
        self.period = self.offsets[-1] + (gaps[len(gaps) // 2] if gaps else 1.0)
        self._start: float | None = None

    def read(self) -> Snapshot:
        now = self.clock()
        if self._start is None:
            self._start = now
        elapsed = now - self._start
        if self.loop and self.period > 0:
            elapsed %= self.period
        # binary search: last offset <= elapsed
        lo, hi = 0, len(self.offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.offsets[mid] <= elapsed:
                lo = mid
            else:
                hi = mid - 1
        return self.snapshots[lo]

    def close(self) -> None:
        return None


def _ts(snapshot: Snapshot) -> float:
    return min((s.timestamp_s for s in snapshot.samples), default=0.0)


def snapshots_from_samples(samples: Sequence[Sample]) -> list[Snapshot]:
    from gpuwise.gpu.smi_csv import iter_snapshot_groups

    return [Snapshot(samples=tuple(g)) for g in iter_snapshot_groups(samples)]


def open_source(replay: Path | None, *, clock: Callable[[], float] = time.time, loop: bool = False) -> Probe:
    """A probe on live GPUs (NVML) or on the recording at ``replay``."""
    try:
        from gpuwise.gpu.probe import open_probe  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        open_probe = None
    if open_probe is not None:
        probe: Probe = open_probe(replay, clock=clock, loop=loop)
        return probe
    if replay is None:
        raise GpuError(
            "Live GPU reading is not available in this build",
            why="the NVML probe (gpuwise.gpu.probe) is missing",
            fix="use --replay FILE with a recorded nvidia-smi --query-gpu CSV",
        )
    from gpuwise.gpu.smi_csv import read_query_csv

    return SeriesProbe(snapshots_from_samples(read_query_csv(replay)), clock=clock, loop=loop)
