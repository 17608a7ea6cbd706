"""The probe interface every GPU consumer reads through, its replay implementation and `open_probe`.

    probe = open_probe(replay=None)        # live: NVML, else `nvidia-smi -q -x`; or a recording
    snapshot = probe.read()                # one Sample per GPU, never a sentinel number
    probe.close()

Live probes are in `gpu/nvml.py` (nvidia-ml-py, no subprocess per sample) and `gpu/smi_probe.py`
(`nvidia-smi` subprocess, the fallback). Those modules are imported only when a live probe is opened,
so importing this one stays cheap (no pynvml, no subprocess).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol, runtime_checkable

from gpuwise.gpu._values import format_trace_time
from gpuwise.gpu.replay import Recording, load_recording
from gpuwise.gpu.sample import Snapshot

__all__ = ["Probe", "ReplayProbe", "open_probe"]


@runtime_checkable
class Probe(Protocol):
    """Reads all GPUs at once. `read()` never raises for a single GPU's fault: that GPU's readings are
    Failed (or the sample is `lost`); it raises GpuError only when nothing can be read at all."""

    def read(self) -> Snapshot: ...

    def close(self) -> None: ...


class ReplayProbe:
    """Serves a recording. A time series is played in real time from its first sample, by `clock`:
    `read()` returns the last snapshot whose offset from the first is ≤ the time elapsed since the probe
    was opened; with `loop=True` it starts over one median sample interval after the last sample. Without
    `loop`, `finished` turns True at the last sample, and once that sample is older than one sampling
    interval the recording has nothing fresh to say: `read()` returns no samples and an error saying when
    the recording ended. Serving the last reading as current forever let the idle daemon count a
    recording that had stopped as a machine that stayed idle; the error counts as missing data, which
    every consumer already treats as such (the idle policy: busy). A single snapshot is served as it is.

    Timestamps: by default samples keep the recording's own clock; with `retime=True` (the default when
    looping, so time never runs backwards) they carry the probe clock's time instead.
    """

    def __init__(
        self,
        recording: Recording,
        *,
        clock: Callable[[], float] = time.time,
        loop: bool = False,
        retime: bool | None = None,
    ) -> None:
        self.recording = recording
        self._clock = clock
        self._loop = loop
        self._retime = loop if retime is None else retime
        self._start = clock()
        snaps = recording.snapshots or [Snapshot(samples=())]
        self._snapshots = snaps
        first = _snapshot_time(snaps[0])
        self._offsets = [max(0.0, _snapshot_time(s) - first) for s in snaps]
        gaps = sorted(b - a for a, b in zip(self._offsets, self._offsets[1:], strict=False) if b > a)
        step = gaps[len(gaps) // 2] if gaps else 1.0
        self._step = step
        self._period = self._offsets[-1] + step
        self.finished = len(snaps) == 1
        self._closed = False

    @property
    def duration_s(self) -> float:
        """Seconds from the first to the last sample of the recording."""
        return self._offsets[-1]

    def read(self) -> Snapshot:
        now = self._clock()
        elapsed = max(0.0, now - self._start)
        if self._loop and len(self._snapshots) > 1:
            elapsed %= self._period
        elif elapsed >= self._offsets[-1]:
            self.finished = True
            if len(self._snapshots) > 1 and elapsed > self._offsets[-1] + self._step:
                return self._ended()
        i = _last_at_or_before(self._offsets, elapsed)
        snap = self._snapshots[i]
        if self._retime:
            snap = replace(snap, samples=tuple(replace(s, timestamp_s=now) for s in snap.samples))
        return snap

    def _ended(self) -> Snapshot:
        last = self._snapshots[-1]
        when = format_trace_time(_snapshot_time(last))
        return Snapshot(
            samples=(),
            driver_version=last.driver_version,
            errors=(f"the recording ended at {when} (its clock): no newer readings",),
        )

    def close(self) -> None:
        self._closed = True


def _snapshot_time(snap: Snapshot) -> float:
    return snap.samples[0].timestamp_s if snap.samples else 0.0


def _last_at_or_before(offsets: list[float], t: float) -> int:
    lo, hi = 0, len(offsets) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets[mid] <= t:
            lo = mid
        else:
            hi = mid - 1
    return lo


def open_probe(
    replay: Path | str | None = None,
    *,
    clock: Callable[[], float] = time.time,
    loop: bool = False,
) -> Probe:
    """A probe of this machine's GPUs, or of a recording when `replay` is given.

    Live: NVML through nvidia-ml-py; when the NVML library cannot be loaded, `nvidia-smi -q -x` as a
    subprocess; neither → GpuError saying why and how to fix it. Replay: ReplayError (exit 2) for a path
    that is no recording.
    """
    if replay is not None:
        return ReplayProbe(load_recording(Path(replay)), clock=clock, loop=loop)
    from gpuwise.gpu.nvml import NvmlProbe, NvmlUnavailableError
    from gpuwise.gpu.smi_probe import SmiProbe, find_nvidia_smi

    try:
        return NvmlProbe(clock=clock)
    except NvmlUnavailableError as exc:
        smi_path = find_nvidia_smi()
        if smi_path is None:
            raise exc.as_gpu_error() from exc
        return SmiProbe(smi_path, clock=clock)
