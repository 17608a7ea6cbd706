"""`--exchange-rate` mistakes a newcomer makes, refused before they show a wrong price: the rate written
the other way round (CNY=7.2 for 1 USD = 7.2 CNY showed every yuan price 52 times too low), a rate for
USD itself, and a rate given without --currency (read and never used)."""

from __future__ import annotations

import pytest

from gpuwise.cli.main import main

OFFERS = ["catalog", "offers", "--gpu", "H100", "--limit", "1"]


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main([*OFFERS, *argv]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    return " ".join(out.err.split())


def test_an_inverted_rate_is_refused_with_the_rate_it_meant(capsys: pytest.CaptureFixture[str]) -> None:
    said = _refused(capsys, "--currency", "CNY", "--exchange-rate", "CNY=7.2")
    assert "CNY=7.2 says 1 CNY = 7.2 USD" in said
    assert "write --exchange-rate CNY=0.1389" in said


def test_a_rate_far_from_the_bundled_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    said = _refused(capsys, "--currency", "CNY", "--exchange-rate", "CNY=1.4")
    assert "far from the bundled rate" in said and "check the figure" in said


def test_a_rate_for_usd_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "every rate is already in US dollars" in _refused(
        capsys, "--currency", "CNY", "--exchange-rate", "USD=7.2"
    )


def test_a_rate_without_currency_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--exchange-rate is used only with --currency" in _refused(capsys, "--exchange-rate", "CNY=0.14")


def test_a_plausible_rate_is_used(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*OFFERS, "--currency", "CNY", "--exchange-rate", "CNY=0.14"]) == 0
    assert "1 USD = 7.14286 CNY (given with --exchange-rate)" in capsys.readouterr().out
