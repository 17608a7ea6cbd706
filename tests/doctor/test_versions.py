"""Version tuples: parsed from the forms NVIDIA and the frameworks print, compared field by field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwise.doctor.versions import at_least, format_version, parse_version

versions = st.lists(st.integers(min_value=0, max_value=999), min_size=1, max_size=4).map(tuple)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("535.183.01", (535, 183, 1)),
        ("2.5.1+cu124", (2, 5, 1)),
        ("V12.4.131", (12, 4, 131)),
        ("12.4", (12, 4)),
        ("615", (615,)),
        ("none", None),
    ],
)
def test_parse_version(text: str, expected: tuple[int, ...] | None) -> None:
    assert parse_version(text) == expected


def test_numeric_not_string_order() -> None:
    assert at_least((12, 10), (12, 4))  # "12.10" < "12.4" as strings
    assert at_least((535, 183, 1), (535, 54, 3))
    assert not at_least((525, 60, 12), (525, 60, 13))
    assert at_least((12, 4), (12, 4, 0))  # missing fields count as 0


@given(versions)
def test_every_version_meets_itself(v: tuple[int, ...]) -> None:
    assert at_least(v, v)
    assert parse_version(format_version(v)) == v


@given(versions, versions)
def test_at_least_is_total_for_same_length(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    width = max(len(a), len(b))
    pa, pb = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    assert at_least(pa, pb) or at_least(pb, pa)
    assert at_least(pa, pb) == (pa >= pb)


@given(st.integers(min_value=0, max_value=999), versions)
def test_branch_minimum_is_met_by_every_driver_of_the_branch(branch: int, rest: tuple[int, ...]) -> None:
    assert at_least((branch, *rest), (branch,))
    if branch:
        assert not at_least((branch - 1, *rest), (branch,))
