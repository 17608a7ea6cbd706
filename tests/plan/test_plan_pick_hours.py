"""The pick lines' hours: one pair of brackets, the days said once ('48 h (2.0 days) (40.5 h–55 h (2.3
days))' nested them), in English and in Chinese (whose brackets are full-width)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from gpuwise.locale import use_language
from gpuwise.plan.models import Option
from gpuwise.plan.output import hours_range

_BASE = Option(
    provider="p",
    instance_type="i",
    region="r",
    zone=None,
    gpu="H100",
    gpus_per_node=1,
    nodes=1,
    pricing="on-demand",
    price_usd_per_hour=1.0,
    price_as_of=date(2026, 1, 1),
    price_date_exact=True,
    price_stale=False,
    currency="USD",
    hours=1.0,
    cost_usd=1.0,
    cost_breakdown_usd={},
    unknown_costs=(),
    assumptions=(),
    fits=True,
    memory_per_gpu_gib=1.0,
    memory_capacity_gib=80.0,
    bottleneck="compute",
    expected_interruptions=0.0,
    source="test",
)


@pytest.mark.parametrize(
    ("hours", "low", "high", "text"),
    [
        (11.0, 5.04, 36.0, "11.0 h (5.04 h–36.0 h)"),
        (11.0, 5.04, 56.0, "11.0 h (5.04 h–56 h, up to 2.3 days)"),
        (48.0, 40.5, 55.0, "48 h (40.5 h–55 h), about 2.0 days"),
        (62.0, 62.0, 62.0, "62 h (2.6 days)"),
    ],
)
def test_hours_and_range_read_with_one_pair_of_brackets(
    hours: float, low: float, high: float, text: str
) -> None:
    assert hours_range(replace(_BASE, hours=hours, hours_low=low, hours_high=high)) == text


def test_chinese_pick_hours_keep_one_pair_of_brackets() -> None:
    env: dict[str, str] = {}  # the process's own locale variables stay as they are
    use_language("zh", env)
    try:
        text = hours_range(replace(_BASE, hours=48.0, hours_low=40.5, hours_high=55.0))
    finally:
        use_language("en", env)
    assert text.count("（") == 1 and "(" not in text and "天" in text
