"""This host's CPU and memory, and the ceilings the CPU results are measured against.

Peak FLOPs = cores × clock × FLOPs per cycle per core, from /proc/cpuinfo. FLOPs per cycle follow from the
widest vector FMA the flags show, assuming two FMA units per core (Intel since Haswell, AMD since Zen 2):
fp32 lanes per vector × 2 (multiply and add) × 2 units. The cores are the logical CPUs this process may use
(SMT siblings share FMA units, so this overstates the peak: a ceiling, never a target). The clock is the
highest the kernel reports (cpufreq's maximum, else /proc/cpuinfo's current MHz). Without cpufreq (most
cloud VMs) that MHz is the base clock and the CPU boosts past it (one thread of this project's 2.445 GHz
EPYC VM ran a 1024³ fp32 GEMM at 89 GFLOPS against 78 at the reported clock), so that peak is not a
ceiling: the derivation says so, and a fraction above 1 is possible there.

Memory bandwidth ceiling: the number and speed of memory channels are not visible without root (DMI), so the
ceiling assumes the most a current server socket carries: 12 channels of DDR5-6400 (51.2 GB/s each,
JEDEC JESD79-5: 6400 MT/s × 8 bytes) per socket. The fraction of it is a lower bound of the real one.
Pure parsing functions; `read_cpu()` is the one edge that reads files.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path

DDR5_6400_CHANNEL_GBS = 51.2  # 6400 MT/s × 8 bytes (JEDEC JESD79-5)
ASSUMED_CHANNELS_PER_SOCKET = 12  # AMD EPYC 9004/9005, Intel Xeon 6 (Granite Rapids)

_CPUINFO = Path("/proc/cpuinfo")
_MAX_FREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")


@dataclass(frozen=True)
class CpuInfo:
    model: str | None
    cores: int  # logical CPUs this process may run on
    sockets: int
    clock_ghz: float | None
    flags: frozenset[str]
    clock_is_max: bool = False  # cpufreq's maximum; else /proc/cpuinfo's MHz, which boost can exceed

    @property
    def fp32_flops_per_cycle(self) -> int:
        """Per core: vector lanes × 2 (FMA) × 2 units; without FMA, one add and one multiply per lane."""
        if "avx512f" in self.flags:
            return 16 * 2 * 2
        if "avx2" in self.flags and "fma" in self.flags:
            return 8 * 2 * 2
        if "avx" in self.flags:
            return 8 * 2
        return 4 * 2  # SSE: 4 fp32 lanes, a multiply and an add

    @property
    def has_bf16(self) -> bool:
        """bf16 arithmetic in hardware (AVX-512 BF16 or AMX); without it torch converts through fp32."""
        return bool({"avx512_bf16", "amx_bf16"} & self.flags)

    @property
    def vector_name(self) -> str:
        if "avx512f" in self.flags:
            return "AVX-512 FMA"
        if "avx2" in self.flags and "fma" in self.flags:
            return "AVX2 FMA"
        return "AVX" if "avx" in self.flags else "SSE"

    def peak_gflops(self, dtype: str) -> tuple[float | None, str]:
        """The ceiling for a GEMM in `dtype`, GFLOPS, and how it was derived."""
        if self.clock_ghz is None:
            return None, "the CPU clock is not reported (no cpufreq, no 'cpu MHz' in /proc/cpuinfo)"
        per_cycle = self.fp32_flops_per_cycle
        how = f"{self.vector_name}, 2 FMA units/core assumed"
        if dtype == "bf16" and "amx_bf16" in self.flags:
            per_cycle, how = 1024, "AMX-BF16: 1024 FLOPs/cycle/core (Intel AMX documentation)"
        elif dtype == "bf16" and "avx512_bf16" in self.flags:
            per_cycle, how = per_cycle * 2, "AVX-512 BF16 dot products: twice the fp32 rate"
        elif dtype == "bf16":
            how += "; no bf16 instructions, so bf16 runs at most at the fp32 rate"
        peak = self.cores * self.clock_ghz * per_cycle
        if not self.clock_is_max:
            how += (
                "; the clock is /proc/cpuinfo's MHz, not a maximum (no cpufreq: a VM shows its base clock), "
                "and boost can run past it, so this peak is not a ceiling"
            )
        return peak, f"{self.cores} CPUs × {self.clock_ghz:.2f} GHz × {per_cycle} FLOPs/cycle ({how})"

    def memory_ceiling_gbs(self) -> tuple[float, str]:
        per_socket = ASSUMED_CHANNELS_PER_SOCKET * DDR5_6400_CHANNEL_GBS
        return self.sockets * per_socket, (
            f"assumed: {self.sockets} socket(s) × {ASSUMED_CHANNELS_PER_SOCKET} channels of DDR5-6400 "
            "(channel count and speed are not readable without root; a ceiling, the real one is lower)"
        )


def parse_cpuinfo(text: str, *, cores: int, max_freq_khz: int | None = None) -> CpuInfo:
    """CpuInfo from /proc/cpuinfo's text (first processor's model and flags; sockets by physical id)."""
    fields: dict[str, str] = {}
    sockets: set[str] = set()
    mhz: list[float] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        fields.setdefault(key, value)
        if key == "physical id":
            sockets.add(value)
        elif key == "cpu MHz":
            with contextlib.suppress(ValueError):  # a garbled line: the other processors' lines still count
                mhz.append(float(value))
    flags = frozenset(fields.get("flags", "").split())
    clock = max_freq_khz / 1e6 if max_freq_khz else (max(mhz) / 1000 if mhz else None)
    model = fields.get("model name") or None
    return CpuInfo(
        model=re.sub(r"\s+", " ", model) if model else None,
        cores=max(1, cores),
        sockets=max(1, len(sockets)),
        clock_ghz=clock,
        flags=flags,
        clock_is_max=bool(max_freq_khz),
    )


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def read_cpu() -> CpuInfo:
    """This host's CPU; on a system without /proc/cpuinfo, what `platform` says and no clock."""
    try:
        text = _CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return CpuInfo(platform.processor() or None, usable_cpus(), 1, None, frozenset())
    try:
        max_khz: int | None = int(_MAX_FREQ.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        max_khz = None
    return parse_cpuinfo(text, cores=usable_cpus(), max_freq_khz=max_khz)
