"""Lists inside a sentence use the language's separator: in Chinese the enumeration comma '、' (the variants
--gpu leaves out, the GPU counts there are), in English ', ' as before."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpuwise.catalog.hints import Filters, left_out, why_no_offers
from gpuwise.catalog.offers import load_catalog
from gpuwise.locale import use_language
from gpuwise.locale.formats import join_list


@pytest.fixture
def chinese() -> Iterator[None]:
    use_language("zh")
    yield
    use_language("en")  # the next test must not speak Chinese


def test_join_list_english() -> None:
    assert (
        join_list(["A100-80GB (145 offers)", "A100-PCIe (1 offer)"])
        == "A100-80GB (145 offers), A100-PCIe (1 offer)"
    )
    assert join_list([]) == ""


@pytest.mark.usefixtures("chinese")
def test_join_list_chinese() -> None:
    assert join_list(iter(["1", "2", "8"])) == "1、2、8"


@pytest.mark.usefixtures("chinese")
def test_variants_left_out_are_listed_with_the_enumeration_comma() -> None:
    [line] = left_out(load_catalog(None), Filters(gpu="A100"))
    assert "A100-80GB（" in line and "）、A100-80GB-PCIe（" in line
    assert ", " not in line


@pytest.mark.usefixtures("chinese")
def test_gpu_counts_are_listed_with_the_enumeration_comma() -> None:
    lines = why_no_offers(load_catalog(None), Filters(gpu="A100", count=3))
    [counts] = [line for line in lines if "块 GPU" in line]
    assert "1、2、" in counts and ", " not in counts
