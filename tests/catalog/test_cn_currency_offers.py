"""`catalog offers --currency`: yuan and dollar offers in one currency, ranked together, the rate printed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpuwise.cli.main import main


def _offers(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["catalog", "offers", "--gpu", "A100:8", *args, "--json", "--limit", "0"]) == 0
    return json.loads(capsys.readouterr().out)


def test_without_currency_yuan_offers_stay_last_and_unconverted(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _offers(capsys)
    assert "money" not in doc
    currencies = [o["currency"] for o in doc["offers"]]
    assert "CNY" in currencies and currencies.index("CNY") > currencies.index("USD")
    assert currencies[-1] == "CNY"
    assert all("in_currency" not in o for o in doc["offers"])


def test_in_yuan_every_offer_is_converted_and_ranked_together(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _offers(capsys, "--currency", "CNY")
    assert doc["money"]["currency"] == "CNY" and doc["money"]["rate"]["per_usd"] == pytest.approx(7.2734)
    prices = [o["in_currency"]["price_per_hour"] for o in doc["offers"] if o["in_currency"]["price_per_hour"]]
    assert prices == sorted(prices)  # one ranking across currencies
    for o in doc["offers"]:
        own = o["price_usd_per_hour"]
        if own is None:
            continue
        expected = own if o["currency"] == "CNY" else own * 7.2734  # a yuan price stays itself
        assert o["in_currency"]["price_per_hour"] == pytest.approx(expected)
    first_cny = next(i for i, o in enumerate(doc["offers"]) if o["currency"] == "CNY")
    assert first_cny < len(doc["offers"]) - 1  # no longer pushed to the end


def test_a_given_rate_converts_yuan_offers_into_dollars(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _offers(capsys, "--currency", "USD", "--exchange-rate", "CNY=0.125", "--region", "cn-*")
    assert doc["money"]["rate"] is None
    assert doc["money"]["other_rates"]["CNY"]["given"] is True
    (o, *_) = doc["offers"]
    assert o["currency"] == "CNY"
    assert o["in_currency"]["price_per_hour"] == pytest.approx(o["price_usd_per_hour"] * 0.125)


def test_the_table_prints_the_rate_its_date_and_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "offers", "--gpu", "A100:8", "--currency", "CNY", "--region", "cn-*"]) == 0
    out = capsys.readouterr().out
    assert "1 USD = 7.2734 CNY" in out and "2025-02-28" in out and "FRED EXCHUS" in out
    assert "¥" in out and " CNY\n" not in out


def test_an_unknown_currency_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "offers", "--currency", "JPY"]) == 2
    assert "To fix" in capsys.readouterr().err
