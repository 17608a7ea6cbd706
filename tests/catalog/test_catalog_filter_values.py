"""Unknown filter values are bad input with close matches (exit 2), not filters that silently match
nothing: --provider and --region of `catalog offers`, and a currency in `plan --exchange-rate` or a
provider in `plan --spot-interruptions-per-hour`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.catalog.offers import load_catalog
from gpuwise.catalog.validate import check_currencies, check_providers, check_region
from gpuwise.cli.main import main
from gpuwise.errors import NotFoundError

WORKLOAD = Path(__file__).resolve().parents[1] / "fixtures" / "plan" / "llama3-8b-lora.toml"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--provider", "nosuch"], "Unknown provider 'nosuch'"),
        (["--region", "us-eats-1"], "Unknown region 'us-eats-1'. Did you mean 'us-east-1'"),
    ],
)
def test_catalog_offers_unknown_filter_is_exit_2(
    args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["catalog", "offers", *args]) == 2
    err = capsys.readouterr().err
    assert expected in err and "To fix:" in err


def test_known_region_without_matching_offers_is_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["catalog", "offers", "--region", "US-EAST-1", "--gpu", "H100:8", "--provider", "lambda"]) == 0
    )
    assert main(["catalog", "offers", "--region", "europe-*", "--limit", "1"]) == 0
    assert main(["catalog", "offers", "--region", "mars-*"]) == 0  # a pattern may match nothing


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--exchange-rate", "CYN=0.14"], "Unknown currency 'CYN'. Did you mean 'CNY'?"),
        (["--exchange-rate", "XYZ=2"], "Unknown currency 'XYZ'"),
        (["--spot-interruptions-per-hour", "lamda=0.1"], "Unknown provider 'lamda'. Did you mean 'lambda'?"),
    ],
)
def test_plan_unknown_currency_or_provider_is_exit_2(
    args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", str(WORKLOAD), *args, "--json"]) == 2
    captured = capsys.readouterr()
    assert expected in captured.err and "To fix:" in captured.err
    assert captured.out == ""  # refused before any plan is printed


def test_helpers_accept_what_the_catalog_has() -> None:
    catalog = load_catalog(Path("/nonexistent-user-catalog"))
    check_providers(catalog, ["AWS", "lambda"])
    check_currencies(catalog, ["cny", "USD"])
    check_region(catalog, None)
    check_region(catalog, "us-east-1")
    check_region(catalog, "us-*")
    with pytest.raises(NotFoundError) as info:
        check_region(catalog, "europe-wset4")
    assert "europe-west4" in info.value.matches
