"""The two columns `catalog fetch` adds to the import schema, as `catalog import` reads them from any CSV:
``Currency`` (kept on the offers, never converted) and ``PriceDate`` (the prices' own date, marked exact)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gpuwise.catalog.csvrows import price_date_column
from gpuwise.catalog.offers import load_catalog
from gpuwise.catalog.store import CatalogFileError, install_user_catalog, read_import_files
from gpuwise.errors import UsageError

HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
    + "Currency,PriceDate\n"
)
TODAY = date(2026, 12, 2)


def _install(tmp_path: Path, rows: str) -> Path:
    src = tmp_path / "aliyun.csv"
    src.write_text(HEADER + rows, encoding="utf-8")
    target = tmp_path / "catalog"
    install_user_catalog(target, read_import_files([("aliyun", src)], today=TODAY), today=TODAY)
    return target


def test_currency_and_price_date_reach_the_offers(tmp_path: Path) -> None:
    target = _install(tmp_path, "ecs.gn7i-c8g1.2xlarge,A10,1,8,30,12,2.9,cn-hangzhou,CNY,2026-11-28\n")
    [offer] = [o for o in load_catalog(target).offers if o.provider == "aliyun"]
    assert (offer.currency, offer.price_as_of, offer.price_date_exact) == ("CNY", date(2026, 11, 28), True)
    assert "prices fetched 2026-11-28" in offer.source


def test_without_the_columns_nothing_changes(tmp_path: Path) -> None:
    src = tmp_path / "lambda.csv"
    src.write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\ngpu_1x_a10,A10,1,0.75,us-east-1\n"
    )
    target = tmp_path / "catalog"
    install_user_catalog(target, read_import_files([("lambda", src)], today=TODAY), today=TODAY)
    [offer] = [o for o in load_catalog(target).offers if o.provider == "lambda"]
    assert (offer.currency, offer.price_as_of, offer.price_date_exact) == ("USD", TODAY, False)


def test_the_oldest_price_date_rules() -> None:
    text = HEADER + "a,A10,1,8,30,1,,r,CNY,2026-11-30\nb,A10,1,8,30,1,,r,CNY,2026-11-20\n"
    assert price_date_column(text) == date(2026, 11, 20)
    assert price_date_column("InstanceType,Price\nx,1\n") is None


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (
            "x,A10,1,8,30,12,,cn-hangzhou,yuan,2026-11-28\n",
            "Currency 'yuan' is not a three-letter currency code",
        ),
        ("x,A10,1,8,30,12,,cn-hangzhou,CNY,28/11/2026\n", "PriceDate '28/11/2026' is not a date"),
    ],
)
def test_a_bad_currency_or_date_is_a_row_problem_and_nothing_changes(
    tmp_path: Path, row: str, problem: str
) -> None:
    with pytest.raises(CatalogFileError, match=problem):
        _install(tmp_path, row)
    assert not (tmp_path / "catalog").exists()


def test_a_price_date_after_today_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="PriceDate 2026-12-05 is after today"):
        _install(tmp_path, "x,A10,1,8,30,12,,cn-hangzhou,CNY,2026-12-05\n")


def test_a_header_the_csv_module_refuses_is_left_to_the_file_check(tmp_path: Path) -> None:
    """Found by `make fuzz FORMAT=catalog`: a header field over the csv module's 128 KiB limit raised
    csv.Error out of the PriceDate look-up (a traceback) before the file's own check could report it."""
    huge = "InstanceType,Price" + "x" * 140_000 + "\n" + "a,1\n"
    assert price_date_column(huge) is None
    src = tmp_path / "lambda.csv"
    src.write_text(huge, encoding="utf-8")
    inputs = read_import_files([("lambda", src)], today=TODAY)  # raised csv.Error here before the fix
    with pytest.raises(CatalogFileError, match="field larger than field limit"):
        install_user_catalog(tmp_path / "catalog", inputs, today=TODAY)
    assert not (tmp_path / "catalog").exists()
