"""The estimate for a configuration that cannot run or cannot be timed (too few GPUs for the parallelism,
no published peak or bandwidth): an answer with its reason, never an exception.

Pure; shared by the training and inference estimates.
"""

from __future__ import annotations

import math

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.estimate.notes import Notes
from gpuwise.locale import _


def impossible(
    gpu: GpuSpec,
    *,
    count: int,
    nodes: int,
    capacity: float,
    unit: str,
    reason: str,
    notes: Notes,
    mem: MemoryBreakdown | None = None,
) -> Estimate:
    """An estimate with no speed: `reason` says why; with `mem`, the fit verdict is on memory alone."""
    notes.add(reason)
    memory = mem or MemoryBreakdown(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if mem is not None:
        notes.add(_("no speed figure: the fit verdict is on memory alone"))
    return Estimate(
        gpu=gpu.name,
        count=count,
        nodes=nodes,
        fits=mem is not None and mem.total <= capacity,
        memory=memory,
        memory_capacity_bytes=capacity,
        throughput_per_gpu=0.0,
        throughput_unit=unit,
        hours=math.inf,
        mfu=0.0,
        bottleneck="memory_capacity" if mem is not None and mem.total > capacity else "compute",
        assumptions=tuple(notes.items),
        infeasible_reason=reason,
    )
