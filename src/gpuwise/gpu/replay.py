"""Load a recording of GPU output (docs/replay.md) and detect its format from the content.

Formats: `nvidia-smi -q -x` XML, `nvidia-smi -q` text, the default table, a failure message, a kernel
log with `NVRM: Xid` lines, a capture file (sections under `#` banners), a `--query-gpu` CSV time series,
or a directory of these. A path that is none of them raises ReplayError (exit 2); a recognisable but
damaged one yields what could be read plus `ParseProblem`s.

This module reads files; the parsing itself is in the pure modules it calls. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from gpuwise.errors import ReplayError
from gpuwise.gpu import capture, kernel_log, smi_csv, smi_errors, smi_table, smi_text, smi_xml
from gpuwise.gpu.kernel_log import XidEvent
from gpuwise.gpu.sample import NOT_SUPPORTED, ParseProblem, Sample, Snapshot
from gpuwise.locale import _

__all__ = ["FORMATS", "ParseProblem", "Recording", "XidEvent", "load_recording", "parse_recording_text"]

FORMATS = ("xml", "query-text", "table", "error", "kernel-log", "capture", "csv", "directory")

_MAX_BYTES = smi_csv.MAX_RECORDING_BYTES  # also the total of a folder's files
_MAX_FILES = 1000  # files one folder may hold (a capture run writes a few dozen)


@dataclass
class Recording:
    """What a recording holds. `snapshots` are time-ordered: one for a snapshot format, many for a
    CSV time series or a capture with idle and load sections."""

    format: str
    snapshots: list[Snapshot]
    xid_events: list[XidEvent] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)  # raw texts by name (capture sections, files)
    source: str = ""


def _not_a_recording(source: str, detail: str) -> ReplayError:
    return ReplayError(
        _("{source} is not a GPU recording gpuwise can replay ({detail})").format(
            source=source, detail=detail
        ),
        why=_(
            "--replay reads nvidia-smi -q -x XML, nvidia-smi -q text, the nvidia-smi table, an nvidia-smi "
            "error message, a kernel log with NVRM: Xid lines, a capture file, a --query-gpu CSV, "
            "or a folder of these"
        ),
        fix=_(
            "record one with: nvidia-smi -q -x > gpu.xml   (or nvidia-smi --query-gpu=timestamp,index,"
            "utilization.gpu,memory.used --format=csv -l 1 > trace.csv)"
        ),
    )


def detect_format(text: str) -> str | None:
    """The §4 format of a text, or None."""
    if smi_xml.looks_like_xml(text):
        return "xml"
    if capture.looks_like_capture(text):
        return "capture"
    if smi_text.looks_like_query_text(text):
        return "query-text"
    if smi_table.looks_like_table(text):
        return "table"
    if smi_csv.looks_like_query_csv(text):
        return "csv"
    if kernel_log.looks_like_kernel_log(text):
        return "kernel-log"
    if smi_errors.looks_like_error_text(text):
        return "error"
    return None


def parse_recording_text(text: str, *, source: str = "<text>") -> Recording:
    """Parse one text in any §4 format. Raises ReplayError when it is none of them."""
    fmt = detect_format(text)
    if fmt is None:
        stripped = text.strip()
        first = stripped.splitlines()[0] if stripped else ""
        if "," in first and "gpu_util_pct" in first:
            smi_csv.parse_query_csv(text, source=source)  # raises the error that names the W&B format
        if smi_csv.looks_like_headerless_csv(text):
            raise smi_csv.headerless_error(source)
        if smi_csv.names_query_fields(text):
            # raises the message that says the header must name utilization.gpu
            smi_csv.parse_query_csv(text, source=source, default_timestamp_s=0.0)
        detail = "it is empty" if not stripped else f"it starts with {stripped.splitlines()[0][:80]!r}"
        raise _not_a_recording(source, detail)
    if fmt == "csv":
        # a one-off `--query-gpu` snapshot without a timestamp is served as it is, like an XML without
        # <timestamp>; only a time series needs the clock (`idle replay` reads it with read_query_csv)
        snapshot_only = not smi_csv.has_timestamp_column(text)
        samples = smi_csv.parse_query_csv(
            text, source=source, default_timestamp_s=0.0 if snapshot_only else None
        )
        groups = smi_csv.iter_snapshot_groups(samples)
        driver = samples[0].extra.get("driver_version") if samples else None
        # one row per GPU for the views that show one (monitor, exporter, the daemon's replay probe)
        snaps = [
            Snapshot(samples=tuple(smi_csv.busiest_per_gpu(g)), driver_version=driver or NOT_SUPPORTED)
            for g in groups
        ]
        return Recording("csv", snaps, source=source)
    if fmt == "capture":
        cap = capture.parse_capture(text, source=source)
        events = kernel_log.parse_xid_events(text) if kernel_log.looks_like_kernel_log(text) else []
        return Recording(
            "capture",
            cap.snapshots,
            xid_events=events,
            problems=cap.problems,
            sections=cap.sections,
            source=source,
        )
    if fmt == "kernel-log":
        events = kernel_log.parse_xid_events(text)
        return Recording("kernel-log", [], xid_events=events, sections={"kernel-log": text}, source=source)
    parse = {
        "xml": smi_xml.parse_xml,
        "query-text": smi_text.parse_query_text,
        "table": smi_table.parse_table,
        "error": smi_errors.parse_error_text,
    }[fmt]
    parsed = parse(text, source=source)
    # a pasted bundle (`nvidia-smi; dmesg | grep Xid`) holds Xid lines after the snapshot: keep them
    events = kernel_log.parse_xid_events(text) if kernel_log.looks_like_kernel_log(text) else []
    return Recording(
        fmt,
        [parsed.snapshot],
        xid_events=events,
        problems=parsed.problems,
        sections={fmt: text},
        source=source,
    )


def _read_text(path: Path) -> str:
    return smi_csv.decode_text(smi_csv.gunzip_if_gzipped(smi_csv.read_recording_bytes(path), str(path)))


def attach_xids(snapshots: list[Snapshot], events: list[XidEvent]) -> list[Snapshot]:
    """Count each GPU's Xid events (matched by PCI bus id) into `xid_errors` / `xid_last`."""
    if not events:
        return snapshots
    by_bus: dict[str, list[XidEvent]] = {}
    for e in events:
        by_bus.setdefault(e.pci_bus_id, []).append(e)

    def with_xids(s: Sample) -> Sample:
        if not isinstance(s.bus_id, str):
            return s
        found = by_bus.get(kernel_log.normalize_bus_id(s.bus_id))
        if not found:
            return s
        return replace(s, xid_errors=len(found), xid_last=found[-1].xid)

    return [replace(snap, samples=tuple(with_xids(s) for s in snap.samples)) for snap in snapshots]


def _order(snapshots: list[Snapshot]) -> list[Snapshot]:
    return sorted(snapshots, key=lambda s: s.samples[0].timestamp_s if s.samples else 0.0)


def load_recording(path: Path | str) -> Recording:
    """Load a §4 recording (file or directory), detecting the format from the content."""
    path = Path(path)
    if not path.exists():
        raise ReplayError(
            _("{path} does not exist").format(path=path),
            fix=_("give the path of a recording (see gpuwise doctor --help)"),
        )
    if path.is_dir():
        return _load_directory(path)
    rec = parse_recording_text(_read_text(path), source=str(path))
    rec.snapshots = attach_xids(_order(rec.snapshots), rec.xid_events)
    return rec


def _load_directory(path: Path) -> Recording:
    # regular files only (a FIFO or a link to a device in the folder is skipped, never opened), and a
    # bounded number and total size of them
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    if len(files) > _MAX_FILES:
        raise _not_a_recording(str(path), f"it holds {len(files):,} files, more than {_MAX_FILES:,}")
    total = 0
    for f in files:
        try:
            total += f.stat().st_size
        except OSError:
            continue  # gone or unreadable: reported when read
    if total > _MAX_BYTES:
        raise _not_a_recording(
            str(path), f"its files hold {total:,} bytes, more than {_MAX_BYTES // 2**20} MiB in all"
        )
    snapshots: list[Snapshot] = []
    events: list[XidEvent] = []
    problems: list[ParseProblem] = []
    sections: dict[str, str] = {}
    formats: list[str] = []
    unpacked = 0
    for f in files:
        try:
            text = _read_text(f)
            unpacked += len(text)
            if unpacked > _MAX_BYTES:  # gzipped files unpack to more than they hold
                raise _not_a_recording(str(path), f"its files unpack to more than {_MAX_BYTES // 2**20} MiB")
            rec = parse_recording_text(text, source=str(f))
        except ReplayError as exc:
            if unpacked > _MAX_BYTES:
                raise
            problems.append(ParseProblem(str(f), exc.message))
            continue
        formats.append(rec.format)
        snapshots.extend(rec.snapshots)
        events.extend(rec.xid_events)
        problems.extend(rec.problems)
        for name, body in rec.sections.items():
            sections[f"{f.name} :: {name}"] = body
    if not formats:
        raise _not_a_recording(str(path), "no file in the folder is a recording")
    return Recording(
        "directory",
        attach_xids(_order(snapshots), events),
        xid_events=events,
        problems=problems,
        sections=sections,
        source=str(path),
    )
