"""units: durations as people type them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwise.units import parse_duration_s


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("90s", 90),
        ("30m", 1800),
        ("2h", 7200),
        ("1.5d", 129600),
        ("1h30m", 5400),
        ("2d 12h", 216000),
        ("1w2d", 777600),
        ("1h 30m 10s", 5410),
        ("1H30M", 5400),
    ],
)
def test_durations_simple_and_compound(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == seconds


def test_bare_number_takes_the_default_unit() -> None:
    assert parse_duration_s("2", default_unit="h") == 7200


@pytest.mark.parametrize(
    "text", ["", "h", "-1h", "1h30", "30m1h", "1h1h", "1hx", "1h30mfoo", "1e9999h", "nan"]
)
def test_not_durations_are_refused(text: str) -> None:
    """'30m1h' and '1h1h' are likely typos: parts go from the largest unit down, each once."""
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration_s(text)


@given(st.integers(0, 52), st.integers(0, 6), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_compound_is_the_sum_of_its_parts(w: int, d: int, h: int, m: int, s: int) -> None:
    parts = [(w, "w"), (d, "d"), (h, "h"), (m, "m"), (s, "s")]
    text = "".join(f"{n}{u}" for n, u in parts if n) or "0s"
    got = parse_duration_s(text)
    assert math.isfinite(got)
    assert got == w * 604800 + d * 86400 + h * 3600 + m * 60 + s
