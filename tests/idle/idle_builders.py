"""Builders of constructed observations for the idle tests (not a test module)."""

from __future__ import annotations

from collections.abc import Sequence

from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, GpuProcess, NotSupported, Sample
from gpuwise.idle.policy import Observation, Signal

MIB = 1024**2
T0 = 1_777_000_000.0


def gpu(
    index: int,
    t: float,
    util: float | NotSupported | Failed,
    mem_mib: float | NotSupported | Failed | None = 1.0,
    procs: Sequence[GpuProcess] | NotSupported | Failed | None = None,
) -> Sample:
    mem = NOT_SUPPORTED if mem_mib is None else mem_mib
    return Sample(
        timestamp_s=t,
        index=index,
        util_gpu_pct=util,
        memory_used_bytes=mem if isinstance(mem, NotSupported | Failed) else int(mem * MIB),
        processes=NOT_SUPPORTED
        if procs is None
        else (procs if isinstance(procs, NotSupported | Failed) else tuple(procs)),
    )


def series(
    utils: Sequence[float],
    *,
    mem_mib: float | None = 1.0,
    step_s: float = 30.0,
    signals: Sequence[Sequence[Signal]] | None = None,
) -> list[Observation]:
    """One GPU, one observation per util value, `step_s` apart from T0."""
    out = []
    for k, u in enumerate(utils):
        t = T0 + k * step_s
        sig = tuple(signals[k]) if signals is not None else ()
        out.append(Observation(t, (gpu(0, t, u, mem_mib),), sig))
    return out


def proc(pid: int = 4242, mib: float = 20000, kind: str = "compute") -> GpuProcess:
    return GpuProcess(pid=pid, name="python", used_memory_bytes=int(mib * MIB), kind=kind)
