"""Parser for `nvidia-smi -q -x` XML.

A damaged or truncated file yields the complete `<gpu>` elements it holds plus a `ParseProblem`, never a
traceback; lines printed before the XML (a GPU nvidia-smi could not reach) become lost samples. The
readings are found through the field tables in `smi_fields`.

Pure: text in, data out. Standard library only (xml.etree; the DTD is never fetched).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
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
)
from gpuwise.locale import _

__all__ = ["looks_like_xml", "parse_xml"]


def looks_like_xml(text: str) -> bool:
    head = text.lstrip()[:400]
    return head.startswith("<?xml") or "<nvidia_smi_log" in head


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
            ParseProblem(source, _("the XML declares entities (nvidia-smi never does); it was not read"))
        )
        return Parsed(Snapshot(samples=()), problems)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        salvaged = _salvage_xml(text)
        damaged = _("XML is damaged ({error}); read the complete <gpu> elements").format(error=exc)
        problems.append(ParseProblem(source, damaged))
        if salvaged is None:
            return Parsed(Snapshot(samples=()), problems)
        root = salvaged
    ts_text = root.findtext("timestamp")
    ts = (parse_smi_time(ts_text) if ts_text else None) or default_timestamp_s
    driver = first_version(root.findtext("kmd_version"), root.findtext("driver_version"))
    cuda = first_version(root.findtext("cuda_umd_version"), root.findtext("cuda_version"))
    samples = []
    for index, gpu in enumerate(root.findall("gpu")):
        flat: dict[str, str] = {}
        _flatten_xml(gpu, "", flat, _XML_SKIP)
        fields = gpu_fields(flat, xml=True)
        bus = gpu.get("id") or flat.get("pci/pci_bus_id", "")
        fields["bus_id"] = v.to_str(flat.get("pci/pci_bus_id", bus))
        reasons_elem = gpu.find("clocks_event_reasons")
        if reasons_elem is None:
            reasons_elem = gpu.find("clocks_throttle_reasons")
        if reasons_elem is not None:
            reasons, _unknown = active_reasons(
                ((c.tag, (c.text or "").strip()) for c in reasons_elem), throttle.XML_TAGS
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
        problems.append(ParseProblem(source, _("the XML holds no <gpu> element")))
    snapshot = Snapshot(samples=tuple(samples), driver_version=driver, cuda_driver_version=cuda)
    return Parsed(with_lost_gpus(snapshot, preamble, ts), problems)


def _xml_start(text: str) -> int:
    for marker in ("<?xml", "<!DOCTYPE", "<nvidia_smi_log"):
        at = text.find(marker)
        if at >= 0:
            return at
    return len(text) - len(text.lstrip("\ufeff \t\r\n"))


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
                kind=process_kind(info.findtext("type") or "C"),
            )
        )
    return tuple(out)


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
