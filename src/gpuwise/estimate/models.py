"""The result of one estimate (docs/json.md). Pure data."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuwise.units import GIB

if TYPE_CHECKING:
    from gpuwise.estimate.serving import Latency


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
class Remedy:
    """A change to a configuration that does not fit (estimate/remedies.py), with the estimate it gives.

    `updates` is the change in machine form: workload keys as "section.key" ("train.micro_batch") and
    "count" for the GPU count. `fits` false marks an entry that says what will not help, and why.
    """

    change: str
    updates: dict[str, str | int | bool]
    memory_per_gpu_bytes: float
    hours: float
    count: int
    fits: bool
    time_ratio: float  # hours ÷ the original estimate's hours (nan when either is unknown)

    def to_json(self) -> dict[str, object]:
        finite = self.fits and math.isfinite(self.hours)  # what does not fit has no time
        return {
            "change": self.change,
            "set": dict(self.updates),
            "fits": self.fits,
            "memory_per_gpu_gib": self.memory_per_gpu_bytes / GIB,
            "hours": self.hours if finite else None,
            "gpu_hours": self.hours * self.count if finite else None,
            "count": self.count,
            "time_ratio": self.time_ratio if finite and math.isfinite(self.time_ratio) else None,
        }


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
    # The range most jobs of this stack fall in (README: which percentiles); nan until estimate() sets them.
    hours_low: float = math.nan
    hours_high: float = math.nan
    # (slow, fast) total throughput where the time range does not give it: a rate served for a fixed time
    # is rented for that time however fast it runs (estimate/core.py). None: read from the time range.
    throughput_range: tuple[float, float] | None = None
    # "fits" | "tight" (within the allocator's margin: expect an OOM) | "does_not_fit" | "unknown".
    fit_verdict: str = "unknown"
    # Peak per GPU while the model is loaded and sharded (FSDP/ZeRO-3 without meta-device init), bytes.
    load_peak_bytes: float = 0.0
    # Host RAM one node needs to load the model and run its ranks, bytes (0 = not estimated).
    host_ram_bytes: float = 0.0
    # Which stack's figures were used ("hf", "tuned", …) and where the range came from.
    stack: str = ""
    range_source: str = ""
    # Serving a transformer: TTFT, TPOT and request time at the workload's concurrency (estimate/serving.py)
    latency: Latency | None = None
    # When it does not fit: changes that would (estimate/remedies.py), cheapest first; filled where shown.
    remedies: tuple[Remedy, ...] = ()

    @property
    def throughput_total(self) -> float:
        return self.throughput_per_gpu * self.count

    @property
    def gpu_hours(self) -> float:
        return self.hours * self.count

    @property
    def throughput_low(self) -> float:
        """Total throughput at hours_high (the slow end of the range)."""
        if self.throughput_range is not None:
            return self.throughput_range[0]
        if not (math.isfinite(self.hours_high) and self.hours_high > 0 and math.isfinite(self.hours)):
            return math.nan
        return self.throughput_total * self.hours / self.hours_high

    @property
    def throughput_high(self) -> float:
        """Total throughput at hours_low (the fast end of the range)."""
        if self.throughput_range is not None:
            return self.throughput_range[1]
        if not (math.isfinite(self.hours_low) and self.hours_low > 0 and math.isfinite(self.hours)):
            return math.nan
        return self.throughput_total * self.hours / self.hours_low

    def to_json(self) -> dict[str, object]:
        """The docs/json.md object (plus extras)."""
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
            "fit_verdict": self.fit_verdict,
            "memory_per_gpu_gib": m.total / GIB,
            "load_peak_gib": self.load_peak_bytes / GIB if self.load_peak_bytes else None,
            "host_ram_gib": self.host_ram_bytes / GIB if self.host_ram_bytes else None,
            "stack": self.stack or None,
            "range_source": self.range_source or None,
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
            "hours_low": num(self.hours_low) if runs else None,
            "hours_high": num(self.hours_high) if runs else None,
            "throughput_low": num(self.throughput_low) if runs else None,
            "throughput_high": num(self.throughput_high) if runs else None,
            "gpu_hours": num(self.gpu_hours),
            "mfu": num(self.mfu) if runs else None,  # nan: not known (a measured task's FLOPs)
            "bottleneck": self.bottleneck,
            "assumptions": list(self.assumptions),
            "meets_target": self.meets_target,
            "infeasible_reason": self.infeasible_reason,
            "details": dict(self.details),
            "latency": self.latency.to_json() if self.latency is not None and runs else None,
            "remedies": [r.to_json() for r in self.remedies],
        }
