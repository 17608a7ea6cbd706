"""The result of one estimate (CONTRACTS §2). Pure data."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuwise.units import GIB


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU by part.

    `total` is the peak as torch.cuda.max_memory_allocated would show, plus runtime overhead.
    """

    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float
    overhead: float

    @property
    def total(self) -> float:
        return (
            self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache + self.overhead
        )


@dataclass(frozen=True)
class Estimate:
    gpu: str
    count: int
    nodes: int
    fits: bool
    memory: MemoryBreakdown  # bytes per GPU
    memory_capacity_bytes: float
    throughput_per_gpu: float
    throughput_unit: str  # "tokens/s" | "samples/s" | "output tokens/s"
    hours: float
    mfu: float
    bottleneck: str  # "compute" | "memory_bandwidth" | "communication" | "memory_capacity" | "io"
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    # Inference with a target rate: whether this configuration serves it (None for other workloads).
    meets_target: bool | None = None
    # Why the configuration cannot run at all (e.g. tensor_parallel above the GPU count); None if it can.
    infeasible_reason: str | None = None
    # Intermediate figures (seconds per step, communication share, …) for explanations; extras in --json.
    details: dict[str, float] = field(default_factory=dict)

    @property
    def throughput_total(self) -> float:
        return self.throughput_per_gpu * self.count

    @property
    def gpu_hours(self) -> float:
        return self.hours * self.count

    def to_json(self) -> dict[str, object]:
        """The CONTRACTS §2 object (plus extras)."""
        m = self.memory

        def num(x: float) -> float | None:  # JSON has no infinity: an impossible time is null
            return x if math.isfinite(x) else None

        # A configuration that cannot run (no published peak, tp × pp above the GPU count) has no
        # speed at all: say null rather than a 0 that reads like a measurement.
        runs = self.infeasible_reason is None and math.isfinite(self.hours)

        return {
            "gpu": self.gpu,
            "count": self.count,
            "nodes": self.nodes,
            "fits": self.fits,
            "memory_per_gpu_gib": m.total / GIB,
            "memory_capacity_gib": self.memory_capacity_bytes / GIB,
            "memory_breakdown_gib": {
                "weights": m.weights / GIB,
                "gradients": m.gradients / GIB,
                "optimizer": m.optimizer / GIB,
                "activations": m.activations / GIB,
                "kv_cache": m.kv_cache / GIB,
                "overhead": m.overhead / GIB,
            },
            "throughput_per_gpu": self.throughput_per_gpu if runs else None,
            "throughput_total": self.throughput_total if runs else None,
            "throughput_unit": self.throughput_unit,
            "hours": num(self.hours),
            "gpu_hours": num(self.gpu_hours),
            "mfu": self.mfu if runs else None,
            "bottleneck": self.bottleneck,
            "assumptions": list(self.assumptions),
            "meets_target": self.meets_target,
            "infeasible_reason": self.infeasible_reason,
            "details": dict(self.details),
        }
