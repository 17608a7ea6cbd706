"""The last English in Chinese plan output (issue 20): dates in the locale's form, the reasons a provider's
rates are unknown, and the unknown-provider error's kind; English keeps its ISO dates and words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date

import pytest

from gpuwise.cli.main import main
from gpuwise.locale import use_language
from gpuwise.plan.currency import FxRate
from gpuwise.plan.rates import rates_for, unknown_text

LORA = "examples/llama3-8b-lora.toml"


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    yield
    use_language("en")


def test_the_exchange_rate_date_in_each_language() -> None:
    rate = FxRate("CNY", 7.2734, date(2025, 2, 28), "Federal Reserve G.5/H.10")
    assert rate.text() == "1 USD = 7.2734 CNY (Federal Reserve G.5/H.10, 2025-02-28)"
    use_language("zh")
    assert rate.text() == "1 USD = 7.2734 CNY（Federal Reserve G.5/H.10，2025年2月28日）"


def test_why_rates_are_unknown_in_chinese() -> None:
    english = unknown_text(rates_for("hyperbolic"))
    assert english is not None and "marketplace where each supplier sets its own price" in english
    use_language("zh")
    chinese = unknown_text(rates_for("hyperbolic"))
    assert chinese is not None and "由各供应商自定价格的市场" in chinese
    assert "docs.hyperbolic.xyz/docs/gpu-marketplace-pricing" in chinese  # the cited page stays as it is


def test_the_price_dates_footer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LORA, "--top", "1"]) == 0
    english = capsys.readouterr().out
    assert re.search(r"Prices as of: aws \d{4}-\d\d-\d\d", english)
    assert main(["--lang", "zh", "plan", LORA, "--top", "1"]) == 0
    chinese = capsys.readouterr().out
    assert re.search(r"价格日期：aws \d{4}年\d{1,2}月\d{1,2}日", chinese)


def test_an_unknown_provider_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "zh", "plan", LORA, "--provider", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "未知的云厂商 'nosuch'" in err and "Unknown provider" not in err
