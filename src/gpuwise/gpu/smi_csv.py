"""Parse the CSV that `nvidia-smi --query-gpu=… --format=csv[,nounits]` writes (docs/replay.md).

The header is printed by nvidia-smi with units in brackets (`utilization.gpu [%]`, `memory.used [MiB]`) and
values carry units and leading spaces (` 90 %`, ` 10549 MiB`). Only `timestamp` and `utilization.gpu` are
required; without `index`, GPUs are told apart by `pci.bus_id`/`uuid` (or their order within an instant);
every other known `--query-gpu` field lands on its `Sample` field, unknown columns are kept as text in
`Sample.extra`. Cells such as `[N/A]` or `[Not Supported]` become NotSupported, `[Unknown Error]` becomes
Failed — never a number.

What real recordings also hold, and how it is read: `#` comment lines above the header and the header
repeated by appended runs (skipped), nvidia-smi's own messages between rows (skipped), a half-written last
line (dropped), `name[unit]` headers without the space, old `[MB]` units (binary, like MiB), and two loggers'
rows of one GPU at one stamp (every row kept; see `iter_snapshot_groups`). A file with no header at all
(`--format=csv,noheader`) is refused with a message saying to keep the header. What is read is bounded:
the file and its unpacked text (MAX_RECORDING_BYTES), the rows (MAX_CSV_ROWS), the columns
(MAX_CSV_COLUMNS), a cell (MAX_FIELD_CHARS) and the GPU indices (MAX_GPU_INDEX).

Timestamps (`2026/08/01 03:59:40.361`, the machine's wall clock without a zone; also ISO 8601 as loggers
write it, with or without milliseconds, a zone suffix being ignored) are read *as if* UTC, so
`format_trace_time(sample.timestamp_s)` gives back the recorded clock text.

Pure: text in, samples out (`read_query_csv` is the one function that opens a file). What each header
column means is in `smi_csv_columns`; which rows are one poll, in `smi_csv_polls`. Standard library only.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuwise.errors import ReplayError
from gpuwise.gpu import _values as v
from gpuwise.gpu._values import format_trace_time, parse_trace_time
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, NotSupported, Sample
from gpuwise.gpu.smi_csv_columns import (
    FIELD_MAP,
    WANDB_REQUIRED,
    ColumnPlan,
    first_line,
    header_names,
    wandb_to_query_csv,
)

# Where the rows of one poll are grouped; imported from here by the idle room and the tests
from gpuwise.gpu.smi_csv_polls import busiest_per_gpu, iter_snapshot_groups, number_unindexed_gpus
from gpuwise.gpu.smi_errors import classify_error_text
from gpuwise.locale import N_, _
from gpuwise.locale import _ as _translate  # a text marked with N_() (the extractor refuses _(variable))

__all__ = [
    "FIELD_MAP",
    "busiest_per_gpu",
    "decode_text",
    "format_trace_time",
    "gunzip_if_gzipped",
    "has_timestamp_column",
    "headerless_error",
    "iter_snapshot_groups",
    "looks_like_headerless_csv",
    "looks_like_query_csv",
    "names_query_fields",
    "number_unindexed_gpus",
    "parse_query_csv",
    "parse_trace_time",
    "read_query_csv",
    "read_recording_bytes",
]

RECORD_HINT = N_(
    "record with nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv -l 1"
)


def looks_like_query_csv(text: str) -> bool:
    """Whether the first line (after blank and `#` comment lines) is a `--query-gpu` header naming
    `utilization.gpu` (or the header of a Weights & Biases GPU export, which is read by translation)."""
    names = header_names(text)
    return "utilization.gpu" in names or names >= WANDB_REQUIRED


def names_query_fields(text: str) -> bool:
    """Whether the first line is a `--query-gpu` header at all (two or more of its field names), with or
    without `utilization.gpu`: such a file gets the CSV parser's own message, not "not a recording"."""
    known = header_names(text) & (FIELD_MAP.keys() | {"timestamp", "index", "driver_version"})
    return len(known) >= 2


def has_timestamp_column(text: str) -> bool:
    """Whether the header names a timestamp (nvidia-smi's, or a W&B export's `timestamp_utc`)."""
    return bool(header_names(text) & {"timestamp", "timestamp_utc"})


def _throttle(plan: ColumnPlan, row: list[str]) -> Any:
    if plan.reason_cols:
        active: list[str] = []
        seen_value = False
        failure: Failed | None = None
        for i, reason in plan.reason_cols:
            got = v.to_bool(row[i])
            if got is True:
                active.append(reason)
                seen_value = True
            elif got is False:
                seen_value = True
            elif isinstance(got, Failed):
                failure = got
        if seen_value:
            return v.canonical_reasons(active)
        return failure or NOT_SUPPORTED
    if plan.mask_col is not None:
        mask = v.to_int(row[plan.mask_col])
        if isinstance(mask, NotSupported | Failed):
            return mask
        return v.throttle_ids_from_mask(mask)
    return NOT_SUPPORTED


# No nvidia-smi cell is longer than a few hundred characters; Python's csv module refuses a field over 128 KiB
# (its default field_size_limit), which an unbalanced quote produces by swallowing the rest of the file.
MAX_FIELD_CHARS = 128 * 1024
# Rows one replay reads: about 3 KB of memory each once parsed, so this keeps a replay well under 1 GiB.
# It holds 2 days of 1-s samples of 2 GPUs, or 8 GPUs sampled every 10 s for 5 days.
MAX_CSV_ROWS = 300_000
# GPU indices a recording may name (0 to this): a host has at most a few dozen GPUs.
MAX_GPU_INDEX = 255
# Columns of a header: nvidia-smi --help-query-gpu lists a few hundred fields, a W&B system-metrics export
# about 20 per GPU. A header far wider is not a recording, and every column costs work on every row.
MAX_CSV_COLUMNS = 2048


def _lines(text: str) -> Iterator[str]:
    """The lines of `text` one at a time (the csv reader asks for more inside a quoted field): no second
    copy of a large recording in memory, as io.StringIO or splitlines() would make."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start : end + 1]
        start = end + 1


def _rows(text: str, source: str) -> Iterator[list[str]]:
    """Non-blank CSV rows, `#` comment lines above the header skipped (a logging script's notes)."""
    reader = csv.reader(_lines(text), skipinitialspace=True)
    header_seen = False
    try:
        for row in reader:
            if not row or not any(cell.strip() for cell in row):
                continue
            if not header_seen and row[0].lstrip().startswith("#"):
                continue
            header_seen = True
            yield row
    except csv.Error as exc:  # a field over the limit, a NUL byte the reader rejects
        raise ReplayError(
            _("{source}, line {line}: {error}").format(source=source, line=reader.line_num, error=exc),
            why=_(
                "no nvidia-smi CSV cell is longer than a few hundred characters (the limit is {kib} KiB); "
                "an unbalanced quote makes one cell of the rest of the file"
            ).format(kib=MAX_FIELD_CHARS // 1024),
            fix=_("replay the file nvidia-smi wrote, unedited"),
        ) from exc


def _too_many_rows(source: str) -> ReplayError:
    return ReplayError(
        _("{source} holds more than {rows} rows").format(source=source, rows=f"{MAX_CSV_ROWS:,}"),
        why=_("a replay keeps every row in memory; this many would take gigabytes"),
        fix=_("replay a part of it, e.g. (head -1 FILE; tail -n {rows} FILE) > part.csv").format(
            rows=MAX_CSV_ROWS
        ),
    )


def parse_query_csv(
    text: str, *, source: str = "<text>", default_timestamp_s: float | None = None
) -> list[Sample]:
    """Samples of a `--query-gpu` CSV, sorted by (timestamp, index), every row kept (see below).

    Raises ReplayError when the text is not such a CSV: no header naming `utilization.gpu`, no `timestamp`
    column (unless `default_timestamp_s` is given, as for a one-off snapshot), no data rows, or a
    timestamp that is not nvidia-smi's `YYYY/MM/DD HH:MM:SS.mmm`.
    """
    text = text.lstrip("\ufeff")
    rows = _rows(text, source)
    header = next(rows, None)
    if header is None:
        raise ReplayError(
            _("{source} is empty").format(source=source),
            fix=_("record one with nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv"),
        )
    if len(header) > MAX_CSV_COLUMNS:
        raise ReplayError(
            _("{source} has {columns} columns in its first row").format(
                source=source, columns=f"{len(header):,}"
            ),
            why=_(
                "an nvidia-smi --query-gpu CSV or a W&B export has at most a few hundred "
                "(the limit is {limit})"
            ).format(limit=f"{MAX_CSV_COLUMNS:,}"),
            fix=_translate(RECORD_HINT),
        )
    if {cell.strip() for cell in header} >= WANDB_REQUIRED:
        translated = wandb_to_query_csv(_all_rows(header, rows, source))
        return parse_query_csv(translated, source=source, default_timestamp_s=default_timestamp_s)
    plan = ColumnPlan(header)
    _check_columns(plan, header, source, default_timestamp_s)
    parsed = _convert_rows(plan, header, rows, source, default_timestamp_s)
    if plan.index_col is None:
        parsed = number_unindexed_gpus(parsed)
    _check_gpu_indices(parsed, source)
    # Every row is kept, even one sharing its (timestamp, index) with another: two `nvidia-smi -l` loggers
    # writing one file give two readings of one GPU at one stamp, and they may disagree. Keeping only the
    # first once let the idle policy stop a machine whose other reading said 97-100 % busy. What to make of
    # such readings is the reader's choice (`iter_snapshot_groups` keeps them together; busy wins).
    parsed.sort(key=lambda s: (s.timestamp_s, s.index))  # stable: file order among equal stamps
    return parsed


def _all_rows(header: list[str], rows: Iterator[list[str]], source: str) -> list[list[str]]:
    """The header and every row after it, within MAX_CSV_ROWS (a W&B export is translated whole)."""
    out = [header]
    for row in rows:
        out.append(row)
        if len(out) > MAX_CSV_ROWS:
            raise _too_many_rows(source)
    return out


def _check_columns(
    plan: ColumnPlan, header: list[str], source: str, default_timestamp_s: float | None
) -> None:
    """ReplayError unless the header names utilization.gpu, and a timestamp (or one is given)."""
    if plan.util_col is None:
        raise _not_query_csv(source, header)
    if plan.timestamp_col is None and default_timestamp_s is None:
        raise ReplayError(
            _("{source} has no timestamp column").format(source=source),
            why=_(
                "A replayed time series needs nvidia-smi's timestamp field to know when each sample was read"
            ),
            fix=_translate(RECORD_HINT),
        )


def _convert_rows(
    plan: ColumnPlan,
    header: list[str],
    rows: Iterator[list[str]],
    source: str,
    default_timestamp_s: float | None,
) -> list[Sample]:
    """A Sample per data row after the header, in file order; rows that are no reading are skipped."""
    width = len(header)
    header_key = [c.strip() for c in header]
    parsed: list[Sample] = []
    lineno = 1
    following = next(rows, None)
    if following is None:
        raise ReplayError(
            _("{source} has a header but no data rows").format(source=source),
            fix=_(
                "record at least one sample (nvidia-smi --query-gpu=… --format=csv -l 1 runs until stopped)"
            ),
        )
    while following is not None:
        cells, following = following, next(rows, None)
        lineno += 1
        if lineno > MAX_CSV_ROWS:
            raise _too_many_rows(source)
        if [c.strip() for c in cells] == header_key:
            continue  # the header again: runs appended to one file (`>> trace.csv`) each print it
        # a row cut short (a recording killed mid-write): pad so the known cells still count
        row = cells + [""] * (width - len(cells)) if len(cells) < width else cells
        ts = _row_time(
            plan,
            row,
            cells,
            source=source,
            lineno=lineno,
            last=following is None,
            default_timestamp_s=default_timestamp_s,
        )
        if ts is None:
            continue
        index = 0
        if plan.index_col is not None:
            got = v.to_int(row[plan.index_col])
            index = got if isinstance(got, int) else 0
        parsed.append(_sample(plan, row, ts, index))
    return parsed


def _row_time(
    plan: ColumnPlan,
    row: list[str],
    cells: list[str],
    *,
    source: str,
    lineno: int,
    last: bool,
    default_timestamp_s: float | None,
) -> float | None:
    """When the row was read; None for a row that holds no reading; ReplayError for a stamp that is not
    nvidia-smi's."""
    if plan.timestamp_col is None:
        assert default_timestamp_s is not None
        return default_timestamp_s
    ts = parse_trace_time(row[plan.timestamp_col])
    if ts is not None:
        return ts
    if last and lineno > 2:
        return None  # the last line of a live recording may be half-written
    if classify_error_text(",".join(cells)) is not None:
        # `-l 1 > trace.csv 2>&1` interleaves nvidia-smi's own messages ("Unable to determine the device
        # handle for GPU…") with the rows; they are no readings, the rows around them still are
        return None
    cell = row[plan.timestamp_col].strip()
    raise ReplayError(
        _("{source}, row {row}: {cell} is not an nvidia-smi timestamp").format(
            source=source, row=lineno, cell=repr(cell[:80])
        ),
        why=_("expected YYYY/MM/DD HH:MM:SS.mmm as nvidia-smi --query-gpu=timestamp writes it"),
        fix=_("replay the file nvidia-smi wrote, unedited"),
    )


def _check_gpu_indices(parsed: list[Sample], source: str) -> None:
    """ReplayError when a GPU index is negative or over MAX_GPU_INDEX."""
    worst = max((sample.index for sample in parsed), default=0)
    if worst > MAX_GPU_INDEX or any(sample.index < 0 for sample in parsed):
        # every consumer keeps per-GPU state and checks each GPU at each instant: 20,000 distinct indices
        # made `idle replay` quadratic (minutes; hours at the row bound)
        shown = worst if worst > MAX_GPU_INDEX else min(sample.index for sample in parsed)
        raise ReplayError(
            _("{source} names GPU {gpu}").format(source=source, gpu=shown),
            why=_(
                "GPUs are numbered from 0 by nvidia-smi, and gpuwise reads at most {count} per machine "
                "(a host has a few dozen at most)"
            ).format(count=MAX_GPU_INDEX + 1),
            fix=_("replay the file nvidia-smi wrote, unedited"),
        )


def _sample(plan: ColumnPlan, row: list[str], ts: float, index: int) -> Sample:
    kwargs: dict[str, Any] = {}
    for i, field, conv, unit in plan.fields:
        value = conv(row[i], unit)
        if (
            field in kwargs
            and isinstance(value, NotSupported)
            and not isinstance(kwargs[field], NotSupported)
        ):
            continue  # a lower-priority column had the value; "[N/A]" in the preferred one does not erase it
        kwargs[field] = value
    if plan.reason_cols or plan.mask_col is not None:
        kwargs["throttle_reasons"] = _throttle(plan, row)
    extra = {name: row[i].strip() for i, name in plan.extra_cols}
    return Sample(timestamp_s=ts, index=index, extra=extra, **v.drop_impossible(kwargs))


def looks_like_headerless_csv(text: str) -> bool:
    """Whether the first non-blank line is a `--format=csv,noheader` data row: comma-separated cells, one of
    them an nvidia-smi timestamp or most of them numbers (with or without units)."""
    # the first 64 cells decide as well as all of them, and a line of 300,000 cells costs seconds
    cells = [c.strip() for c in first_line(text).split(",", 64)[:64]]
    if len(cells) < 2:
        return False
    if any(parse_trace_time(c) is not None for c in cells):
        return True
    numeric = sum(1 for c in cells if isinstance(v.number(c), tuple) or v.missing(c) is not None)
    return numeric * 2 > len(cells) and any(isinstance(v.number(c), tuple) for c in cells)


def headerless_error(source: str) -> ReplayError:
    return ReplayError(
        _("{source} looks like an nvidia-smi --query-gpu CSV without its header row").format(source=source),
        why=_("gpuwise reads the columns by the names in the header; --format=csv,noheader leaves them out"),
        fix=_(
            "record again without noheader: "
            "nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv -l 1 > trace.csv"
        ),
    )


def _not_query_csv(source: str, header: list[str]) -> ReplayError:
    if looks_like_headerless_csv(",".join(header)):
        return headerless_error(source)
    shown = ", ".join(c.strip() for c in header[:6])
    if names_query_fields(",".join(header)):
        return ReplayError(
            _("{source} is an nvidia-smi --query-gpu CSV without utilization.gpu (header: {header})").format(
                source=source, header=repr(shown[:120])
            ),
            why=_("gpuwise needs each GPU's utilization to monitor it or to judge idleness"),
            fix=_translate(RECORD_HINT),
        )
    return ReplayError(
        _("{source} is not an nvidia-smi --query-gpu CSV (first line: {line})").format(
            source=source, line=repr(shown[:120])
        ),
        why=_("The header must name utilization.gpu"),
        fix=_translate(RECORD_HINT),
    )


# A recording bigger than this, on disk or unpacked, is not one gpuwise reads (the largest real capture is
# ~160 KB; a day of 1-s CSV for 8 GPUs is ~30-60 MB, more rows than one replay holds anyway).
MAX_RECORDING_BYTES = 64 * 1024 * 1024


def _unreadable(path: Path, exc: OSError) -> ReplayError:
    return ReplayError(
        _("cannot read {path}").format(path=path),
        why=exc.strerror or str(exc),
        fix=_("check the path and its permissions"),
    )


def read_recording_bytes(path: Path | str) -> bytes:
    """The bytes of a recording file, refused up front unless it can be read whole and soon: a device
    (`/dev/zero`, or a link to it) or a socket is a ReplayError, a regular file over MAX_RECORDING_BYTES
    too. A pipe (`--replay <(nvidia-smi -q -x)`) is read up to the same bound; one nobody writes to reads
    as empty instead of blocking `open()` (O_NONBLOCK), so a stray FIFO cannot hang a command."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    try:
        mode = os.fstat(fd).st_mode  # of what was opened, not of a name that may change under us
    except OSError as exc:
        os.close(fd)
        raise _unreadable(path, exc) from exc
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise ReplayError(
            _("{path} is a folder").format(path=path), fix=_("give the recording file inside it")
        )
    with os.fdopen(fd, "rb", buffering=0) as fh:
        try:
            info = os.fstat(fd)
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                raise ReplayError(
                    _("{path} is not a regular file (a device or socket)").format(path=path),
                    why=_(
                        "a recording is a file that nvidia-smi output was saved to; a device may never end"
                    ),
                    fix=_("save the output to a file first, e.g. nvidia-smi -q -x > gpu.xml"),
                )
            if stat.S_ISREG(mode) and info.st_size > MAX_RECORDING_BYTES:
                raise _too_big(str(path), f"{info.st_size:,} bytes")
            if stat.S_ISFIFO(mode):
                os.set_blocking(fd, True)  # a writer is there (or was): wait for its data as usual
            chunks: list[bytes] = []
            size = 0
            while size <= MAX_RECORDING_BYTES:
                chunk = fh.read(min(1 << 20, MAX_RECORDING_BYTES + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            raise _unreadable(path, exc) from exc
    if size > MAX_RECORDING_BYTES:  # a file that grew, or a pipe
        raise _too_big(str(path), f"more than {MAX_RECORDING_BYTES // 2**20} MiB")
    return b"".join(chunks)


def _too_big(source: str, size: str) -> ReplayError:
    return ReplayError(
        _("{source} is too large to replay ({size}; the limit is {limit} MiB)").format(
            source=source, size=size, limit=MAX_RECORDING_BYTES // 2**20
        ),
        why=_("no single nvidia-smi output is that large, and a replay holds all of it in memory"),
        fix=_("replay a part of it, e.g. (head -1 FILE; tail -n {rows} FILE) > part.csv").format(rows=300000),
    )


def gunzip_if_gzipped(data: bytes, source: str) -> bytes:
    """`data` unpacked when it is gzip (logs are often rotated and compressed), else as it is. Unpacking
    is bounded, so a small file cannot expand into gigabytes; a damaged one is a ReplayError."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_RECORDING_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ReplayError(
            f"{source} is a damaged gzip file", why=str(exc), fix="copy the recording again"
        ) from exc
    if len(out) > MAX_RECORDING_BYTES:
        raise _too_big(source, f"it unpacks to more than {MAX_RECORDING_BYTES // 2**20} MiB")
    return out


def decode_text(data: bytes) -> str:
    """Bytes of a recording -> text: UTF-8 (with or without BOM) or UTF-16 (a Windows PowerShell redirect);
    CRLF line ends become LF."""
    # errors="replace": a recording cut at an odd byte (a copy interrupted mid-write) still reads
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    elif len(data) >= 4 and data[1:2] == b"\x00" and data[3:4] == b"\x00" and data[0:1] != b"\x00":
        text = data.decode("utf-16-le", errors="replace")
    else:
        text = data.decode("utf-8-sig", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")


def read_query_csv(path: Path | str, *, default_timestamp_s: float | None = None) -> list[Sample]:
    """`parse_query_csv` of a file (UTF-8 with or without BOM, UTF-16, CRLF). ReplayError if unreadable."""
    path = Path(path)
    data = gunzip_if_gzipped(read_recording_bytes(path), str(path))
    return parse_query_csv(decode_text(data), source=str(path), default_timestamp_s=default_timestamp_s)
