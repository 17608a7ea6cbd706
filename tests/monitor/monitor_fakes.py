"""Fakes at our own interfaces for the monitor tests: a probe that serves constructed snapshots, a
fake clock, and a sample builder with realistic defaults."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuwise.gpu.sample import GpuProcess, Sample, Snapshot

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "monitor"
EIGHT_GPU_CSV = FIXTURES / "8x-h100__training__constructed.csv"
GIB = 2**30


def gpu(index: int = 0, ts: float = 1_000.0, **kw: Any) -> Sample:
    """An H100 at work unless told otherwise."""
    base: dict[str, Any] = {
        "uuid": f"GPU-{index:08d}-aaaa-bbbb-cccc-dddddddddddd",
        "name": "NVIDIA H100 80GB HBM3",
        "bus_id": f"00000000:{0x10 + index:02X}:00.0",
        "util_gpu_pct": 95.0,
        "util_memory_pct": 40.0,
        "util_encoder_pct": 0.0,
        "util_decoder_pct": 0.0,
        "memory_used_bytes": 60 * GIB,
        "memory_total_bytes": 80 * GIB,
        "power_draw_watts": 650.0,
        "power_limit_watts": 700.0,
        "temperature_c": 65.0,
        "sm_clock_mhz": 1980.0,
        "memory_clock_mhz": 2619.0,
        "throttle_reasons": (),
        "pcie_gen_current": 5,
        "pcie_gen_max": 5,
        "pcie_width_current": 16,
        "pcie_width_max": 16,
        "pcie_replay_count": 0,
        "xid_errors": 0,
        "processes": (GpuProcess(4242, "python", 60 * GIB),),
    }
    base.update(kw)
    return Sample(timestamp_s=ts, index=index, **base)


def snap(*samples: Sample) -> Snapshot:
    return Snapshot(samples=tuple(samples))


class FakeProbe:
    """Serves the given snapshots in order, then repeats the last one."""

    def __init__(self, snapshots: Sequence[Snapshot]) -> None:
        self.snapshots = list(snapshots)
        self.reads = 0
        self.closed = False

    def read(self) -> Snapshot:
        s = self.snapshots[min(self.reads, len(self.snapshots) - 1)]
        self.reads += 1
        return s

    def close(self) -> None:
        self.closed = True


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
