"""Parsers for what `nvidia-smi` prints: `-q -x` XML, `-q` text and the one-line failure messages.

Each parser returns a `Snapshot` plus the `ParseProblem`s it met: a damaged or truncated output yields
what could be read and a problem naming the part that could not, never a traceback. Field names differ
across driver generations (`memory_usage` before ~340, `fb_memory_usage` since; `clocks_throttle_reasons`
before 535, `clocks_event_reasons` since; the Volta-era "Single Bit / Double Bit" ECC layout versus the
SRAM/DRAM one; `power_readings` versus `gpu_power_readings` with average and instantaneous draw, and its
"GPU Ceiling Power Limit" group since 610; "KMD Version"/"CUDA UMD Version" since 610, the old labels then
carrying a deprecation note); each reading lists every name it has had. A GPU that nvidia-smi names in an
"Unable to determine the device handle" line becomes a lost sample beside the others.

Pure: text in, data out. Standard library only (xml.etree for XML; the DTD is never fetched).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from gpuwise.gpu import _values as v
from gpuwise.gpu import throttle
from gpuwise.gpu.kernel_log import normalize_bus_id
from gpuwise.gpu.sample import (
    NOT_SUPPORTED,
    Failed,
    GpuProcess,
    MigDevice,
    NotSupported,
    ParseProblem,
    Reading,
    Sample,
    Snapshot,
)

__all__ = [
    "ErrorKind",
    "classify_error_text",
    "looks_like_error_text",
    "looks_like_query_text",
    "looks_like_xml",
    "lost_sample",
    "parse_error_text",
    "parse_query_text",
    "parse_xml",
    "with_lost_gpus",
]


@dataclass
class Parsed:
    """A snapshot and what could not be read of it."""

    snapshot: Snapshot
    problems: list[ParseProblem] = field(default_factory=list)


# --------------------------------------------------------------------------- shared helpers

Flat = Mapping[str, str]


def _first(flat: Flat, paths: Sequence[str]) -> str | None:
    for p in paths:
        if p in flat:
            return flat[p]
    return None


def _read(flat: Flat, conv: Callable[[str, str], Any], paths: Sequence[str], unit: str = "") -> Any:
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


def _reasons(
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
_SPECS: tuple[_Spec, ...] = (
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

_XML_REASONS = throttle.XML_TAGS
_TEXT_REASONS = throttle.LABELS


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


def _fields(flat: Flat, xml: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, conv, xml_paths, text_paths in _SPECS:
        out[name] = _read(flat, conv, xml_paths if xml else text_paths)
    for name, (xml_ends, text_ends) in _DEEP_FALLBACK.items():
        if isinstance(out[name], NotSupported):
            head, tail = xml_ends if xml else text_ends
            deep = tuple(k for k in flat if k.startswith(head) and k.endswith(tail))
            out[name] = _read(flat, v.to_float, deep) if deep else out[name]
    vgpu_guest = (_first(flat, _VIRT_MODE) or "").strip().lower() == "vgpu"
    for name in _ZERO_IN_VGPU_GUEST if vgpu_guest else ():
        if out.get(name) == 0:
            out[name] = NOT_SUPPORTED
    ecc = _ECC_XML if xml else _ECC_TEXT
    root = "ecc_errors" if xml else "ecc errors"
    for name, (scope, parts, legacy) in ecc.items():
        legacy_path = f"{root}/{scope}/{legacy}"
        if legacy_path in flat:
            out[name] = _read(flat, v.to_int, (legacy_path,))
        else:
            out[name] = _sum(flat, (f"{root}/{scope}/{p}" for p in parts))
    return out


# --------------------------------------------------------------------------- XML (-q -x)


def looks_like_xml(text: str) -> bool:
    head = text.lstrip()[:400]
    return head.startswith("<?xml") or "<nvidia_smi_log" in head


# nvidia-smi's XML and `-q` text nest 5-6 levels; deeper elements are damage (or an attack: a recursive
# reader hits RecursionError near 1000) and are not read.
MAX_DEPTH = 32


def _flatten_xml(
    elem: ET.Element, prefix: str, out: dict[str, str], skip: frozenset[str], depth: int = 0
) -> None:
    for child in elem:
        if child.tag in skip:
            continue
        path = f"{prefix}{child.tag}"
        if len(child):
            if depth < MAX_DEPTH:
                _flatten_xml(child, path + "/", out, frozenset(), depth + 1)
        else:
            out.setdefault(path, (child.text or "").strip())


_XML_SKIP = frozenset({"processes", "mig_devices", "supported_clocks", "accounted_processes"})


def parse_xml(text: str, *, source: str = "<xml>", default_timestamp_s: float = 0.0) -> Parsed:
    """`nvidia-smi -q -x` output -> one Snapshot. GPUs are indexed in the order nvidia-smi lists them
    (by PCI bus id, as nvidia-smi numbers them); `<attached_gpus>` is not trusted over the elements."""
    problems: list[ParseProblem] = []
    # the DOCTYPE names a DTD file that is never read: ElementTree does not fetch external entities
    # a declaration after blank lines or a BOM (an `echo`ed or redirected file) is still the same XML;
    # lines before it are what nvidia-smi printed first ("Unable to determine the device handle for GPU…"
    # when one GPU is lost, the XML of the others follows)
    start = _xml_start(text)
    preamble, text = text[:start], text[start:]
    # entity declarations are what the "billion laughs" expansion is made of; nvidia-smi never writes one
    # (its XML names an external DTD that is never read, or with --dtd inlines element declarations only)
    if "<!ENTITY" in text:
        problems.append(
            ParseProblem(source, "the XML declares entities (nvidia-smi never does); it was not read")
        )
        return Parsed(Snapshot(samples=()), problems)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        salvaged = _salvage_xml(text)
        problems.append(ParseProblem(source, f"XML is damaged ({exc}); read the complete <gpu> elements"))
        if salvaged is None:
            return Parsed(Snapshot(samples=()), problems)
        root = salvaged
    ts_text = root.findtext("timestamp")
    ts = (parse_smi_time(ts_text) if ts_text else None) or default_timestamp_s
    driver = _version(root.findtext("kmd_version"), root.findtext("driver_version"))
    cuda = _version(root.findtext("cuda_umd_version"), root.findtext("cuda_version"))
    samples = []
    for index, gpu in enumerate(root.findall("gpu")):
        flat: dict[str, str] = {}
        _flatten_xml(gpu, "", flat, _XML_SKIP)
        fields = _fields(flat, xml=True)
        bus = gpu.get("id") or flat.get("pci/pci_bus_id", "")
        fields["bus_id"] = v.to_str(flat.get("pci/pci_bus_id", bus))
        reasons_elem = gpu.find("clocks_event_reasons")
        if reasons_elem is None:
            reasons_elem = gpu.find("clocks_throttle_reasons")
        if reasons_elem is not None:
            reasons, _unknown = _reasons(
                ((c.tag, (c.text or "").strip()) for c in reasons_elem), _XML_REASONS
            )
            fields["throttle_reasons"] = reasons
        fields["processes"] = _xml_processes(gpu)
        fields["mig_devices"] = _xml_mig(gpu, fields.get("mig_mode"))
        extra: dict[str, str] = {
            k: flat[k]
            for k in ("vbios_version", "serial", "product_architecture", "product_brand")
            if k in flat
        }
        samples.append(Sample(timestamp_s=ts, index=index, extra=extra, **v.drop_impossible(fields)))
    if not samples and (root.findtext("attached_gpus") or "").strip() != "0":
        problems.append(ParseProblem(source, "the XML holds no <gpu> element"))
    snapshot = Snapshot(samples=tuple(samples), driver_version=driver, cuda_driver_version=cuda)
    return Parsed(with_lost_gpus(snapshot, preamble, ts), problems)


def _xml_start(text: str) -> int:
    for marker in ("<?xml", "<!DOCTYPE", "<nvidia_smi_log"):
        at = text.find(marker)
        if at >= 0:
            return at
    return len(text) - len(text.lstrip("\ufeff \t\r\n"))


def _version(*texts: str | None) -> Reading[str]:
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


def _salvage_xml(text: str) -> ET.Element | None:
    """A root holding the complete <gpu> elements (and header fields) of a damaged or truncated file."""
    head = ET.Element("nvidia_smi_log")
    for tag in ("timestamp", "driver_version", "cuda_version", "kmd_version", "cuda_umd_version"):
        value = _between(text, f"<{tag}>", f"</{tag}>", 0)
        if value is not None and "\n" not in value[0]:
            ET.SubElement(head, tag).text = value[0]
    # str.find, not a lazy regex: with many "<gpu" and no "</gpu>" a regex rescans the rest of the text
    # from each one (quadratic time on a hostile file)
    at = 0
    while (found := _between(text, "<gpu", "</gpu>", at)) is not None:
        body, at = found
        if body[:1] not in (">", " ", "\t", "\n"):
            continue  # <gpu_something>
        try:
            head.append(ET.fromstring("<gpu" + body + "</gpu>"))
        except ET.ParseError:
            continue
    return head if len(head) else None


def _between(text: str, start: str, end: str, at: int) -> tuple[str, int] | None:
    """The text between the first `start` at or after `at` and the next `end`, and where to look next."""
    i = text.find(start, at)
    if i < 0:
        return None
    j = text.find(end, i + len(start))
    if j < 0:
        return None
    return text[i + len(start) : j], j + len(end)


def _xml_processes(gpu: ET.Element) -> Reading[tuple[GpuProcess, ...]]:
    procs = gpu.find("processes")
    if procs is None:
        return NOT_SUPPORTED
    out: list[GpuProcess] = []
    for info in procs.findall("process_info"):
        pid = v.to_int(info.findtext("pid") or "")
        if not isinstance(pid, int):
            continue
        out.append(
            GpuProcess(
                pid=pid,
                name=(info.findtext("process_name") or "").strip(),
                used_memory_bytes=v.to_bytes(info.findtext("used_memory") or ""),
                kind=_process_kind(info.findtext("type") or "C"),
            )
        )
    return tuple(out)


def _process_kind(code: str) -> str:
    code = code.strip().upper()
    return {"C": "compute", "G": "graphics", "C+G": "compute+graphics", "M": "compute", "M+C": "compute"}.get(
        code, "compute"
    )


def _xml_mig(gpu: ET.Element, mig_mode: Any) -> Reading[tuple[MigDevice, ...]]:
    devices = gpu.find("mig_devices")
    if devices is None or mig_mode is not True:
        return NOT_SUPPORTED
    out: list[MigDevice] = []
    for dev in devices.findall("mig_device"):
        idx = v.to_int(dev.findtext("index") or "")
        out.append(
            MigDevice(
                index=idx if isinstance(idx, int) else len(out),
                gpu_instance_id=v.to_int(dev.findtext("gpu_instance_id") or ""),
                compute_instance_id=v.to_int(dev.findtext("compute_instance_id") or ""),
                memory_used_bytes=v.to_bytes(dev.findtext("fb_memory_usage/used") or ""),
                memory_total_bytes=v.to_bytes(dev.findtext("fb_memory_usage/total") or ""),
                multiprocessor_count=v.to_int(
                    dev.findtext("device_attributes/shared/multiprocessor_count") or ""
                ),
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- -q text


@dataclass
class _Node:
    key: str
    value: str | None
    indent: int
    line: int
    children: list[_Node] = field(default_factory=list)


# "Key   : value"; a key as long as the alignment column touches its colon ("Memory Max Operating T.Limit
# Temp Specification: 0 C", driver 610). The colon must be followed by a space or the end of the line, so
# "GPU 00000000:83:00.0" stays a section title.
_KV = re.compile(r"^(?P<key>\S.*?)\s*:(?:\s(?P<value>.*))?$")


def looks_like_query_text(text: str) -> bool:
    return "==NVSMI LOG==" in text[:2000]


def _tree(lines: Sequence[str]) -> list[_Node]:
    roots: list[_Node] = []
    stack: list[_Node] = []
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        stripped = line.lstrip()
        if not stripped or stripped.startswith("=="):
            continue
        indent = len(line) - len(stripped)
        m = _KV.match(stripped)
        if m:
            node = _Node(m.group("key").strip().lower(), (m.group("value") or "").strip(), indent, lineno)
        else:
            node = _Node(stripped.strip().lower(), None, indent, lineno)
        while stack and stack[-1].indent >= indent:
            stack.pop()
        if len(stack) > MAX_DEPTH:  # deeper than any nvidia-smi output: kept as a sibling, not nested
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _flatten_text(node: _Node, prefix: str, out: dict[str, str]) -> None:
    for child in node.children:
        if child.key in ("processes", "mig device"):
            continue
        path = f"{prefix}{child.key}"
        if child.value is not None:
            out.setdefault(path, child.value)
        if child.children:
            _flatten_text(child, path + "/", out)


def _has(node: _Node, key: str) -> bool:
    return any(c.key == key for c in node.children)


def _walk(node: _Node) -> Iterable[_Node]:
    for child in node.children:
        yield child
        yield from _walk(child)


# Sections every complete `-q` GPU block has; their absence means the output was cut short.
_EXPECTED_SECTIONS = ("fb memory usage", "utilization", "temperature", "clocks")


def parse_query_text(text: str, *, source: str = "<text>", default_timestamp_s: float = 0.0) -> Parsed:
    """`nvidia-smi -q` output -> one Snapshot; a truncated or mangled block gives ParseProblems."""
    problems: list[ParseProblem] = []
    roots = _tree(text.splitlines())
    top = {n.key: n.value for n in roots if n.value is not None}
    ts_text = top.get("timestamp")
    ts = (parse_smi_time(ts_text) if ts_text else None) or default_timestamp_s
    samples = []
    gpus = [n for n in roots if n.value is None and n.key.startswith("gpu ")]
    for index, gpu in enumerate(gpus):
        bus = gpu.key[4:].strip().upper()
        flat: dict[str, str] = {}
        _flatten_text(gpu, "", flat)
        fields = _fields(flat, xml=False)
        fields["bus_id"] = v.to_str(flat.get("pci/bus id", bus))
        reasons_node = next(
            (c for c in gpu.children if c.key in ("clocks event reasons", "clocks throttle reasons")), None
        )
        if reasons_node is not None:
            pairs = [(n.key, n.value) for n in _walk(reasons_node) if n.value is not None]
            reasons, unknown = _reasons(pairs, _TEXT_REASONS)
            fields["throttle_reasons"] = reasons
            if unknown:
                problems.append(
                    ParseProblem(
                        source,
                        f"GPU {bus}: unrecognised clock event reason(s) {', '.join(sorted(unknown))} "
                        f"(line {reasons_node.line} on)",
                    )
                )
        fields["processes"] = _text_processes(gpu)
        fields["mig_devices"] = _text_mig(gpu, fields.get("mig_mode"))
        present = {c.key for c in gpu.children} | (
            {"fb memory usage"} if _has(gpu, "memory usage") else set()
        )
        missing_sections = [s for s in _EXPECTED_SECTIONS if s not in present]
        # `nvidia-smi -q -d MEMORY,…` prints only the chosen sections and no "Product Name": not damage
        if missing_sections and _has(gpu, "product name"):
            problems.append(
                ParseProblem(
                    source,
                    f"GPU {bus}: the output is cut short or damaged; missing {', '.join(missing_sections)}",
                )
            )
        extra: dict[str, str] = {
            k: flat[k] for k in ("vbios version", "serial number", "product architecture") if k in flat
        }
        samples.append(Sample(timestamp_s=ts, index=index, extra=extra, **v.drop_impossible(fields)))
    attached = v.to_int(top.get("attached gpus", ""))
    if isinstance(attached, int) and attached != len(gpus):
        problems.append(
            ParseProblem(
                source, f"says {attached} GPUs are attached but describes {len(gpus)}: output truncated"
            )
        )
    if not gpus and attached != 0:  # "Attached GPUs : 0" is an answer, not damage
        problems.append(ParseProblem(source, "no GPU block found in the nvidia-smi -q output"))
    snapshot = Snapshot(
        samples=tuple(samples),
        driver_version=_version(top.get("kmd version"), top.get("driver version")),
        cuda_driver_version=_version(top.get("cuda umd version"), top.get("cuda version")),
    )
    return Parsed(with_lost_gpus(snapshot, text, ts), problems)


def _text_processes(gpu: _Node) -> Reading[tuple[GpuProcess, ...]]:
    node = next((c for c in gpu.children if c.key == "processes"), None)
    if node is None:
        return NOT_SUPPORTED
    if node.value is not None and not node.children:
        # "Processes : None" means none running; "N/A" means not readable
        return () if node.value.strip().lower() == "none" else v.missing(node.value) or ()
    out: list[GpuProcess] = []
    for item in _walk(node):
        if item.key != "process id" or item.value is None:
            continue
        pid = v.to_int(item.value)
        if not isinstance(pid, int):
            continue
        attrs = {c.key: c.value or "" for c in item.children}
        out.append(
            GpuProcess(
                pid=pid,
                name=attrs.get("name", "").strip(),
                used_memory_bytes=v.to_bytes(attrs.get("used gpu memory", "")),
                kind=_process_kind(attrs.get("type", "C")),
            )
        )
    return tuple(out)


def _text_mig(gpu: _Node, mig_mode: Any) -> Reading[tuple[MigDevice, ...]]:
    nodes = [c for c in gpu.children if c.key == "mig device"]
    if mig_mode is not True or not nodes:
        return NOT_SUPPORTED
    out: list[MigDevice] = []
    for node in nodes:
        flat: dict[str, str] = {}
        _flatten_text(node, "", flat)
        idx = v.to_int(flat.get("index", ""))
        out.append(
            MigDevice(
                index=idx if isinstance(idx, int) else len(out),
                gpu_instance_id=v.to_int(flat.get("gpu instance id", "")),
                compute_instance_id=v.to_int(flat.get("compute instance id", "")),
                memory_used_bytes=_read(
                    flat, v.to_bytes, ("shared fb memory usage/used", "fb memory usage/used")
                ),
                memory_total_bytes=_read(
                    flat, v.to_bytes, ("shared fb memory usage/total", "fb memory usage/total")
                ),
                multiprocessor_count=v.to_int(flat.get("device attributes/shared/multiprocessor count", "")),
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- one-line failures


class ErrorKind:
    """Ids for the failure texts nvidia-smi prints instead of output (the doctor maps them to findings)."""

    DRIVER_MISSING = "driver_missing"  # "couldn't communicate with the NVIDIA driver"
    NO_DEVICES = "no_devices"  # "No devices were found"
    GPU_LOST = "gpu_lost"  # "Unable to determine the device handle for GPU…" / "GPU is lost"
    NVML_INIT = "nvml_init"  # "Failed to initialize NVML: Unknown Error"
    LIBRARY_MISMATCH = "library_mismatch"  # "Failed to initialize NVML: Driver/library version mismatch"


_ERROR_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"couldn't communicate with the NVIDIA driver", re.I), ErrorKind.DRIVER_MISSING),
    (re.compile(r"^No devices were found", re.I | re.M), ErrorKind.NO_DEVICES),
    (re.compile(r"Unable to determine the device handle for GPU", re.I), ErrorKind.GPU_LOST),
    (re.compile(r"GPU is lost", re.I), ErrorKind.GPU_LOST),
    (re.compile(r"Driver/library version mismatch", re.I), ErrorKind.LIBRARY_MISMATCH),
    (re.compile(r"Failed to initialize NVML", re.I), ErrorKind.NVML_INIT),
)
_LOST_BUS = re.compile(
    r"device handle for GPU\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])"
)


def classify_error_text(text: str) -> str | None:
    """The ErrorKind of an nvidia-smi failure text, or None."""
    head = text[:4000]
    for pattern, kind in _ERROR_PATTERNS:
        if pattern.search(head):
            return kind
    return None


def looks_like_error_text(text: str) -> bool:
    """A short output (a few lines) that is one of nvidia-smi's failure messages."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return 0 < len(lines) <= 5 and classify_error_text(text) is not None


_LOST_LINE = re.compile(
    r"^[^\S\n]*Unable to determine the device handle for GPU\s*"
    r"(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]).*$",
    re.M | re.I,
)


def with_lost_gpus(snapshot: Snapshot, text: str, timestamp_s: float) -> Snapshot:
    """`snapshot` plus a lost sample for each GPU that nvidia-smi said it could not reach, in a line printed
    before (or among) the readings of the others. A lost GPU must never vanish silently: its index is
    unknown, so it goes after the others with `extra["index_known"] = "no"`."""
    found = list(_LOST_LINE.finditer(text))
    if not found:
        return snapshot
    known = {normalize_bus_id(s.bus_id) for s in snapshot.samples if isinstance(s.bus_id, str)}
    samples = list(snapshot.samples)
    errors = list(snapshot.errors)
    next_index = max((s.index for s in samples), default=-1) + 1
    for m in found:
        line = " ".join(m.group(0).split())
        if line not in errors:
            errors.append(line)
        bus = m.group("bus").upper()
        if normalize_bus_id(bus) in known:
            continue
        known.add(normalize_bus_id(bus))
        lost = lost_sample(timestamp_s, next_index, bus, line)
        lost.extra["index_known"] = "no"
        samples.append(lost)
        next_index += 1
    return replace(snapshot, samples=tuple(samples), errors=tuple(errors))


def lost_sample(timestamp_s: float, index: int, bus_id: Reading[str], why: str) -> Sample:
    """A GPU that cannot be reached: every reading Failed(why), `lost=True`."""
    failed = Failed(why)
    readings: dict[str, Any] = {
        name: failed
        for name in Sample.__dataclass_fields__
        if name not in ("timestamp_s", "index", "lost", "extra", "bus_id")
    }
    return Sample(timestamp_s=timestamp_s, index=index, bus_id=bus_id, lost=True, **readings)


def parse_error_text(text: str, *, source: str = "<text>", default_timestamp_s: float = 0.0) -> Parsed:
    """A failure message -> a Snapshot with no samples (or one lost GPU) and the message in `errors`.

    The kind is in `classify_error_text(snapshot.errors[0])`. A lost GPU's index is unknown from the
    message, so the lost sample gets index 0 and `extra["index_known"] = "no"`.
    """
    message = " ".join(text.split())
    kind = classify_error_text(text)
    samples: tuple[Sample, ...] = ()
    if kind == ErrorKind.GPU_LOST:
        m = _LOST_BUS.search(text)
        bus: Reading[str] = m.group(1).upper() if m else NOT_SUPPORTED
        lost = lost_sample(default_timestamp_s, 0, bus, message)
        lost.extra["index_known"] = "no"
        samples = (lost,)
    problems = [] if kind else [ParseProblem(source, f"unrecognised nvidia-smi message: {message[:200]!r}")]
    return Parsed(Snapshot(samples=samples, errors=(message,)), problems)
