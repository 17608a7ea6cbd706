"""The readings nvidia-smi's `-q` outputs hold, as data, and the readers every nvidia-smi parser shares.

`SPECS` maps each `Sample` field to its converter and to every path it has had, as XML tag paths
(`-q -x`) and as lowercased `-q` text keys: field names differ across driver generations (`memory_usage`
before ~340, `fb_memory_usage` since; `power_readings` versus `gpu_power_readings`, with its "GPU Ceiling
Power Limit" group since 610; the Volta-era "Single Bit / Double Bit" ECC layout versus the SRAM/DRAM
one). `gpu_fields` reads one GPU's flattened paths through these tables; the XML and text parsers differ
only in how they flatten. Also here: the result type `Parsed`, nvidia-smi's clock text and version texts.

Pure; standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpuwise.gpu import _values as v
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, NotSupported, ParseProblem, Reading, Snapshot

__all__ = [
    "MAX_DEPTH",
    "SPECS",
    "Flat",
    "Parsed",
    "active_reasons",
    "first_version",
    "gpu_fields",
    "parse_smi_time",
    "process_kind",
    "read_field",
]


@dataclass
class Parsed:
    """A snapshot and what could not be read of it."""

    snapshot: Snapshot
    problems: list[ParseProblem] = field(default_factory=list)


# nvidia-smi's XML and `-q` text nest 5-6 levels; deeper elements are damage (or an attack: a recursive
# reader hits RecursionError near 1000) and are not read.
MAX_DEPTH = 32


Flat = Mapping[str, str]


def _first(flat: Flat, paths: Sequence[str]) -> str | None:
    for p in paths:
        if p in flat:
            return flat[p]
    return None


def read_field(flat: Flat, conv: Callable[[str, str], Any], paths: Sequence[str], unit: str = "") -> Any:
    """The first path holding a value wins; if every present path says N/A, NotSupported (or Failed)."""
    fallback: Any = NOT_SUPPORTED
    for p in paths:
        text = flat.get(p)
        if text is None:
            continue
        got = conv(text, unit)
        if not isinstance(got, NotSupported | Failed):
            return got
        if isinstance(got, Failed) or fallback is NOT_SUPPORTED:
            fallback = got
    return fallback


def _sum(flat: Flat, paths: Iterable[str]) -> Reading[int]:
    """Sum of the counters present; NotSupported when none of them holds a number."""
    total = 0
    seen = False
    failed: Failed | None = None
    for p in paths:
        text = flat.get(p)
        if text is None:
            continue
        got = v.to_int(text)
        if isinstance(got, int):
            total += got
            seen = True
        elif isinstance(got, Failed):
            failed = got
    if seen:
        return total
    return failed or NOT_SUPPORTED


def active_reasons(
    items: Iterable[tuple[str, str]], names: Mapping[str, str]
) -> tuple[Reading[tuple[str, ...]], list[str]]:
    """Active reason ids from (key, "Active"/"Not Active") pairs; also the keys that were not understood."""
    active: list[str] = []
    seen = False
    unknown: list[str] = []
    for key, text in items:
        reason = names.get(key)
        if reason is None:
            unknown.append(key)
            continue
        got = v.to_bool(text)
        if isinstance(got, bool):
            seen = True
            if got:
                active.append(reason)
    return (v.canonical_reasons(active) if seen else NOT_SUPPORTED), unknown


def parse_smi_time(text: str) -> float | None:
    """'Fri Aug  4 11:44:30 2023' (nvidia-smi's local clock) -> seconds, read as UTC like trace times."""
    try:
        moment = datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return v.parse_trace_time(text)
    return moment.replace(tzinfo=UTC).timestamp()


# Field specs shared by the XML and text parsers: (Sample field, converter, XML paths, text paths).
# Paths are "/"-joined tag names (XML) or lowercased `-q` keys (text), relative to one GPU.
_Spec = tuple[str, Callable[[str, str], Any], tuple[str, ...], tuple[str, ...]]
SPECS: tuple[_Spec, ...] = (
    ("name", v.to_str, ("product_name",), ("product name",)),
    ("uuid", v.to_str, ("uuid",), ("gpu uuid",)),
    ("util_gpu_pct", v.to_float, ("utilization/gpu_util",), ("utilization/gpu",)),
    ("util_memory_pct", v.to_float, ("utilization/memory_util",), ("utilization/memory",)),
    ("util_encoder_pct", v.to_float, ("utilization/encoder_util",), ("utilization/encoder",)),
    ("util_decoder_pct", v.to_float, ("utilization/decoder_util",), ("utilization/decoder",)),
    # drivers before ~2013 (nvidia-smi 2.x/3.x) called the framebuffer "memory_usage" / "Memory Usage"
    (
        "memory_used_bytes",
        v.to_bytes,
        ("fb_memory_usage/used", "memory_usage/used"),
        ("fb memory usage/used", "memory usage/used"),
    ),
    (
        "memory_total_bytes",
        v.to_bytes,
        ("fb_memory_usage/total", "memory_usage/total"),
        ("fb memory usage/total", "memory usage/total"),
    ),
    ("memory_reserved_bytes", v.to_bytes, ("fb_memory_usage/reserved",), ("fb memory usage/reserved",)),
    (
        "power_draw_watts",
        v.to_float,
        (
            "gpu_power_readings/power_draw",
            "power_readings/power_draw",
            "gpu_power_readings/average_power_draw",
            "gpu_power_readings/instant_power_draw",
        ),
        (
            "gpu power readings/power draw",
            "power readings/power draw",
            "gpu power readings/average power draw",
            "gpu power readings/instantaneous power draw",
        ),
    ),
    (
        "power_limit_watts",
        v.to_float,
        (
            "gpu_power_readings/current_power_limit",
            "gpu_power_readings/gpu_ceiling_power_limit/current_power_limit",  # drivers 610+
            "power_readings/power_limit",
            "power_readings/enforced_power_limit",
        ),
        (
            "gpu power readings/current power limit",
            # drivers 610+ nest the limits one level deeper
            "gpu power readings/gpu ceiling power limit/current power limit",
            "power readings/power limit",
            "power readings/enforced power limit",
        ),
    ),
    (
        "power_default_limit_watts",
        v.to_float,
        ("gpu_power_readings/default_power_limit", "power_readings/default_power_limit"),
        (
            "gpu power readings/default power limit",
            "gpu power readings/gpu ceiling power limit/default power limit",
            "power readings/default power limit",
        ),
    ),
    (
        "temperature_c",
        v.to_float,
        ("temperature/gpu_temp",),
        ("temperature/gpu current temp", "temperature/gpu"),  # "Gpu : 45 C" before driver ~340
    ),
    ("memory_temperature_c", v.to_float, ("temperature/memory_temp",), ("temperature/memory current temp",)),
    ("fan_speed_pct", v.to_float, ("fan_speed",), ("fan speed",)),
    ("sm_clock_mhz", v.to_float, ("clocks/sm_clock",), ("clocks/sm",)),
    ("memory_clock_mhz", v.to_float, ("clocks/mem_clock",), ("clocks/memory",)),
    ("sm_clock_max_mhz", v.to_float, ("max_clocks/sm_clock",), ("max clocks/sm",)),
    ("memory_clock_max_mhz", v.to_float, ("max_clocks/mem_clock",), ("max clocks/memory",)),
    (
        "pcie_gen_current",
        v.to_int,
        ("pci/pci_gpu_link_info/pcie_gen/current_link_gen",),
        ("pci/gpu link info/pcie generation/current",),
    ),
    (
        "pcie_gen_max",
        v.to_int,
        ("pci/pci_gpu_link_info/pcie_gen/max_link_gen",),
        ("pci/gpu link info/pcie generation/max",),
    ),
    (
        "pcie_width_current",
        v.to_int,
        ("pci/pci_gpu_link_info/link_widths/current_link_width",),
        ("pci/gpu link info/link width/current",),
    ),
    (
        "pcie_width_max",
        v.to_int,
        ("pci/pci_gpu_link_info/link_widths/max_link_width",),
        ("pci/gpu link info/link width/max",),
    ),
    ("pcie_tx_bytes_per_s", v.to_rate, ("pci/tx_util",), ("pci/tx throughput",)),
    ("pcie_rx_bytes_per_s", v.to_rate, ("pci/rx_util",), ("pci/rx throughput",)),
    ("pcie_replay_count", v.to_int, ("pci/replay_counter",), ("pci/replays since reset",)),
    ("ecc_mode_enabled", v.to_bool, ("ecc_mode/current_ecc",), ("ecc mode/current",)),
    (
        "retired_pages_pending",
        v.to_bool,
        ("retired_pages/pending_retirement", "retired_pages/pending_blacklist"),
        (
            "retired pages/pending page retirement",
            "retired pages/pending page blacklist",
            "retired pages/pending",
        ),
    ),
    (
        "retired_pages_single_bit",
        v.to_int,
        ("retired_pages/multiple_single_bit_retirement/retired_count",),
        ("retired pages/single bit ecc",),
    ),
    (
        "retired_pages_double_bit",
        v.to_int,
        ("retired_pages/double_bit_retirement/retired_count",),
        ("retired pages/double bit ecc",),
    ),
    (
        "remapped_rows_correctable",
        v.to_int,
        ("remapped_rows/remapped_row_corr",),
        ("remapped rows/correctable error",),
    ),
    (
        "remapped_rows_uncorrectable",
        v.to_int,
        ("remapped_rows/remapped_row_unc",),
        ("remapped rows/uncorrectable error",),
    ),
    ("remapped_rows_pending", v.to_bool, ("remapped_rows/remapped_row_pending",), ("remapped rows/pending",)),
    (
        "remapped_rows_failure",
        v.to_bool,
        ("remapped_rows/remapped_row_failure",),
        ("remapped rows/remapping failure occurred",),
    ),
    ("persistence_mode", v.to_bool, ("persistence_mode",), ("persistence mode",)),
    ("mig_mode", v.to_bool, ("mig_mode/current_mig",), ("mig mode/current",)),
    ("pstate", v.to_str, ("performance_state",), ("performance state",)),
    ("compute_mode", v.to_str, ("compute_mode",), ("compute mode",)),
    ("display_active", v.to_bool, ("display_active",), ("display active",)),
)

# ECC counters, new layout (sram/dram) and the Volta-era one (single/double bit totals).
_ECC_XML = {
    "ecc_corrected_volatile": ("volatile", ("sram_correctable", "dram_correctable"), "single_bit/total"),
    "ecc_uncorrected_volatile": (
        "volatile",
        (
            "sram_uncorrectable",
            "sram_uncorrectable_parity",
            "sram_uncorrectable_secded",
            "dram_uncorrectable",
        ),
        "double_bit/total",
    ),
    "ecc_corrected_aggregate": ("aggregate", ("sram_correctable", "dram_correctable"), "single_bit/total"),
    "ecc_uncorrected_aggregate": (
        "aggregate",
        (
            "sram_uncorrectable",
            "sram_uncorrectable_parity",
            "sram_uncorrectable_secded",
            "dram_uncorrectable",
        ),
        "double_bit/total",
    ),
}
_ECC_TEXT = {
    "ecc_corrected_volatile": ("volatile", ("sram correctable", "dram correctable"), "single bit/total"),
    "ecc_uncorrected_volatile": (
        "volatile",
        (
            "sram uncorrectable",
            "sram uncorrectable parity",
            "sram uncorrectable sec-ded",
            "dram uncorrectable",
        ),
        "double bit/total",
    ),
    "ecc_corrected_aggregate": ("aggregate", ("sram correctable", "dram correctable"), "single bit/total"),
    "ecc_uncorrected_aggregate": (
        "aggregate",
        (
            "sram uncorrectable",
            "sram uncorrectable parity",
            "sram uncorrectable sec-ded",
            "dram uncorrectable",
        ),
        "double bit/total",
    ),
}


# Where a newer driver moves a reading one level deeper than any path above, it is still found under its
# section by the last part of its path (section, leaf) — e.g. 610's "GPU Ceiling Power Limit" group.
_DEEP_FALLBACK: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "power_limit_watts": (
        ("gpu_power_readings/", "/current_power_limit"),
        ("gpu power readings/", "/current power limit"),
    ),
    "power_default_limit_watts": (
        ("gpu_power_readings/", "/default_power_limit"),
        ("gpu power readings/", "/default power limit"),
    ),
}

# A vGPU guest, which cannot read the board's sensors, reports 0 C and 0 MHz instead of N/A. (Zeros that
# are never real in any format are dropped by `_values.drop_impossible`.)
_ZERO_IN_VGPU_GUEST = ("temperature_c", "memory_temperature_c", "sm_clock_mhz", "memory_clock_mhz")
_VIRT_MODE = ("gpu_virtualization_mode/virtualization_mode", "gpu virtualization mode/virtualization mode")


def gpu_fields(flat: Flat, xml: bool) -> dict[str, Any]:
    """Every `SPECS` reading of one GPU's flattened paths (XML tag paths if `xml`, else `-q` text keys),
    with the deeper 610+ power paths, the vGPU guest's zeros and the ECC totals of either layout."""
    out: dict[str, Any] = {}
    for name, conv, xml_paths, text_paths in SPECS:
        out[name] = read_field(flat, conv, xml_paths if xml else text_paths)
    for name, (xml_ends, text_ends) in _DEEP_FALLBACK.items():
        if isinstance(out[name], NotSupported):
            head, tail = xml_ends if xml else text_ends
            deep = tuple(k for k in flat if k.startswith(head) and k.endswith(tail))
            out[name] = read_field(flat, v.to_float, deep) if deep else out[name]
    vgpu_guest = (_first(flat, _VIRT_MODE) or "").strip().lower() == "vgpu"
    for name in _ZERO_IN_VGPU_GUEST if vgpu_guest else ():
        if out.get(name) == 0:
            out[name] = NOT_SUPPORTED
    ecc = _ECC_XML if xml else _ECC_TEXT
    root = "ecc_errors" if xml else "ecc errors"
    for name, (scope, parts, legacy) in ecc.items():
        legacy_path = f"{root}/{scope}/{legacy}"
        if legacy_path in flat:
            out[name] = read_field(flat, v.to_int, (legacy_path,))
        else:
            out[name] = _sum(flat, (f"{root}/{scope}/{p}" for p in parts))
    return out


def first_version(*texts: str | None) -> Reading[str]:
    """The first of these version texts that holds one. Drivers 610+ print "KMD Version" / "CUDA UMD
    Version" and mark the old "Driver Version" / "CUDA Version" deprecated, so the new names come first."""
    fallback: Reading[str] = NOT_SUPPORTED
    for text in texts:
        if text is None:
            continue
        got = v.to_version(text)
        if isinstance(got, str):
            return got
        fallback = got
    return fallback


def process_kind(code: str) -> str:
    """nvidia-smi's process type code ("C", "G", "C+G", "M", "M+C") -> GpuProcess.kind."""
    code = code.strip().upper()
    return {"C": "compute", "G": "graphics", "C+G": "compute+graphics", "M": "compute", "M+C": "compute"}.get(
        code, "compute"
    )
