"""What every standard task needs: torch, the device, the sizes of the suite, and the ceilings.

Ceilings (`peak`) come from the bundled GPU spec table on a GPU and from the CPU's core count, clock and
vector width on a CPU (gpuwise.bench.cpu says how). A ceiling nobody publishes is None with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise.bench.cpu import CpuInfo
from gpuwise.catalog.models import GpuSpec

# PCIe x16, one direction: transfer rate × 16 lanes × 128/130 encoding / 8 bits (PCI-SIG base specs 3.0-5.0)
PCIE_X16_GBS = {3: 15.75, 4: 31.5, 5: 63.0, 6: 126.0}


@dataclass(frozen=True)
class GptSize:
    d_model: int
    layers: int
    heads: int
    seq: int
    batch: int
    vocab: int


@dataclass(frozen=True)
class Sizes:
    """One suite's sizes on one device: small on a CPU (and in tests), large enough to saturate a GPU."""

    gemm_n: int
    memory_mib: int  # per array; the arrays must not fit in the last-level cache
    transfer_mib: int
    allreduce_mib: int
    disk_mib: int
    loader_samples: int
    loader_image: int
    gpt: GptSize
    cnn_width_div: int  # ResNet-50 layout with every width divided by this
    cnn_image: int
    cnn_batch: int
    decode_batch: int
    decode_context: int
    decode_steps: int
    warmup: int
    repetitions: int
    cap_s: float  # the time cap of each task's timed part


@dataclass
class Context:
    torch: Any
    device: str  # "cpu" or "cuda"
    sizes: Sizes
    cpu: CpuInfo
    gpu_spec: GpuSpec | None
    gpus: int
    disk_path: Path
    pcie_gen: int | None = None

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def peak_tflops(self, dtype: str) -> tuple[float | None, str]:
        """Dense peak for a GEMM in `dtype`, TFLOPS, with its source."""
        if not self.cuda:
            gflops, how = self.cpu.peak_gflops("bf16" if dtype == "bf16" else "fp32")
            return (gflops / 1000 if gflops is not None else None), how
        if self.gpu_spec is None:
            return None, "GPU not in the spec table"
        fig = self.gpu_spec.tflops.get(dtype)
        if fig is None or fig.value is None:
            return None, f"{self.gpu_spec.name} {dtype}: not published"
        return fig.value, f"{self.gpu_spec.name} {dtype} dense: {fig.source}"

    def peak_bandwidth_gbs(self) -> tuple[float | None, str]:
        if not self.cuda:
            return self.cpu.memory_ceiling_gbs()
        if self.gpu_spec is None:
            return None, "GPU not in the spec table"
        fig = self.gpu_spec.memory_bandwidth_gbs
        return fig.value, f"{self.gpu_spec.name} memory bandwidth: {fig.source}"

    def peak_pcie_gbs(self) -> tuple[float | None, str]:
        gen = self.pcie_gen or (self.gpu_spec.pcie_gen if self.gpu_spec else None)
        if gen is None or gen not in PCIE_X16_GBS:
            return None, "PCIe generation unknown"
        return PCIE_X16_GBS[gen], f"PCIe gen {gen} x16, one direction (PCI-SIG)"
