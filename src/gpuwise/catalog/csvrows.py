"""Reading and validating catalog CSVs in the SkyPilot schema (``vms.csv``), with file:line errors.

Columns are read by name (their order differs between clouds). A row with more fields than the header
has its extra fields joined into the last column when that column is free text (Azure's unquoted
``Generation`` value ``V1,V2``); anywhere else it is an error. Data-quality problems (a zero price, a spot
price above on-demand) are not errors here: the offer normaliser drops and counts them.

Pure: takes text, returns rows and problems. Must not import the CLI or anything outside the standard
library, gpuwise.errors, gpuwise.locale and gpuwise.catalog.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from gpuwise.errors import UsageError
from gpuwise.locale import _

REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price")
NUMERIC_COLUMNS = ("AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice")
# Free-text columns that may absorb unquoted commas when they come last in the header.
_TEXT_TAIL_COLUMNS = ("Generation", "GpuInfo", "Region", "AvailabilityZone", "Arch")
# A file with more rows is refused rather than read on: bounded memory and time for any input.
MAX_ROWS = 1_000_000


@dataclass(frozen=True)
class RowProblem:
    """One bad row: where it is and what is wrong with it."""

    file: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.problem}"


@dataclass(frozen=True)
class CsvRow:
    line: int
    fields: dict[str, str]


def parse_number(text: str) -> float | None:
    """'' -> None; '1.5' -> 1.5. Raises ValueError for text that is not a finite number."""
    text = text.strip()
    if not text:
        return None
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def read_vms_csv(
    text: str, filename: str, *, strict: bool, max_rows: int = MAX_ROWS
) -> tuple[list[CsvRow], list[RowProblem]]:
    """Rows of a SkyPilot-schema CSV and the problems found.

    With ``strict`` every row is validated (numbers parse, accelerator rows have a positive count); without,
    only the shape is checked and the normaliser skips rows whose numbers do not parse. Fields over the
    csv module's limit (128 KiB) and files over ``max_rows`` rows are problems, never read on.
    """
    problems: list[RowProblem] = []
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return [], [RowProblem(filename, 1, _("the file is empty (expected a header line)"))]
    except csv.Error as exc:
        return [], [RowProblem(filename, 1, _("not CSV: {error}").format(error=exc))]
    header = [h.strip() for h in header]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        return [], [
            RowProblem(
                filename,
                1,
                _(
                    "header lacks column(s) {columns} (expected the SkyPilot vms.csv schema: "
                    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,…)"
                ).format(columns=", ".join(missing)),
            )
        ]
    width = len(header)
    tail_is_text = header[-1] in _TEXT_TAIL_COLUMNS
    rows: list[CsvRow] = []
    line = 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(RowProblem(filename, reader.line_num, _("not CSV: {error}").format(error=exc)))
            break
        line = reader.line_num
        if not values or (len(values) == 1 and not values[0].strip()):
            continue
        if len(rows) + len(problems) >= max_rows:
            problems.append(
                RowProblem(
                    filename, line, _("more than {n} rows; the rest is not read").format(n=f"{max_rows:,}")
                )
            )
            break
        if len(values) > width:
            if not tail_is_text:
                problems.append(RowProblem(filename, line, _fields_problem(len(values), width)))
                continue
            values = [*values[: width - 1], ",".join(values[width - 1 :])]
        elif len(values) < width:
            problems.append(RowProblem(filename, line, _fields_problem(len(values), width)))
            continue
        fields = dict(zip(header, values, strict=True))
        if strict:
            problem = validate_fields(fields)
            if problem:
                problems.append(RowProblem(filename, line, problem))
                continue
        rows.append(CsvRow(line, fields))
    return rows, problems


def _fields_problem(n: int, width: int) -> str:
    return _("{n} fields but the header has {width} columns").format(n=n, width=width)


def validate_fields(fields: dict[str, str]) -> str | None:
    """What is wrong with one row's values, or None."""
    for column in NUMERIC_COLUMNS:
        raw = fields.get(column)
        if raw is None:
            continue
        try:
            value = parse_number(raw)
        except ValueError:
            return _("{column} {value} is not a number").format(column=column, value=repr(raw.strip()))
        if value is not None and value < 0:
            return _("{column} {value} is negative").format(column=column, value=repr(raw.strip()))
    problem = _validate_currency_and_date(fields)
    if problem:
        return problem
    if fields.get("AcceleratorName", "").strip():
        count = parse_number(fields.get("AcceleratorCount", ""))
        if count is None or count <= 0:
            return _("AcceleratorName {name} needs a positive AcceleratorCount, got {count}").format(
                name=repr(fields["AcceleratorName"].strip()),
                count=repr(fields.get("AcceleratorCount", "").strip()),
            )
    return None


def _validate_currency_and_date(fields: dict[str, str]) -> str | None:
    """The optional columns `gpuwise catalog fetch` writes: ``Currency`` (an ISO 4217 code such as CNY;
    empty means USD) and ``PriceDate`` (YYYY-MM-DD, the day the prices were fetched)."""
    currency = fields.get("Currency", "").strip()
    if currency and not (len(currency) == 3 and currency.isascii() and currency.isalpha()):
        return _("Currency {code} is not a three-letter currency code (such as USD or CNY)").format(
            code=repr(currency)
        )
    price_date = fields.get("PriceDate", "").strip()
    if price_date:
        try:
            date.fromisoformat(price_date)
        except ValueError:
            return _("PriceDate {value} is not a date (YYYY-MM-DD)").format(value=repr(price_date))
    return None


def price_date_column(text: str) -> date | None:
    """The oldest ``PriceDate`` in a catalog file (the least fresh price rules), or None when the file has
    no such column or no value in it. Rows whose value is not a date are left to the row validation."""
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.DictReader(io.StringIO(text, newline=""))
    found: date | None = None
    try:  # a header the csv module refuses (a field over its size limit) is the row validation's to report
        if reader.fieldnames is None or "PriceDate" not in [h.strip() for h in reader.fieldnames]:
            return None
        for row in reader:
            raw = next((v for k, v in row.items() if k is not None and k.strip() == "PriceDate"), None)
            try:
                value = date.fromisoformat(str(raw).strip()) if raw and str(raw).strip() else None
            except ValueError:
                continue
            if value is not None and (found is None or value < found):
                found = value
    except csv.Error:
        return None
    return found


def not_utf8(file: Path, exc: UnicodeDecodeError) -> UsageError:
    """The error for a catalog file that is not UTF-8: Excel's plain "CSV" on a Chinese Windows is GBK."""
    return UsageError(
        _("{file} is not UTF-8 text (byte {at} cannot be read)").format(file=file, at=exc.start),
        why=_("catalog files are CSV in UTF-8; a spreadsheet saved as plain CSV may be in GBK or ANSI"),
        fix=_('save it as "CSV UTF-8", or convert it: iconv -f GBK -t UTF-8 {file} > {stem}-utf8.csv').format(
            file=file, stem=file.with_suffix("")
        ),
    )
