"""The result of one estimate (CONTRACTS §2). Pure data."""

from __future__ import annotations

from dataclasses import dataclass, field


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

    @property
    def throughput_total(self) -> float:
        return self.throughput_per_gpu * self.count

    @property
    def gpu_hours(self) -> float:
        return self.hours * self.count
