"""The sample model every GPU reader produces and every consumer (monitor, exporter, idle, doctor) reads.

A reading is a value, `NotSupported` or `Failed(why)` — never a sentinel number and never an
"N/A" string that behaves like NaN. Units are in the field names. Pure data: no I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, Union

T = TypeVar("T")


@dataclass(frozen=True)
class NotSupported:
    """The GPU or driver does not provide this reading (nvidia-smi prints "[N/A]" or "[Not Supported]")."""

    def __str__(self) -> str:
        return "not supported"


@dataclass(frozen=True)
class Failed:
    """Reading the value failed; `why` says how (an NVML error, an unparseable field)."""

    why: str

    def __str__(self) -> str:
        return f"failed: {self.why}"


NOT_SUPPORTED = NotSupported()

# A reading of type T: the value, or why there is none.
Reading = Union[T, NotSupported, Failed]  # noqa: UP007 - a generic alias needs Union on Python 3.11


def value_or_none(reading: Reading[T]) -> T | None:
    """The value, or None when unsupported or failed (for JSON and arithmetic at the edges)."""
    if isinstance(reading, NotSupported | Failed):
        return None
    return reading


def has_value(reading: Reading[T]) -> bool:
    return not isinstance(reading, NotSupported | Failed)


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    used_memory_bytes: Reading[int]
    kind: str = "compute"  # "compute" | "graphics" | "compute+graphics"


@dataclass(frozen=True)
class MigDevice:
    """One MIG instance of a GPU in MIG mode."""

    index: int
    gpu_instance_id: Reading[int] = NOT_SUPPORTED
    compute_instance_id: Reading[int] = NOT_SUPPORTED
    memory_used_bytes: Reading[int] = NOT_SUPPORTED
    memory_total_bytes: Reading[int] = NOT_SUPPORTED
    multiprocessor_count: Reading[int] = NOT_SUPPORTED
    profile: Reading[str] = NOT_SUPPORTED  # "3g.40gb" where the output names it


@dataclass(frozen=True)
class Sample:
    """One GPU at one instant. `timestamp_s` is seconds since the epoch (the probe's clock or the
    recording's own timestamps, never converted between time zones)."""

    timestamp_s: float
    """Seconds since the epoch (`timestamp`; a recording's clock text is read as if UTC)."""
    index: int
    """nvidia-smi's GPU index, 0-based (`index`)."""
    uuid: Reading[str] = NOT_SUPPORTED
    """GPU UUID, 'GPU-…' (`uuid`)."""
    name: Reading[str] = NOT_SUPPORTED
    """Product name, e.g. 'NVIDIA H100 80GB HBM3' (`name`)."""
    bus_id: Reading[str] = NOT_SUPPORTED
    """PCI bus id, '00000000:3B:00.0' (`pci.bus_id`)."""
    # utilization, percent 0-100 (nvidia-smi --query-gpu=utilization.gpu / .memory / encoder / decoder)
    util_gpu_pct: Reading[float] = NOT_SUPPORTED
    """Percent of time a kernel ran, 0-100 (`utilization.gpu`); NotSupported under MIG."""
    util_memory_pct: Reading[float] = NOT_SUPPORTED
    """Percent of time device memory was read or written, 0-100 (`utilization.memory`)."""
    util_encoder_pct: Reading[float] = NOT_SUPPORTED
    """NVENC utilization, percent (`utilization.encoder`)."""
    util_decoder_pct: Reading[float] = NOT_SUPPORTED
    """NVDEC utilization, percent (`utilization.decoder`)."""
    # framebuffer memory (memory.used / memory.total; nvidia-smi's "MiB" are 2**20 bytes)
    memory_used_bytes: Reading[int] = NOT_SUPPORTED
    """Framebuffer memory in use, bytes (`memory.used`; nvidia-smi prints MiB = 2**20 bytes)."""
    memory_total_bytes: Reading[int] = NOT_SUPPORTED
    """Framebuffer memory size, bytes (`memory.total`)."""
    power_draw_watts: Reading[float] = NOT_SUPPORTED
    """Board power draw, W (`power.draw`; average draw on drivers that print both)."""
    power_limit_watts: Reading[float] = NOT_SUPPORTED
    """Enforced power limit, W (`power.limit` / `enforced.power.limit`)."""
    temperature_c: Reading[float] = NOT_SUPPORTED
    """GPU core temperature, °C (`temperature.gpu`)."""
    memory_temperature_c: Reading[float] = NOT_SUPPORTED
    """HBM temperature, °C (`temperature.memory`)."""
    fan_speed_pct: Reading[float] = NOT_SUPPORTED
    """Fan speed, percent of maximum (`fan.speed`); Failed('ERR!') for a failed fan."""
    sm_clock_mhz: Reading[float] = NOT_SUPPORTED
    """Current SM clock, MHz (`clocks.sm` / `clocks.current.sm`)."""
    memory_clock_mhz: Reading[float] = NOT_SUPPORTED
    """Current memory clock, MHz (`clocks.mem` / `clocks.current.memory`)."""
    # active clock-event ("throttle") reasons, as short ids: "sw_power_cap", "hw_slowdown",
    # "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "sync_boost",
    # "gpu_idle", "applications_clocks_setting", "display_clocks_setting"
    throttle_reasons: Reading[tuple[str, ...]] = NOT_SUPPORTED
    """Active reason ids in NVML bit order (`clocks_event_reasons.*`, `clocks_throttle_reasons.*`)."""
    pcie_gen_current: Reading[int] = NOT_SUPPORTED
    """Current PCIe link generation (`pcie.link.gen.current`); drops at idle to save power."""
    pcie_gen_max: Reading[int] = NOT_SUPPORTED
    """Maximum PCIe generation of GPU and slot (`pcie.link.gen.max`)."""
    pcie_width_current: Reading[int] = NOT_SUPPORTED
    """Current PCIe link width, lanes (`pcie.link.width.current`)."""
    pcie_width_max: Reading[int] = NOT_SUPPORTED
    """Maximum PCIe link width, lanes (`pcie.link.width.max`)."""
    pcie_tx_bytes_per_s: Reading[float] = NOT_SUPPORTED
    """PCIe transmit throughput, bytes/s (NVML nvmlDeviceGetPcieThroughput; -q 'Tx Throughput')."""
    pcie_rx_bytes_per_s: Reading[float] = NOT_SUPPORTED
    """PCIe receive throughput, bytes/s (NVML nvmlDeviceGetPcieThroughput; -q 'Rx Throughput')."""
    pcie_replay_count: Reading[int] = NOT_SUPPORTED
    """PCIe replays since reset (-q 'Replays Since Reset'; NVML nvmlDeviceGetPcieReplayCounter)."""
    ecc_mode_enabled: Reading[bool] = NOT_SUPPORTED
    """ECC on (`ecc.mode.current`)."""
    ecc_corrected_volatile: Reading[int] = NOT_SUPPORTED
    """Corrected ECC errors since boot (`ecc.errors.corrected.volatile.total`)."""
    ecc_uncorrected_volatile: Reading[int] = NOT_SUPPORTED
    """Uncorrected ECC errors since boot (`ecc.errors.uncorrected.volatile.total`)."""
    ecc_uncorrected_aggregate: Reading[int] = NOT_SUPPORTED
    """Uncorrected ECC errors, lifetime (`ecc.errors.uncorrected.aggregate.total`)."""
    retired_pages_pending: Reading[bool] = NOT_SUPPORTED
    """A page retirement waits for a reset (`retired_pages.pending`; pre-Ampere)."""
    remapped_rows_correctable: Reading[int] = NOT_SUPPORTED
    """Rows remapped for correctable errors (`remapped_rows.correctable`; Ampere+)."""
    remapped_rows_uncorrectable: Reading[int] = NOT_SUPPORTED
    """Rows remapped for uncorrectable errors (`remapped_rows.uncorrectable`)."""
    remapped_rows_pending: Reading[bool] = NOT_SUPPORTED
    """A row remap waits for a GPU reset (`remapped_rows.pending`)."""
    remapped_rows_failure: Reading[bool] = NOT_SUPPORTED
    """A row remap failed: the GPU needs service (`remapped_rows.failure`)."""
    persistence_mode: Reading[bool] = NOT_SUPPORTED
    """Persistence mode on (`persistence_mode`)."""
    mig_mode: Reading[bool] = NOT_SUPPORTED
    """MIG mode currently on (`mig.mode.current`)."""
    compute_capability: Reading[str] = NOT_SUPPORTED  # "9.0"
    """CUDA compute capability, '9.0' (`compute_cap`)."""
    xid_errors: Reading[int] = NOT_SUPPORTED  # count of Xid events seen for this GPU (last code in xid_last)
    """Xid events seen for this GPU in a kernel log (no --query-gpu field; dcgm's XID_ERRORS)."""
    xid_last: Reading[int] = NOT_SUPPORTED
    """The last Xid code seen for this GPU."""
    processes: Reading[tuple[GpuProcess, ...]] = NOT_SUPPORTED
    """Processes holding this GPU, with their memory (--query-compute-apps; NVML running processes)."""
    # a GPU that NVML/nvidia-smi reports as lost or erroring: every other reading is Failed
    lost: bool = False
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    # --- added by the gpu room (defaults keep every older constructor call valid) ---
    pstate: Reading[str] = NOT_SUPPORTED  # performance state "P0".."P12" (pstate)
    compute_mode: Reading[str] = NOT_SUPPORTED  # "Default", "Exclusive_Process", … (compute_mode)
    display_active: Reading[bool] = NOT_SUPPORTED  # a display is driven by this GPU (display_active)
    sm_clock_max_mhz: Reading[float] = NOT_SUPPORTED  # clocks.max.sm, MHz
    memory_clock_max_mhz: Reading[float] = NOT_SUPPORTED  # clocks.max.memory, MHz
    power_default_limit_watts: Reading[float] = NOT_SUPPORTED  # power.default_limit, W
    ecc_corrected_aggregate: Reading[int] = NOT_SUPPORTED  # ecc.errors.corrected.aggregate.total
    retired_pages_single_bit: Reading[int] = NOT_SUPPORTED  # retired_pages.single_bit_ecc.count
    retired_pages_double_bit: Reading[int] = NOT_SUPPORTED  # retired_pages.double_bit.count
    # MIG instances (nvidia-smi -q "MIG devices" / the table's MIG block); NotSupported when MIG is off
    mig_devices: Reading[tuple[MigDevice, ...]] = NOT_SUPPORTED
    # framebuffer the driver reserves for itself (`memory.reserved`; -q "FB Memory Usage: Reserved")
    memory_reserved_bytes: Reading[int] = NOT_SUPPORTED
    # energy since the driver was (re)loaded, millijoules (NVML nvmlDeviceGetTotalEnergyConsumption; Volta+)
    energy_mj: Reading[float] = NOT_SUPPORTED


@dataclass(frozen=True)
class Snapshot:
    """Everything one read of the GPUs returned: the samples plus machine-wide facts."""

    samples: tuple[Sample, ...]
    driver_version: Reading[str] = NOT_SUPPORTED
    cuda_driver_version: Reading[str] = NOT_SUPPORTED  # the CUDA version the driver supports ("12.4")
    errors: tuple[str, ...] = ()  # messages that stood in for output (e.g. "No devices were found")


@dataclass(frozen=True)
class ParseProblem:
    """A part of a recording that could not be read (the rest was): where, and what was wrong."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"
