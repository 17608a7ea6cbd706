"""Parser for `nvidia-smi -q` text (the human-readable full query).

Each `Key : value` line is placed in a tree by its indentation, then each GPU's block is flattened into
paths and read through the field tables in `smi_fields`. A truncated or mangled block yields what could be
read plus a `ParseProblem` naming the part that could not; an unrecognised clock-event reason is named
too. Labels differ across drivers ("KMD Version"/"CUDA UMD Version" since 610, the old labels then
carrying a deprecation note); every one is listed.

Pure: text in, data out. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuwise.gpu import _values as v
from gpuwise.gpu import throttle
from gpuwise.gpu.sample import NOT_SUPPORTED, GpuProcess, MigDevice, ParseProblem, Reading, Sample, Snapshot
from gpuwise.gpu.smi_errors import with_lost_gpus
from gpuwise.gpu.smi_fields import (
    MAX_DEPTH,
    Parsed,
    active_reasons,
    first_version,
    gpu_fields,
    parse_smi_time,
    process_kind,
    read_field,
)
from gpuwise.locale import _

__all__ = ["looks_like_query_text", "parse_query_text"]


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
        fields = gpu_fields(flat, xml=False)
        fields["bus_id"] = v.to_str(flat.get("pci/bus id", bus))
        reasons_node = next(
            (c for c in gpu.children if c.key in ("clocks event reasons", "clocks throttle reasons")), None
        )
        if reasons_node is not None:
            pairs = [(n.key, n.value) for n in _walk(reasons_node) if n.value is not None]
            reasons, unknown = active_reasons(pairs, throttle.LABELS)
            fields["throttle_reasons"] = reasons
            if unknown:
                problems.append(
                    ParseProblem(
                        source,
                        _("GPU {bus}: unrecognised clock event reason(s) {reasons} (line {line} on)").format(
                            bus=bus, reasons=", ".join(sorted(unknown)), line=reasons_node.line
                        ),
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
                    _("GPU {bus}: the output is cut short or damaged; missing {sections}").format(
                        bus=bus, sections=", ".join(missing_sections)
                    ),
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
                source,
                _("says {attached} GPUs are attached but describes {described}: output truncated").format(
                    attached=attached, described=len(gpus)
                ),
            )
        )
    if not gpus and attached != 0:  # "Attached GPUs : 0" is an answer, not damage
        problems.append(ParseProblem(source, _("no GPU block found in the nvidia-smi -q output")))
    snapshot = Snapshot(
        samples=tuple(samples),
        driver_version=first_version(top.get("kmd version"), top.get("driver version")),
        cuda_driver_version=first_version(top.get("cuda umd version"), top.get("cuda version")),
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
                kind=process_kind(attrs.get("type", "C")),
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
                memory_used_bytes=read_field(
                    flat, v.to_bytes, ("shared fb memory usage/used", "fb memory usage/used")
                ),
                memory_total_bytes=read_field(
                    flat, v.to_bytes, ("shared fb memory usage/total", "fb memory usage/total")
                ),
                multiprocessor_count=v.to_int(flat.get("device attributes/shared/multiprocessor count", "")),
            )
        )
    return tuple(out)
