"""Turning nvidia-smi's cell texts ("90 %", "10549 MiB", "[N/A]", "ERR!") into readings.

Shared by the CSV, XML, `-q` text and table parsers so that every format says "not supported" and
"failed" the same way. Pure functions; standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from gpuwise.gpu import throttle
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, NotSupported, Reading

# Cells meaning "this GPU/driver has no such reading" (compared lowercased, brackets included).
_NOT_SUPPORTED_TEXTS = frozenset(
    {
        "",
        "-",
        "n/a",
        "[n/a]",
        "not supported",
        "[not supported]",
        "[requested functionality has been deprecated]",
        "requested functionality has been deprecated",
        "not available",
        "[not available]",
        # the driver's NVML has no such function (a field newer than the driver)
        "function not found",
        "[function not found]",
    }
)

# Cell texts that start like this also mean "no such reading here", whatever follows: Windows prints
# "Not available in WDDM driver model" for per-process memory.
_NOT_SUPPORTED_PREFIXES = ("not available", "[not available", "not supported", "[not supported")

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/%]*)\s*$")

# Multipliers to bytes for the memory units nvidia-smi prints (MiB are 2**20 bytes). Drivers before the
# MiB spelling labelled the same binary numbers "MB" (`memory.total [MB]`), so MB/KB/GB are binary here too.
_BYTES = {
    "b": 1,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "kb": 1024,
    "mb": 1024**2,
    "gb": 1024**3,
}

# Throughput units → bytes per second. nvidia-smi's "KB/s" for PCIe tx/rx are NVML's KB/s, which NVML
# documents as kilobytes (1000); nvidia-smi itself computes them as 1024 — we follow NVML's doc word.
_RATE = {"b/s": 1, "kb/s": 1000, "mb/s": 1000**2, "gb/s": 1000**3}

_TRUE = frozenset({"enabled", "yes", "active", "on", "true", "1"})
_FALSE = frozenset({"disabled", "no", "not active", "off", "false", "0"})


def missing(text: str) -> NotSupported | Failed | None:
    """NotSupported / Failed for a cell that holds no value, None when the cell has one."""
    t = text.strip()
    low = t.lower()
    if low in _NOT_SUPPORTED_TEXTS or low.startswith(_NOT_SUPPORTED_PREFIXES):
        return NOT_SUPPORTED
    if t == "ERR!":
        return Failed("ERR!")
    if t.startswith("[") and t.endswith("]"):
        # "[Unknown Error]", "[GPU is lost]", "[Insufficient Permissions]"
        return Failed(t[1:-1])
    if low in ("unknown error", "gpu is lost", "insufficient permissions"):
        return Failed(t)
    return None


def number(text: str) -> tuple[float, str] | NotSupported | Failed:
    """'24.89 W' -> (24.89, 'W'); '16x' -> (16.0, 'x'); a non-number -> Failed."""
    gone = missing(text)
    if gone is not None:
        return gone
    m = _NUMBER.match(text)
    if m is None:
        return Failed(f"not a number: {text.strip()!r}")
    value = float(m.group(1))
    if not math.isfinite(value):  # "1e400" in a damaged file: no reading, and no int() overflow later
        return Failed(f"not a finite number: {text.strip()!r}")
    return value, m.group(2)


def to_float(text: str, unit: str = "") -> Reading[float]:
    del unit  # one signature for every converter; only the memory and rate ones use it
    parsed = number(text)
    if isinstance(parsed, NotSupported | Failed):
        return parsed
    return parsed[0]


def to_int(text: str, unit: str = "") -> Reading[int]:
    del unit  # one signature for every converter; only the memory and rate ones use it
    t = text.strip()
    if t.startswith("0x"):
        try:
            return int(t, 16)
        except ValueError:
            return Failed(f"not a number: {t!r}")
    parsed = number(t)
    if isinstance(parsed, NotSupported | Failed):
        return parsed
    if abs(parsed[0]) > _MAX_COUNT:  # "1e308" is a finite float but no count any GPU reports
        return Failed(f"out of range: {t!r}")
    return round(parsed[0])


def to_bytes(text: str, unit: str = "MiB") -> Reading[int]:
    """'10549 MiB' -> bytes; a bare number takes `unit` (the CSV header's unit, default MiB)."""
    parsed = number(text)
    if isinstance(parsed, NotSupported | Failed):
        return parsed
    value, found = parsed
    factor = _BYTES.get((found or unit or "MiB").lower())
    if factor is None:
        return Failed(f"unknown memory unit in {text.strip()!r}")
    total = value * factor
    if not math.isfinite(total):  # "1e308 MiB": inf bytes, which round() cannot turn into an int
        return Failed(f"not a finite number: {text.strip()!r}")
    return round(total)


def to_rate(text: str, unit: str = "KB/s") -> Reading[float]:
    """'4000 KB/s' -> bytes per second."""
    parsed = number(text)
    if isinstance(parsed, NotSupported | Failed):
        return parsed
    value, found = parsed
    factor = _RATE.get((found or unit or "KB/s").lower())
    if factor is None:
        return Failed(f"unknown rate unit in {text.strip()!r}")
    return value * factor


def to_bool(text: str, unit: str = "") -> Reading[bool]:
    del unit  # one signature for every converter; only the memory and rate ones use it
    gone = missing(text)
    if gone is not None:
        return gone
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    return Failed(f"not yes/no: {text.strip()!r}")


_DEPRECATION_NOTE = re.compile(r"\s*\[[^\]]*\]\s*$")


def to_version(text: str, unit: str = "") -> Reading[str]:
    """A version text without the note drivers 610+ append ("610.62 [Deprecated; … Use KMD Version
    instead]" -> "610.62")."""
    del unit  # one signature for every converter
    gone = missing(text)
    if gone is not None:
        return gone
    cleaned = _DEPRECATION_NOTE.sub("", text.strip()).strip()
    return cleaned or NOT_SUPPORTED


def to_str(text: str, unit: str = "") -> Reading[str]:
    del unit  # one signature for every converter; only the memory and rate ones use it
    gone = missing(text)
    if gone is not None:
        return gone
    return text.strip()


Converter = Callable[[str, str], Any]

# Readings whose 0 is no measurement, whatever the format: no GPU has a 0-byte framebuffer, a 0 W power
# limit or a 0 MHz maximum clock (vGPU guests and damaged files print them); a 0 would also be divided by.
_ZERO_IS_UNKNOWN = (
    "memory_total_bytes",
    "power_limit_watts",
    "power_default_limit_watts",
    "sm_clock_max_mhz",
    "memory_clock_max_mhz",
)
# Utilization is a share of time: outside 0..100 % it is damage, not a reading. (Fan speed may exceed 100 %,
# NVML says so; it is only bounded below.)
_PERCENT = ("util_gpu_pct", "util_memory_pct", "util_encoder_pct", "util_decoder_pct")

# Counts (ECC errors, replays, remapped rows) above this are damage: NVML returns them as 64-bit counters.
_MAX_COUNT = 2.0**64
# Physical readings outside these bounds are damage, not readings ("1e308 W" in a hand-edited file): a value
# that large would be summed into costs and drawn as bars. The bounds are far outside any GPU (the largest
# has 288 GB of memory, draws ~1.4 kW and its clocks stay under 20 GHz), so no real reading is refused.
_RANGES: dict[str, tuple[float, float]] = {
    "memory_used_bytes": (0, 2.0**50),
    "memory_total_bytes": (0, 2.0**50),
    "power_draw_watts": (0, 1e5),
    "power_limit_watts": (0, 1e5),
    "power_default_limit_watts": (0, 1e5),
    "temperature_c": (-273.15, 1000),
    "memory_temperature_c": (-273.15, 1000),
    "fan_speed_pct": (0, 1000),
    "sm_clock_mhz": (0, 1e6),
    "memory_clock_mhz": (0, 1e6),
    "sm_clock_max_mhz": (0, 1e6),
    "memory_clock_max_mhz": (0, 1e6),
    "pcie_tx_bytes_per_s": (0, 1e15),
    "pcie_rx_bytes_per_s": (0, 1e15),
    "pcie_gen_current": (0, 64),
    "pcie_gen_max": (0, 64),
    "pcie_width_current": (0, 1024),
    "pcie_width_max": (0, 1024),
}


def drop_impossible(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` (Sample keyword arguments) with readings no GPU can have replaced by NotSupported (a zero
    that means "unknown") or Failed (a percentage, size, power, temperature or clock out of range)."""
    for name in _ZERO_IS_UNKNOWN:
        if name in fields and not isinstance(fields[name], bool) and fields[name] == 0:
            fields[name] = NOT_SUPPORTED
    for name in _PERCENT:
        got = fields.get(name)
        if isinstance(got, int | float) and not (math.isfinite(got) and 0 <= got <= 100):
            fields[name] = Failed(f"out of range: {got:g} %")
    for name, (lo, hi) in _RANGES.items():
        got = fields.get(name)
        if isinstance(got, int | float) and not isinstance(got, bool) and not (lo <= got <= hi):
            fields[name] = Failed(f"out of range: {got:g}")  # also NaN, which fails every comparison
    return fields


# The clock-event reason table lives in gpu/throttle.py; these names are kept for the parsers.
THROTTLE_BITS: tuple[tuple[int, str], ...] = tuple((r.bit, r.id) for r in throttle.REASONS)
THROTTLE_IDS: tuple[str, ...] = throttle.IDS
canonical_reasons = throttle.canonical
throttle_ids_from_mask = throttle.ids_from_mask


# nvidia-smi's "2026/08/01 03:59:40.361"; also ISO 8601 as loggers write it ("2026-08-01T03:59:40.361589",
# nanoseconds from `date --iso-8601=ns`, a trailing "Z" or "+02:00"). A zone is ignored, not applied: a
# trace is replayed in its own wall clock (docs/idle.md).
_TRACE_TIME = re.compile(
    r"^\s*(\d{4})[/-](\d{2})[/-](\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
    r"\s*(?:Z|[+-]\d{2}:?\d{2})?\s*$"
)


def parse_trace_time(text: str) -> float | None:
    """'2026/08/01 03:59:40.361' (nvidia-smi's clock, no zone) -> seconds since the epoch read as UTC.

    Reading the wall-clock text as UTC is a convention, not a conversion: `format_trace_time` turns the
    number back into the very text that was recorded.
    """
    m = _TRACE_TIME.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = (m.group(7) or "")[:6]  # microseconds are as fine as a float of epoch seconds holds
    try:
        base = datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()
    except ValueError:
        return None
    return base + (int(frac) / 10 ** len(frac) if frac else 0.0)


def format_trace_time(ts: float) -> str:
    """Seconds since the epoch -> ISO-8601 without a zone ('2026-08-01T03:59:40.361'), read as UTC."""
    moment = datetime.fromtimestamp(ts, tz=UTC).replace(tzinfo=None)
    if moment.microsecond == 0:
        return moment.isoformat(timespec="seconds")
    if moment.microsecond % 1000 == 0:
        return moment.isoformat(timespec="milliseconds")
    return moment.isoformat(timespec="microseconds")
