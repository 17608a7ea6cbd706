"""dcgm-exporter's metrics as gpuwise serves them: names, types, help, units and labels, per `Sample` field.

Names, units and types follow NVIDIA dcgm-exporter's etc/default-counters.csv (and
dcp-metrics-included.csv for DCGM_FI_DEV_FB_RESERVED); the driver version label is spelled as
dcgm-exporter spells it (`DCGM_FI_DRIVER_VERSION`). A getter returns None for a reading the GPU does
not support or that failed, and the series is then absent (never a sentinel).
"""

from __future__ import annotations

from collections.abc import Callable

from gpuwise.gpu.sample import Sample, value_or_none
from gpuwise.monitor.record import throttle_mask
from gpuwise.units import MIB

LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname"]
DRIVER_LABEL = "DCGM_FI_DRIVER_VERSION"  # dcgm-exporter's label for the driver version, on every GPU series


def num(reading: object) -> float | None:
    """A numeric reading as float (bools count 0/1); None for NotSupported/Failed or a non-number."""
    if isinstance(reading, int | float):
        return float(reading)
    return None


def _fb_free(s: Sample) -> float | None:
    used, total = value_or_none(s.memory_used_bytes), value_or_none(s.memory_total_bytes)
    return None if used is None or total is None else (total - used) / MIB


def _mib(reading: object) -> float | None:
    v = num(reading)
    return None if v is None else v / MIB


def _mask(s: Sample) -> float | None:
    reasons = value_or_none(s.throttle_reasons)
    return None if reasons is None else float(throttle_mask(reasons))


def _xid_last(s: Sample) -> float | None:
    # dcgm-exporter's XID_ERRORS is the value (code) of the last Xid seen; 0 when none was.
    last = num(s.xid_last)
    if last is not None:
        return last
    count = num(s.xid_errors)
    return 0.0 if count == 0 else None


# (name, type, help, value) — names, units and types as dcgm-exporter's default-counters.csv.
DCGM_METRICS: list[tuple[str, str, str, Callable[[Sample], float | None]]] = [
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", lambda s: num(s.util_gpu_pct)),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", lambda s: num(s.util_memory_pct)),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", lambda s: num(s.util_encoder_pct)),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", lambda s: num(s.util_decoder_pct)),
    (
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "Framebuffer memory used (in MiB).",
        lambda s: _mib(s.memory_used_bytes),
    ),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", _fb_free),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        "gauge",
        "Framebuffer memory reserved (in MiB).",
        lambda s: _mib(s.memory_reserved_bytes),
    ),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", lambda s: num(s.temperature_c)),
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        "gauge",
        "Memory temperature (in C).",
        lambda s: num(s.memory_temperature_c),
    ),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", lambda s: num(s.power_draw_watts)),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "Total energy consumption since boot (in mJ).",
        lambda s: num(s.energy_mj),
    ),
    (
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "gauge",
        "Power management limit (in W).",
        lambda s: num(s.power_limit_watts),
    ),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", lambda s: num(s.sm_clock_mhz)),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        "gauge",
        "Memory clock frequency (in MHz).",
        lambda s: num(s.memory_clock_mhz),
    ),
    ("DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed (in %).", lambda s: num(s.fan_speed_pct)),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", _xid_last),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "counter",
        "Total number of PCIe retries.",
        lambda s: num(s.pcie_replay_count),
    ),
    (
        "DCGM_FI_DEV_PCIE_LINK_GEN",
        "gauge",
        "PCIe current link generation.",
        lambda s: num(s.pcie_gen_current),
    ),
    (
        "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "gauge",
        "PCIe current link width.",
        lambda s: num(s.pcie_width_current),
    ),
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "gauge",
        "Current clock throttle reasons (bitmask of nvml reasons).",
        _mask,
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
        lambda s: num(s.ecc_corrected_volatile),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
        lambda s: num(s.ecc_uncorrected_volatile),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "counter",
        "Total number of double-bit persistent ECC errors.",
        lambda s: num(s.ecc_uncorrected_aggregate),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors.",
        lambda s: num(s.remapped_rows_correctable),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors.",
        lambda s: num(s.remapped_rows_uncorrectable),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "Whether remapping of rows has failed.",
        lambda s: num(s.remapped_rows_failure),
    ),
]
