"""`monitor --record FILE`: samples as the CSV `nvidia-smi --query-gpu=… --format=csv -l 1` writes
(docs/replay.md), so a recording replays with `--replay FILE` and reads like nvidia-smi's own output.

Headers are nvidia-smi's exact names with units (`utilization.gpu [%]`, `memory.used [MiB]`), values
carry units (`97 %`, `40960 MiB`), and a reading without a value is `[N/A]` (nvidia-smi's own word for
it; a failed reading is written the same way, since the CSV has no place for the reason). Timestamps
are written in UTC as `YYYY/MM/DD HH:MM:SS.mmm`. Beyond nvidia-smi's columns we add processes and
host facts under `gpuwise.*` names. Pure formatting plus a small append-only writer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from gpuwise import files
from gpuwise.errors import StorageError
from gpuwise.gpu import throttle
from gpuwise.gpu.sample import Failed, NotSupported, Sample, value_or_none
from gpuwise.locale import _
from gpuwise.monitor.host import HostStats

NA = "[N/A]"


def throttle_mask(reasons: tuple[str, ...]) -> int:
    """nvidia-smi's clocks_event_reasons.active bit mask of these reasons (gpu/throttle.py)."""
    return throttle.mask_of(reasons)


def _has(reading: object) -> bool:
    return not isinstance(reading, NotSupported | Failed)


def _unit(reading: object, unit: str, fmt: str = "{:.0f}") -> str:
    if not _has(reading):
        return NA
    text = fmt.format(reading)
    return f"{text} {unit}" if unit else text


def _mib(reading: object) -> str:
    if not _has(reading):
        return NA
    return f"{round(int(reading) / 2**20)} MiB"  # type: ignore[call-overload]  # an int reading


def _plain(reading: object) -> str:
    return str(reading) if _has(reading) else NA


def _enabled(reading: object) -> str:
    return ("Enabled" if reading else "Disabled") if _has(reading) else NA


def _yesno(reading: object) -> str:
    return ("Yes" if reading else "No") if _has(reading) else NA


def _mask(reading: object) -> str:
    if not _has(reading):
        return NA
    return f"0x{throttle_mask(reading):016X}"  # type: ignore[arg-type]  # a tuple reading


def _processes(sample: Sample) -> str:
    procs = value_or_none(sample.processes)
    if procs is None:
        return NA
    parts = []
    for p in procs:
        mem = value_or_none(p.used_memory_bytes)
        name = p.name.replace(";", "_").replace(":", "_")
        parts.append(f"{p.pid}:{name}:{NA if mem is None else round(mem / 2**20)}")
    return ";".join(parts)


def format_timestamp(ts: float) -> str:
    dt = datetime.fromtimestamp(ts, UTC)
    return dt.strftime("%Y/%m/%d %H:%M:%S.") + f"{dt.microsecond // 1000:03d}"


# (header exactly as nvidia-smi prints it, formatter)
GPU_COLUMNS: list[tuple[str, Callable[[Sample], str]]] = [
    ("timestamp", lambda s: format_timestamp(s.timestamp_s)),
    ("index", lambda s: str(s.index)),
    ("name", lambda s: _plain(s.name)),
    ("uuid", lambda s: _plain(s.uuid)),
    ("pci.bus_id", lambda s: _plain(s.bus_id)),
    ("utilization.gpu [%]", lambda s: _unit(s.util_gpu_pct, "%")),
    ("utilization.memory [%]", lambda s: _unit(s.util_memory_pct, "%")),
    ("utilization.encoder [%]", lambda s: _unit(s.util_encoder_pct, "%")),
    ("utilization.decoder [%]", lambda s: _unit(s.util_decoder_pct, "%")),
    ("memory.used [MiB]", lambda s: _mib(s.memory_used_bytes)),
    ("memory.total [MiB]", lambda s: _mib(s.memory_total_bytes)),
    ("power.draw [W]", lambda s: _unit(s.power_draw_watts, "W", "{:.2f}")),
    ("power.limit [W]", lambda s: _unit(s.power_limit_watts, "W", "{:.2f}")),
    ("temperature.gpu", lambda s: _unit(s.temperature_c, "")),
    ("temperature.memory", lambda s: _unit(s.memory_temperature_c, "")),
    ("fan.speed [%]", lambda s: _unit(s.fan_speed_pct, "%")),
    ("clocks.current.sm [MHz]", lambda s: _unit(s.sm_clock_mhz, "MHz")),
    ("clocks.current.memory [MHz]", lambda s: _unit(s.memory_clock_mhz, "MHz")),
    ("clocks_event_reasons.active", lambda s: _mask(s.throttle_reasons)),
    ("pcie.link.gen.current", lambda s: _plain(s.pcie_gen_current)),
    ("pcie.link.gen.max", lambda s: _plain(s.pcie_gen_max)),
    ("pcie.link.width.current", lambda s: _plain(s.pcie_width_current)),
    ("pcie.link.width.max", lambda s: _plain(s.pcie_width_max)),
    ("ecc.mode.current", lambda s: _enabled(s.ecc_mode_enabled)),
    ("ecc.errors.corrected.volatile.total", lambda s: _plain(s.ecc_corrected_volatile)),
    ("ecc.errors.uncorrected.volatile.total", lambda s: _plain(s.ecc_uncorrected_volatile)),
    ("ecc.errors.uncorrected.aggregate.total", lambda s: _plain(s.ecc_uncorrected_aggregate)),
    ("remapped_rows.correctable", lambda s: _plain(s.remapped_rows_correctable)),
    ("remapped_rows.uncorrectable", lambda s: _plain(s.remapped_rows_uncorrectable)),
    ("remapped_rows.pending", lambda s: _yesno(s.remapped_rows_pending)),
    ("remapped_rows.failure", lambda s: _yesno(s.remapped_rows_failure)),
    ("persistence_mode", lambda s: _enabled(s.persistence_mode)),
    ("mig.mode.current", lambda s: _enabled(s.mig_mode)),
    ("compute_cap", lambda s: _plain(s.compute_capability)),
    ("gpuwise.processes", _processes),
]

HOST_COLUMNS: list[tuple[str, Callable[[HostStats], str]]] = [
    ("gpuwise.host.cpu [%]", lambda h: NA if h.cpu_pct is None else f"{h.cpu_pct:.0f} %"),
    ("gpuwise.host.iowait [%]", lambda h: NA if h.iowait_pct is None else f"{h.iowait_pct:.0f} %"),
    (
        "gpuwise.host.memory.used [MiB]",
        lambda h: NA if h.memory_used_bytes is None else f"{round(h.memory_used_bytes / 2**20)} MiB",
    ),
]


def header(*, with_host: bool) -> list[str]:
    cols = [name for name, _ in GPU_COLUMNS]
    if with_host:
        cols += [name for name, _ in HOST_COLUMNS]
    return cols


def rows(samples: tuple[Sample, ...], host: HostStats | None, *, with_host: bool) -> list[list[str]]:
    out = []
    for s in samples:
        if s.lost:
            continue  # nvidia-smi prints no row for a GPU it cannot reach
        row = [fmt(s) for _, fmt in GPU_COLUMNS]
        if with_host:
            row += [NA] * len(HOST_COLUMNS) if host is None else [fmt(host) for _, fmt in HOST_COLUMNS]
        out.append(row)
    return out


def _line(cells: list[str]) -> str:
    # nvidia-smi separates cells by ", " and never quotes; a comma inside a cell (a process name could
    # hold one) would split it, so it becomes a space.
    return ", ".join(c.replace(",", " ").replace("\n", " ") for c in cells)


class Recorder:
    """Appends rows to FILE; the header is written once, when the file is new or empty. Each tick's rows
    go in as one piece (files.Appender): a full disk leaves the file as it was, never half a row, and is
    reported as a StorageError; appending resumes cleanly once there is space again."""

    # The raw write, injectable by tests (a full disk at our own interface); None: files.write_fd.
    _os_write: Callable[[int, memoryview], int] | None = None

    def __init__(self, path: Path, *, with_host: bool = True) -> None:
        self.path = path
        self.with_host = with_host
        # files.open_append refuses a FIFO or device (a hang or a black hole) and unsafe symlinks
        self._out = files.open_append(path, write=self._raw_write)
        if self._out.size == 0:
            self._append(_line(header(with_host=with_host)) + "\n")

    def _raw_write(self, fd: int, view: memoryview) -> int:
        return (self._os_write or files.write_fd)(fd, view)

    def write(self, samples: tuple[Sample, ...], host: HostStats | None = None) -> None:
        lines = [_line(row) + "\n" for row in rows(samples, host, with_host=self.with_host)]
        if lines:
            self._append("".join(lines))  # unbuffered: a recording cut short keeps every complete row

    def _append(self, text: str) -> None:
        try:
            self._out.append(text)
        except OSError as exc:
            raise StorageError(
                _("Cannot write the recording {path}: {reason}").format(
                    path=self.path, reason=exc.strerror or exc
                ),
                why=_("the rows of this snapshot were not written; every earlier row is complete and kept"),
                fix=_(
                    "free space on that disk (or choose another --record path); recording resumes by itself"
                ),
            ) from exc

    def close(self) -> None:
        self._out.close()
