"""Where the monitor's snapshots come from: the gpu room's probe (`gpuwise.gpu.probe.open_probe`).

`open_source()` is the one place `monitor` and `exporter` open a probe (live NVML, the nvidia-smi
fallback, or a §4 recording served in real time); tests inject their own probes that satisfy `Probe`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from gpuwise.gpu.sample import Snapshot


class Probe(Protocol):
    def read(self) -> Snapshot: ...

    def close(self) -> None: ...


def open_source(replay: Path | None, *, clock: Callable[[], float] = time.time, loop: bool = False) -> Probe:
    """A probe on live GPUs or on the recording at ``replay`` (looped when ``loop``)."""
    from gpuwise.gpu.probe import open_probe

    return open_probe(replay, clock=clock, loop=loop)
