"""Xid events from kernel logs (`dmesg`, `dmesg -T`, `journalctl -k`): `NVRM: Xid (PCI:…): N, …` lines.

An Xid is the driver's report of a GPU fault (code meanings: the bundled xid-errors.csv, read by the
doctor). Pure: text in, events out; standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from gpuwise.gpu._values import parse_trace_time

__all__ = ["XidEvent", "looks_like_kernel_log", "normalize_bus_id", "parse_xid_events"]


@dataclass(frozen=True)
class XidEvent:
    """One `NVRM: Xid` line. `pci_bus_id` is normalised to nvidia-smi's form ("00000000:9B:00.0")."""

    pci_bus_id: str
    xid: int
    message: str
    pid: int | None = None
    process_name: str | None = None
    timestamp: str | None = None  # the log's own time text: "Sun Feb 23 16:24:18 2025" or "12345.678901"
    timestamp_s: float | None = None  # that time as seconds (wall clock read as UTC), when it is a date
    line: str = ""  # the log line as written (stripped): the evidence a diagnosis quotes


_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?)\):\s*"
    # Xid codes are small; a run of thousands of digits is no Xid (and int() refuses over 4,300 digits)
    r"(?P<xid>\d{1,9}),\s*(?P<rest>.*)$"
)
_MAX_PID_DIGITS = 10  # Linux pids fit in 22 bits; longer digit runs are damage, not a pid
_PID = re.compile(r"^pid=(?P<pid>'?<?[\w ]+>?'?)(?:,\s*name=(?P<name>[^,]*))?(?:,\s*(?P<msg>.*))?$")
_BRACKET_TIME = re.compile(r"^\[\s*(?P<t>[^\]]+)\]")
_SYSLOG_TIME = re.compile(r"^(?P<t>[A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2})")
# `journalctl -o short-iso` / RFC 3339 syslog: "2024-03-05T10:00:00.123456+0000 host kernel: …"
_ISO_TIME = re.compile(r"^(?P<t>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")


def normalize_bus_id(bus: str) -> str:
    """'0000:9b:00' or '0000:9B:00.0' -> '00000000:9B:00.0' (nvidia-smi's 8-digit domain form)."""
    bus = bus.strip().upper()
    if bus.startswith("PCI:"):
        bus = bus[4:]
    parts = bus.split(":")
    if len(parts) == 3:
        domain, b, dev = parts
        if "." not in dev:
            dev += ".0"
        try:
            return f"{int(domain, 16):08X}:{b}:{dev}"
        except ValueError:  # not a PCI address (a damaged recording): compare it as written
            return bus
    return bus


def looks_like_kernel_log(text: str) -> bool:
    return "NVRM:" in text and _XID.search(text) is not None


def _time(line: str) -> tuple[str | None, float | None]:
    m = _BRACKET_TIME.match(line)
    if m:
        raw = m.group("t").strip()
        try:
            moment = datetime.strptime(" ".join(raw.split()), "%a %b %d %H:%M:%S %Y")
        except ValueError:
            return raw, None  # seconds since boot: no wall clock
        return raw, moment.replace(tzinfo=UTC).timestamp()
    m = _SYSLOG_TIME.match(line)
    if m:
        return m.group("t"), None  # syslog omits the year
    m = _ISO_TIME.match(line)
    if m:
        # the wall clock as written (a zone is not applied), like nvidia-smi's own timestamps
        return m.group("t"), parse_trace_time(m.group("t"))
    return None, None


def parse_xid_events(text: str) -> list[XidEvent]:
    """Every Xid line, in log order."""
    events = []
    for line in text.splitlines():
        if "Xid" not in line:
            continue
        m = _XID.search(line)
        if m is None:
            continue
        rest = m.group("rest").strip()
        pid: int | None = None
        name: str | None = None
        pm = _PID.match(rest)
        if pm:
            raw_pid = pm.group("pid").strip("'")
            pid = int(raw_pid) if raw_pid.isdigit() and len(raw_pid) <= _MAX_PID_DIGITS else None
            raw_name = (pm.group("name") or "").strip()
            name = raw_name if raw_name and raw_name != "<unknown>" else None
            rest = (pm.group("msg") or "").strip()
        stamp, stamp_s = _time(line)
        events.append(
            XidEvent(
                pci_bus_id=normalize_bus_id(m.group("bus")),
                xid=int(m.group("xid")),
                message=rest,
                pid=pid,
                process_name=name,
                timestamp=stamp,
                timestamp_s=stamp_s,
                line=line.strip(),
            )
        )
    return events
