"""Parser for the default `nvidia-smi` table (the pre-410 two-line blocks, the narrow pre-545 layout and the
wide newer one; Linux's persistence column or Windows' driver-model column; the 610+ "KMD Version" banner).

Reads each GPU's three-line block (index, name, persistence, bus id, display, ECC; fan, temperature,
performance state, power, memory, utilization, compute mode; MIG mode), the MIG device table and the
process table. A fan cell `ERR!` becomes `Failed("ERR!")`. Names the table truncates ("NVIDIA GeForce ...")
are kept as printed. Pure; standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuwise.gpu import _values as v
from gpuwise.gpu.sample import NOT_SUPPORTED, GpuProcess, MigDevice, ParseProblem, Sample, Snapshot
from gpuwise.gpu.smi_errors import with_lost_gpus
from gpuwise.gpu.smi_fields import Parsed, parse_smi_time
from gpuwise.locale import _

__all__ = ["looks_like_table", "parse_table"]

# "Driver Version"/"CUDA Version" until 610, "KMD Version"/"CUDA UMD Version" since; drivers before 410
# print no CUDA version at all.
_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD) Version:\s*(?P<driver>[^\s|]+)"
    r"(?:\s+CUDA(?: UMD)? Version:\s*(?P<cuda>[^\s|]+))?"
)
# The first cell ends with persistence mode on Linux ("On"/"Off") and with the driver model on Windows
# ("WDDM", "TCC", "MCDM"; column "TCC/WDDM" or "Driver-Model").
# Numbers are read up to 9 or 10 digits: longer runs are damage, and int() refuses over 4,300 digits.
_LINE1 = re.compile(r"^\s*(?P<index>\d{1,9})\s+(?P<name>.*?)\s+(?P<persist>On|Off|WDDM|TCC|MCDM|N/A)\s*$")
_BUS = re.compile(
    r"^\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+(?P<disp>\S+)\s*$"
)
_LINE2A = re.compile(
    r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)\s*$"
)
_MEM = re.compile(r"^\s*(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*$")
_UTIL = re.compile(r"^\s*(?P<util>\S+)\s+(?P<mode>.+?)\s*$")
# GI/CI columns exist since driver 450 (MIG); older tables go straight from GPU to PID.
_PROC = re.compile(
    r"^\|\s*(?P<gpu>\d{1,9})\s+(?:(?P<gi>\S+)\s+(?P<ci>\S+)\s+)?(?P<pid>\d{1,10})\s+(?P<type>C\+G|M\+C|[CGM])\s+"
    r"(?P<name>.*?)\s+(?P<mem>\S+MiB|N/A)\s*\|$"
)
_PROC_GPU = re.compile(r"^\|\s*(?P<gpu>\d{1,9})\s")
_MIG_ROW = re.compile(
    r"^\|\s*(?P<gpu>\d{1,9})\s+(?P<gi>\d{1,9})\s+(?P<ci>\d{1,9})\s+(?P<dev>\d{1,9})\s*\|\s*(?P<mem>[^|]*)\|(?P<sm>[^|]*)\|"
)


def looks_like_table(text: str) -> bool:
    return _HEADER.search(text[:3000]) is not None and "|" in text


def _cells(line: str) -> list[str]:
    return line.strip().strip("|").split("|")


def _mib_or_missing(text: str) -> Any:
    # "1MiB" (no space) and "N/A"
    return v.to_bytes(text.replace("MiB", " MiB"))


@dataclass
class _Sections:
    """What the table's sections hold: each GPU's block, and the process and MIG rows by GPU index."""

    gpus: list[dict[str, Any]] = field(default_factory=list)
    processes: dict[int, list[GpuProcess]] = field(default_factory=dict)
    migs: dict[int, list[MigDevice]] = field(default_factory=dict)
    unreadable: set[int] = field(default_factory=set)  # GPUs with a process row that cannot be read


def parse_table(text: str, *, source: str = "<table>", default_timestamp_s: float = 0.0) -> Parsed:
    problems: list[ParseProblem] = []
    lines = text.splitlines()
    header = _HEADER.search(text)
    driver: Any = header.group("driver") if header else NOT_SUPPORTED
    cuda: Any = v.to_str(header.group("cuda") or "") if header else NOT_SUPPORTED
    ts = _table_time(lines, default_timestamp_s)
    sections = _scan(lines, source, problems)
    out = _samples(sections, ts, has_process_table="Processes:" in text)
    if not out:
        problems.append(ParseProblem(source, _("no GPU rows found in the nvidia-smi table")))
    snapshot = Snapshot(
        samples=tuple(out),
        driver_version=v.to_str(driver) if header else driver,
        cuda_driver_version=cuda,
    )
    return Parsed(with_lost_gpus(snapshot, text, ts), problems)


def _table_time(lines: list[str], default_timestamp_s: float) -> float:
    """The clock line nvidia-smi prints above the table, if one of the first three lines is one."""
    for line in lines[:3]:
        got = parse_smi_time(line.strip()) if line.strip() and not line.startswith(("+", "|")) else None
        if got is not None:
            return got
    return default_timestamp_s


def _scan(lines: list[str], source: str, problems: list[ParseProblem]) -> _Sections:
    """Each line read as its section says: GPU blocks until "MIG devices:", then MIG rows, then (after
    "Processes:") process rows."""
    found = _Sections()
    section = "gpus"
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if "MIG devices:" in line:
            section = "mig"
        elif "Processes:" in line:
            section = "procs"
        if section == "gpus" and stripped.startswith("|") and i + 1 < len(lines):
            cells = _cells(line)
            m1 = _LINE1.match(cells[0]) if len(cells) >= 3 else None
            if m1 and len(cells) == 3:
                parsed = _gpu_block(lines, i, m1, cells, source=source, problems=problems)
                if parsed is not None:
                    found.gpus.append(parsed)
                    i += 3
                    continue
        elif section == "procs":
            _process_row(stripped, found)
        elif section == "mig":
            _mig_row(stripped, found)
        i += 1
    return found


def _process_row(stripped: str, found: _Sections) -> None:
    mp = _PROC.match(stripped)
    odd = None if mp else _PROC_GPU.match(stripped)
    if odd:
        # a row for this GPU we cannot read ("|  0   C   Not Supported |" on old GeForce drivers):
        # its process list is unknown, not empty
        found.unreadable.add(int(odd.group("gpu")))
    if mp:
        gpu = int(mp.group("gpu"))
        found.processes.setdefault(gpu, []).append(
            GpuProcess(
                pid=int(mp.group("pid")),
                name=mp.group("name").strip(),
                used_memory_bytes=_mib_or_missing(mp.group("mem")),
                kind={"C": "compute", "G": "graphics", "C+G": "compute+graphics"}.get(
                    mp.group("type"), "compute"
                ),
            )
        )


def _mig_row(stripped: str, found: _Sections) -> None:
    mm = _MIG_ROW.match(stripped)
    if mm:
        gpu = int(mm.group("gpu"))
        mem = _MEM.match(mm.group("mem"))
        sm = mm.group("sm").split()
        found.migs.setdefault(gpu, []).append(
            MigDevice(
                index=int(mm.group("dev")),
                gpu_instance_id=int(mm.group("gi")),
                compute_instance_id=int(mm.group("ci")),
                memory_used_bytes=_mib_or_missing(mem.group("used")) if mem else NOT_SUPPORTED,
                memory_total_bytes=_mib_or_missing(mem.group("total")) if mem else NOT_SUPPORTED,
                multiprocessor_count=v.to_int(sm[0]) if sm else NOT_SUPPORTED,
            )
        )


def _samples(found: _Sections, ts: float, *, has_process_table: bool) -> list[Sample]:
    """One Sample per GPU block, with its processes (when the table has a process section) and MIG
    devices (when MIG mode is on)."""
    out = []
    for fields in found.gpus:
        idx = fields.pop("index")
        if has_process_table:
            fields["processes"] = (
                NOT_SUPPORTED if idx in found.unreadable else tuple(found.processes.get(idx, ()))
            )
        if fields.get("mig_mode") is True:
            fields["mig_devices"] = tuple(found.migs.get(idx, ()))
        out.append(Sample(timestamp_s=ts, index=idx, **v.drop_impossible(fields)))
    return out


def _gpu_block(
    lines: list[str],
    i: int,
    m1: re.Match[str],
    cells: list[str],
    *,
    source: str,
    problems: list[ParseProblem],
) -> dict[str, Any] | None:
    bus = _BUS.match(cells[1])
    line2 = _cells(lines[i + 1]) if i + 1 < len(lines) else []
    line3 = _cells(lines[i + 2]) if i + 2 < len(lines) else []
    if len(line2) != 3:
        incomplete = _("line {line}: GPU {index} block is incomplete").format(
            line=i + 2, index=m1.group("index")
        )
        problems.append(ParseProblem(source, incomplete))
        return None
    fields: dict[str, Any] = {
        "index": int(m1.group("index")),
        "name": v.to_str(m1.group("name")),
        # Windows shows the driver model in this place, and no persistence mode (a Linux-only setting)
        "persistence_mode": v.to_bool(m1.group("persist"))
        if m1.group("persist") in ("On", "Off")
        else NOT_SUPPORTED,
        "bus_id": v.to_str(bus.group("bus")) if bus else NOT_SUPPORTED,
        "display_active": v.to_bool(bus.group("disp")) if bus else NOT_SUPPORTED,
    }
    if m1.group("persist") not in ("On", "Off", "N/A"):
        fields["extra"] = {"driver_model": m1.group("persist")}
    ecc = cells[2].strip()
    # the ECC cell holds the volatile uncorrectable count, or "On"/"Off" for MIG-mode GPUs, or N/A
    fields["ecc_uncorrected_volatile"] = v.to_int(ecc) if ecc not in ("On", "Off") else NOT_SUPPORTED
    m2 = _LINE2A.match(line2[0])
    if m2:
        fields["fan_speed_pct"] = v.to_float(m2.group("fan"))
        fields["temperature_c"] = v.to_float(m2.group("temp").rstrip("C"))
        fields["pstate"] = v.to_str(m2.group("perf"))
        fields["power_draw_watts"] = v.to_float(m2.group("pwr").rstrip("W"))
        fields["power_limit_watts"] = v.to_float(m2.group("cap").rstrip("W"))
    else:
        problems.append(
            ParseProblem(
                source,
                _("line {line}: cannot read fan/temp/power of GPU {index}").format(
                    line=i + 2, index=fields["index"]
                ),
            )
        )
    mem = _MEM.match(line2[1])
    if mem:
        fields["memory_used_bytes"] = _mib_or_missing(mem.group("used"))
        fields["memory_total_bytes"] = _mib_or_missing(mem.group("total"))
    util = _UTIL.match(line2[2])
    if util:
        fields["util_gpu_pct"] = v.to_float(util.group("util").rstrip("%"))
        fields["compute_mode"] = v.to_str(util.group("mode"))
    if len(line3) == 3:
        fields["mig_mode"] = v.to_bool(line3[2].strip())
    return fields
