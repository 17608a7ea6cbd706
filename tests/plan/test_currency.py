"""Money in a chosen currency: a bundled dated rate, --exchange-rate overrides, nothing silently converted."""

from __future__ import annotations

import math
from datetime import date

import plan_fakes
import pytest
from plan_fakes import TODAY, FakeEstimator, offer

from gpuwise.errors import UsageError
from gpuwise.plan.currency import (
    BUNDLED,
    FxRate,
    Money,
    annotate_plan_json,
    bundled_for_ranking,
    check_currency,
    current,
    display,
    money,
    ranking_lines,
    showing,
)
from gpuwise.plan.models import Constraints, DataNeeds, Settings
from gpuwise.plan.planner import plan
from gpuwise.plan.startup import StartupRates
from gpuwise.units import format_usd

NO_STARTUP = StartupRates("*", 0.0, 0.0, math.inf, math.inf, 0.0, "test: no start-up")
SEVEN = FxRate("CNY", 7.0, date(2026, 1, 1), "test table")


@pytest.mark.parametrize("usd", [None, 0.0, 0.00012, 0.5, 12.345, 4321.0, float("nan")])
def test_usd_is_shown_exactly_as_before(usd: float | None) -> None:
    assert Money().format(usd) == format_usd(usd)
    assert money(usd) == format_usd(usd)  # outside `showing`: USD


def test_yuan_amounts_are_converted_at_the_stated_rate() -> None:
    cny = Money("CNY", SEVEN)
    assert cny.format(10.0) == "¥70.00"
    assert cny.format(200.0) == "¥1,400"
    assert cny.format(None) == "?"
    line = cny.rate_line(date(2026, 1, 31))
    assert "1 USD = 7 CNY" in line and "test table" in line and "2026-01-01" in line and "30 days old" in line


def test_showing_switches_the_shared_formatter_and_restores_it() -> None:
    cny = Money("CNY", SEVEN)
    with showing(cny):
        assert current() is cny
        assert money(1.0) == "¥7.00"
    assert money(1.0) == "$1.00"


def test_the_bundled_yuan_rate_is_dated_and_cited() -> None:
    rate = BUNDLED["CNY"]
    assert rate.per_usd == pytest.approx(7.2734)  # FRED EXCHUS, February 2025 average
    assert rate.as_of == date(2025, 2, 28)
    assert "Federal Reserve" in rate.source and "EXCHUS" in rate.source
    assert not rate.given


def test_a_given_rate_replaces_the_bundled_one_and_says_so() -> None:
    shown = display("CNY", {"CNY": 0.125})
    assert shown.rate is not None and shown.rate.given
    assert shown.rate.per_usd == pytest.approx(8.0)
    assert "given with --exchange-rate" in shown.rate_line(TODAY)
    assert bundled_for_ranking({"CNY": 0.125}, TODAY) == {}
    assert display("USD", {}).rate is None


def test_an_unknown_currency_is_refused() -> None:
    assert check_currency(" cny ") == "CNY"
    with pytest.raises(UsageError, match="--currency 'EUR'"):
        check_currency("EUR")


def test_the_json_carries_the_currency_and_the_rate_used() -> None:
    doc = {
        "options": [
            {"price_usd_per_hour": 2.0, "cost_usd": 10.0, "cost_usd_low": None, "cost_usd_high": 12.0}
        ]
    }
    annotate_plan_json(doc, Money("CNY", SEVEN), {})
    assert doc["money"]["currency"] == "CNY"
    assert doc["money"]["rate"]["per_usd"] == 7.0
    assert doc["money"]["rate"]["as_of"] == "2026-01-01"
    assert doc["options"][0]["cost_usd"] == 10.0  # the USD fields keep their meaning
    assert doc["options"][0]["in_currency"] == {
        "currency": "CNY",
        "price_per_hour": 14.0,
        "cost": 70.0,
        "cost_low": None,
        "cost_high": 84.0,
    }
    usd_doc: dict[str, object] = {"options": [{"cost_usd": 1.0}]}
    annotate_plan_json(usd_doc, Money(), bundled_for_ranking({}, TODAY))
    assert usd_doc["money"]["rate"] is None  # type: ignore[index]
    assert "CNY" in usd_doc["money"]["ranking_rates"]  # type: ignore[index]


def test_ranking_lines_name_the_bundled_rate_when_shown_in_dollars() -> None:
    bundled = bundled_for_ranking({}, TODAY)
    (line,) = ranking_lines(bundled, Money())
    assert line.startswith(
        "Offers priced in CNY ranked with the rest at the bundled rate: 1 USD = 7.2734 CNY"
    )
    assert ranking_lines(bundled, display("CNY", {})) == []  # the money line already says it


def _plan(offers: list[object], **settings: object):  # type: ignore[no-untyped-def]
    return plan(
        offers,  # type: ignore[arg-type]
        FakeEstimator(need_gib=20),
        constraints=Constraints(regions=("cn-*",)),
        data=DataNeeds(),
        settings=Settings(today=TODAY, startup_overrides={"*": NO_STARTUP}, **settings),  # type: ignore[arg-type]
    )


def test_a_cn_plan_ranks_yuan_offers_of_several_providers_with_dollar_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A10, A100 and L20 offers of Alibaba Cloud (CNY, as imported) and AWS China (CNY) and a USD offer in a
    cn- region: ranked together at the bundled rate, each converted option naming that rate."""
    monkeypatch.setitem(plan_fakes.GPUS, "A10", (22.5, 0.5))
    monkeypatch.setitem(plan_fakes.GPUS, "L20", (48.0, 0.8))
    offers = [
        offer(
            provider="aliyun",
            instance_type="ecs.gn7i-c8g1.2xlarge",
            region="cn-hangzhou",
            gpu="A10",
            price=10.0,
            currency="CNY",
        ),
        offer(
            provider="aliyun",
            instance_type="ecs.gn7e-c16g1.4xlarge",
            region="cn-hangzhou",
            gpu="A100-80GB",
            price=30.0,
            currency="CNY",
        ),
        offer(
            provider="aliyun",
            instance_type="ecs.gn8is.2xlarge",
            region="cn-beijing",
            gpu="L20",
            price=15.0,
            currency="CNY",
        ),
        offer(
            provider="aws",
            instance_type="p4d.24xlarge",
            region="cn-north-1",
            gpu="A100",
            gpus=8,
            price=200.0,
            currency="CNY",
        ),
        offer(provider="other", instance_type="x1", region="cn-shanghai", gpu="L20", price=2.0),
    ]
    assert _plan(offers).rejected.get("currency") == 4  # no rate: left out, never converted silently
    bundled = bundled_for_ranking({}, TODAY)
    result = _plan(
        offers,
        exchange_rates={c: r for c, (r, _) in bundled.items()},
        exchange_rate_notes={c: n for c, (_, n) in bundled.items()},
    )
    assert "currency" not in result.rejected
    kept = {(o.provider, o.gpu) for o in result.options}
    assert {
        ("aliyun", "A10"),
        ("aliyun", "A100-80GB"),
        ("aliyun", "L20"),
        ("aws", "A100"),
        ("other", "L20"),
    } <= kept
    a10 = next(o for o in result.options if o.gpu == "A10")
    assert a10.price_usd_per_hour == pytest.approx(10.0 / 7.2734)
    assert any("converted from CNY" in a and "bundled rate: 1 USD = 7.2734 CNY" in a for a in a10.assumptions)
    with showing(display("CNY", {})):
        assert money(a10.price_usd_per_hour) == "¥10.00"  # a yuan price comes back as itself


@pytest.mark.parametrize("provider", ["aliyun", "tencent", "huawei", "baidu"])
def test_chinese_clouds_say_why_their_storage_and_egress_are_unknown(provider: str) -> None:
    from gpuwise.plan.rates import NOT_LOOKED_UP, rates_for, unknown_text

    text = unknown_text(rates_for(provider))
    assert text is not None and NOT_LOOKED_UP not in text
