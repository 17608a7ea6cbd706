"""An empty filter (`--gpu ""`, as an unset shell variable gives) is bad input, not a filter that silently
shows every offer as if the option had been left out: `catalog offers` says which option is empty (exit 2),
and the query core treats an empty name as an unknown one (plan already refused it so); `catalog fetch
--region ""` would have fetched every region the account has."""

from __future__ import annotations

import pytest

from gpuwise.catalog.fetch import tencent
from gpuwise.catalog.fetch.common import check_regions
from gpuwise.catalog.offers import load_catalog
from gpuwise.catalog.query import query_offers
from gpuwise.cli.main import main
from gpuwise.errors import NotFoundError


@pytest.mark.parametrize("option", ["--gpu", "--provider", "--region"])
@pytest.mark.parametrize("value", ["", "  "])
def test_catalog_offers_empty_filter_is_exit_2(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["catalog", "offers", option, value, "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{option} is empty" in captured.err and "To fix:" in captured.err


def test_query_core_refuses_an_empty_name() -> None:
    catalog = load_catalog(None)
    with pytest.raises(NotFoundError):
        query_offers(catalog, gpu="")
    with pytest.raises(NotFoundError):
        query_offers(catalog, provider=" ")


def test_query_core_empty_region_matches_nothing() -> None:
    assert query_offers(load_catalog(None), region="") == []


@pytest.mark.parametrize("asked", [[""], ["cn-hangzhou", " "]])
def test_an_empty_region_is_unknown_not_every_region(asked: list[str]) -> None:
    with pytest.raises(NotFoundError, match="Unknown region"):
        check_regions(asked, ["cn-hangzhou", "cn-beijing"], cloud="Alibaba Cloud")


def test_fetch_refuses_an_empty_region_before_asking_for_credentials(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in tencent.ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    assert main(["catalog", "fetch", "tencent", "--region", ""]) == 2
    err = capsys.readouterr().err
    assert "--region is empty" in err and "every region" in err and "credentials" not in err


@pytest.mark.parametrize("option", ["--base-url", "--fallback-url"])
def test_update_refuses_an_empty_url_before_any_download(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--base-url "$MIRROR"` with MIRROR unset downloaded from upstream, as if no mirror had been named."""
    assert main(["catalog", "update", option, ""]) == 2
    assert f"{option} '' must be an https:// URL" in capsys.readouterr().err
