"""`gpuwise catalog offers` reads at a glance in an 80-column terminal and uses the room of a wider one:
at most two lines per offer at 80 columns, one at 160, instance ids never split, price dates in the compact
form `gpuwise plan` uses (? undated, ! over the stale limit) with one legend under the table. The bundled
catalog is drawn into a console of fixed width (our own `console`, swapped for the test)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import date

import pytest
from rich.console import Console

from gpuwise.catalog.models import Offer
from gpuwise.cli import output
from gpuwise.cli.catalog_table import column_widths, date_flag, offer_cells, offers_table
from gpuwise.cli.main import main

H100 = ["--gpu", "H100", "--limit", "0"]


def _draw(monkeypatch: pytest.MonkeyPatch, width: int, *argv: str) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    monkeypatch.setattr(output, "console", console, raising=False)
    assert main(["catalog", "offers", *argv]) == 0
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue().splitlines()


def _body(lines: list[str]) -> list[str]:
    """The table's rows: after the heading rule, up to the notes under the table."""
    start = next(i for i, line in enumerate(lines) if line.startswith("─")) + 1
    notes = ("…", "*", "⚠", "`--json`", "Not included", "Spot prices", "On-demand prices", "Offers priced")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(notes))
    return lines[start:end]


def _ids(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["catalog", "offers", *argv, "--json"]) == 0
    return [o["instance_type"] for o in json.loads(capsys.readouterr().out)["offers"]]


@pytest.mark.parametrize(
    ("width", "most", "limit"),
    [(80, 2, "30"), (80, 2, "0"), (100, 2, "0"), (160, 1, "0")],
)
def test_every_offer_fits_its_lines_and_no_id_is_split(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], width: int, most: int, limit: str
) -> None:
    argv = ["--gpu", "H100", "--limit", limit]
    ids = _ids(capsys, *argv)
    lines = _draw(monkeypatch, width, *argv)
    body = _body(lines)
    # an id too wide for its column (at 80 columns, the longest of all 355: 40 characters) takes a line of
    # its own above its offer's figures; the cheapest 30 the table shows by default need none
    lifted = _lifted(body, set(ids))
    assert lifted == 0 or (width == 80 and limit == "0")
    assert len(body) <= most * len(ids) + lifted
    assert all(len(line) <= width for line in lines)
    words = {word for line in body for word in line.split()}
    assert set(ids) <= words  # each id whole on one line, ready to copy


def test_wide_terminals_show_each_field_in_its_own_column(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _draw(monkeypatch, 160, "--gpu", "H100", "--provider", "lambda", "--limit", "3")
    heading = lines[lines.index(next(line for line in lines if line.startswith("─"))) - 1]
    assert heading.split() == ["provider", "instance", "vCPU/GiB", "region", "GPUs", "price/h", "spot/h",
                               "price", "date"]  # fmt: skip
    row = _body(lines)[0].split()
    assert row[0] == "lambda" and row[2] == "26/225" and row[-1].endswith("?!")


def test_the_undated_price_reads_as_a_flagged_date_with_its_legend(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _draw(monkeypatch, 80, "--gpu", "H100", "--provider", "lambda", "--limit", "2")
    assert all("date unknown\n" not in line and "(collected" not in line for line in _body(lines))
    assert any(line.rstrip().endswith("?!") for line in _body(lines))
    legend = " ".join(lines[lines.index(next(line for line in lines if line.startswith("⚠"))) :])
    assert "ending in ?" in legend and "over 90 days old" in legend


def _offer(instance: str, region: str, *, exact: bool = True, day: date = date(2026, 11, 1)) -> Offer:
    return Offer(
        provider="aws", instance_type=instance, region=region, zone=None, gpu="H100", gpus=8,
        gpu_memory_gib=80, vcpus=192, memory_gib=2048, price_usd_per_hour=98.32, spot_price_usd_per_hour=None,
        currency="USD", price_as_of=day, price_date_exact=exact, source="test",
    )  # fmt: skip


def test_date_flags_match_the_plan_table() -> None:
    today = date(2026, 12, 2)
    assert date_flag(_offer("p5", "x"), today) == ""
    assert date_flag(_offer("p5", "x", day=date(2026, 8, 1)), today) == "!"  # 123 days
    assert date_flag(_offer("p5", "x", exact=False), today) == "?"
    assert date_flag(_offer("p5", "x", exact=False, day=date(2026, 1, 1)), today) == "?!"


def test_an_id_wider_than_its_column_sits_whole_above_its_figures_and_long_regions_are_cut() -> None:
    money = {"price": "$98.32", "spot": "—"}
    today = date(2026, 12, 2)
    # 39 characters fill the instance column's room at 80 columns; 60 do not fit it, 90 not even a line
    ids = ("p5.48xlarge", "z" * 39, "x" * 60, "y" * 90)
    rows = [offer_cells(_offer(i, "northamerica-northeast2"), today, money) for i in ids]
    layout, widths = column_widths(rows, 80)
    assert sum(widths) + 2 * (len(widths) - 1) <= 80
    assert widths[layout.index(("instance",))] == 39
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(offers_table(rows, 80, "t"))
    file = console.file
    assert isinstance(file, io.StringIO)
    lines = file.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    words = file.getvalue().split()
    assert {"p5.48xlarge", "z" * 39, "x" * 60} <= set(words)
    above = next(i for i, line in enumerate(lines) if "x" * 60 in line)
    assert lines[above].split() == ["x" * 60]  # alone on its line, then its offer's figures
    assert lines[above + 1].split()[:2] == ["aws", "8×"]
    heading = next(line for line in lines if "instance" in line)
    assert lines[above].index("x") == heading.index("instance")  # in the instance column
    assert "y" * 80 in words  # only an id wider than the terminal folds
    assert "northamerica-northeast2" not in words and "northam…" in words


def test_chinese_rows_fit_80_columns_too() -> None:
    env = {**os.environ, "COLUMNS": "80", "LANGUAGE": "", "LC_ALL": "", "LANG": "C.UTF-8"}
    argv = ["--lang", "zh", "catalog", "offers", "--gpu", "H100", "--limit", "30"]
    out = subprocess.run(
        [sys.executable, "-m", "gpuwise", *argv], capture_output=True, text=True, check=False, env=env
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "价格日期" in out.stdout
    body = _body(lines)
    assert len(body) <= 2 * 30


def test_the_gpu_spec_table_fits_80_columns_with_every_source_number_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    console = Console(file=io.StringIO(), width=80, color_system=None, legacy_windows=False)
    monkeypatch.setattr(output, "console", console, raising=False)
    assert main(["catalog", "gpus"]) == 0
    file = console.file
    assert isinstance(file, io.StringIO)
    lines = file.getvalue().splitlines()
    rows = lines[2 : lines.index(next(line for line in lines if "n/p = not published" in line))]
    assert rows and all("…" not in line and len(line) <= 80 for line in rows)
    assert "NVLink" in lines[1] and "FP16" in lines[1]
    assert any(line.rstrip().endswith("[10]") for line in rows)  # cut to "[1…" before


def test_a_gpu_only_price_is_starred_and_explained_under_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _draw(monkeypatch, 120, "--gpu", "H100", "--provider", "gcp", "--limit", "4")
    body = _body(lines)
    starred = [line for line in body if "*" in line]
    assert starred and len(starred) < len(body)  # the bundled gcp H100 rows mix both kinds
    cents = {re.search(r"\$\d+\.\d\d", line).end() for line in body}  # type: ignore[union-attr]
    assert len(cents) == 1  # starred and plain prices line up
    assert any(line.startswith("* GPU-only") for line in lines)


def _lifted(lines: list[str], ids: set[str]) -> int:
    """Lines that hold an id and nothing else (an id too wide for its column, on its own line)."""
    return sum(1 for line in lines if len(line.split()) == 1 and line.split()[0] in ids)


def test_the_whole_catalog_at_80_columns_splits_no_id(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # every offer of every provider, with the longest ids (45 characters: vast's and primeintellect's)
    ids = _ids(capsys, "--limit", "0")
    assert max(len(i) for i in ids) > 40
    lines = _draw(monkeypatch, 80, "--limit", "0")
    body = _body(lines)
    assert all(len(line) <= 80 for line in lines)
    words = {word for line in body for word in line.split()}
    assert set(ids) <= words  # every id whole on one line, ready to copy
    lifted = _lifted(body, set(ids))
    assert 0 < lifted < len(ids) // 4  # only the ids too wide for the column sit above their figures
    assert len(body) <= 2 * len(ids) + lifted


def test_too_narrow_for_an_instance_column_every_id_has_its_own_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _ids(capsys, "--gpu", "H100", "--limit", "0")
    body = _body(_draw(monkeypatch, 50, "--gpu", "H100", "--limit", "0"))
    assert all(len(line) <= 50 for line in body)
    assert set(ids) <= {word for line in body for word in line.split()}  # folded in two ("1V100.6/V") before
    assert _lifted(body, set(ids)) == len(ids)
    assert not any("…" in line.split()[-1] for line in body if "$" in line)  # price dates whole, not cut


def test_spot_prices_are_shown_with_their_own_date(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # AWS's spot prices come from a file of 2025-11-30, its on-demand ones from 2026-01-21; --spot ranks by
    # the spot price, yet the table dated every row with the on-demand date
    argv = ("--gpu", "H100:8", "--provider", "aws", "--limit", "3")
    spot = _draw(monkeypatch, 120, *argv, "--spot")
    assert all(line.rstrip().endswith("2025-11-30!") for line in _body(spot))
    assert any(line.startswith("On-demand prices of aws (2026-01-21) are of another date") for line in spot)
    plain = _draw(monkeypatch, 120, *argv)
    assert all(line.rstrip().endswith("2026-01-21!") for line in _body(plain))
    assert any(line.startswith("Spot prices of aws (2025-11-30) are of another date") for line in plain)
    lines = _draw(monkeypatch, 120, "--gpu", "H100", "--provider", "lambda", "--limit", "3")
    assert not any("of another date" in line for line in lines)  # one date for all its prices
