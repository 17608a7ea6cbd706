"""Huawei Ascend NPUs as `npu-smi info` shows them: the facts and their parser.

`npu-smi info` prints a header line (``npu-smi 24.1.1   Version: 24.1.1``: the tool's and the driver
package's version) and a table with two rows per chip: ``NPU  Name | Health | Power(W) Temp(C)
Hugepages-Usage(page)`` and ``Chip [Phy-ID] | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB)``
(recordings and their sources: tests/fixtures/npu-smi/PROVENANCE.md). That the header's ``Version`` is the
driver's is how nputop reads it too (youyve/nputop pull request 6, "extract driver version from npu-smi
info"). The process table below it is not read. A value printed as ``-`` (a second chip's power) is None,
never 0.

Pure: text in, facts out; standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_FIRST = re.compile(r"^(\d+)\s+(\S.*)$")  # "0     910B4"
_SECOND = re.compile(r"^(\d+)(?:\s+(\d+))?$")  # "0" or "0     0" (Chip, Phy-ID)
_BUS = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-fx]{2}:[0-9A-Fa-fx]{2}\.[0-9A-Fa-fx]$")
_USAGE = re.compile(r"(\d+)\s*/\s*(\d+)\s*$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
# Health values npu-smi prints (OK, Warning, Alarm, Critical); anything else is shown as printed.
HEALTH_OK = "OK"


@dataclass(frozen=True)
class NpuChip:
    """One chip of one NPU, as one two-row block of the table."""

    npu: int
    chip: int
    name: str  # "910B4", "Ascend910"
    health: str  # "OK", "Warning", "Alarm", "Critical", as printed
    bus_id: str | None  # "0000:C1:00.0" (possibly masked by whoever published it)
    power_watts: float | None  # None: printed as "-" (shared with the NPU's first chip)
    temperature_c: float | None
    aicore_util_pct: float | None
    hbm_used_mb: int | None
    hbm_total_mb: int | None


@dataclass(frozen=True)
class NpuFacts:
    """What `npu-smi info` said: its version line and every chip."""

    source: str  # "npu-smi info" or "replay:<path>"
    npu_smi_version: str | None
    driver_version: str | None  # the header's "Version:" (the driver package, per npu-smi's own output)
    chips: tuple[NpuChip, ...]
    problems: tuple[str, ...] = ()  # rows that looked like chip rows but could not be read
    error: str | None = None  # npu-smi failed: what it printed or why it could not run


def looks_like_npu_smi(text: str) -> bool:
    """Whether this text is `npu-smi info` output (its header line, or its table's column titles)."""
    head = text[:4096]
    return _HEADER.search(head) is not None or ("| NPU" in head and "Bus-Id" in head and "Health" in head)


def _cells(line: str) -> list[str] | None:
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")):
        return None
    return [c.strip() for c in line[1:-1].split("|")]


def _num(text: str) -> float | None:
    return float(text) if _NUMBER.match(text) else None


def parse_npu_smi_info(text: str, source: str = "npu-smi info") -> NpuFacts:
    """The facts in one `npu-smi info` output (the device table; the process table is not read)."""
    header = _HEADER.search(text)
    chips: list[NpuChip] = []
    problems: list[str] = []
    first: tuple[int, str, str, list[str]] | None = None  # npu, name, health, the rest of row one
    for line in text.splitlines():
        cells = _cells(line)
        if cells is None or len(cells) != 3:
            if cells is not None and "Process id" in line:
                break  # the process table: not read
            continue
        m1, m2 = _FIRST.match(cells[0]), _SECOND.match(cells[0])
        if m1 and not _BUS.match(cells[1]) and cells[1] and not m1.group(2).isdigit():
            first = (int(m1.group(1)), m1.group(2).strip(), cells[1], cells[2].split())
            continue
        if m2 and _BUS.match(cells[1]) and first is not None:
            chips.append(_chip(first, int(m2.group(1)), cells))
            first = None
        elif first is not None and _BUS.match(cells[1]):
            problems.append(f"unreadable chip row: {line.strip()}")
    return NpuFacts(
        source=source,
        npu_smi_version=header.group(1) if header else None,
        driver_version=header.group(2) if header else None,
        chips=tuple(chips),
        problems=tuple(problems),
    )


def _chip(first: tuple[int, str, str, list[str]], chip: int, cells: list[str]) -> NpuChip:
    npu, name, health, top = first
    usage = _USAGE.search(cells[2])
    bottom = cells[2].split()
    return NpuChip(
        npu=npu,
        chip=chip,
        name=name,
        health=health,
        bus_id=cells[1],
        power_watts=_num(top[0]) if top else None,
        temperature_c=_num(top[1]) if len(top) > 1 else None,
        aicore_util_pct=_num(bottom[0]) if bottom else None,
        hbm_used_mb=int(usage.group(1)) if usage else None,
        hbm_total_mb=int(usage.group(2)) if usage else None,
    )
