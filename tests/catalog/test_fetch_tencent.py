"""`catalog fetch tencent` against recorded CVM responses (tests/fixtures/cn_clouds/tencent, PROVENANCE.md):
DescribeZoneInstanceConfigInfos carries the prices; the family table names the GPU."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

import pytest
from fetch_fakes import RecordedApi

from gpuwise.catalog.fetch import tencent
from gpuwise.catalog.fetch.common import ApiError
from gpuwise.errors import CatalogError, NotFoundError

TODAY = date(2026, 12, 2)


def test_gpu_types_on_sale_with_discounted_hourly_and_spot_prices() -> None:
    result = tencent.fetch(RecordedApi("tencent"), ["ap-guangzhou"], today=TODAY)
    rows = {r.instance_type: r for r in result.rows}
    # S5 has no GPU; GN7.5XLARGE80 is sold out; GN8 (P40) is a family the table leaves unmapped
    assert sorted(rows) == ["GN7.2XLARGE32", "GNV4.4XLARGE60", "GT4.4XLARGE96"]
    t4 = rows["GN7.2XLARGE32"]
    assert (t4.gpu, t4.gpu_count, t4.vcpus, t4.memory_gib) == ("T4", 1, 8, 32)
    assert (t4.price_per_hour, t4.spot_price_per_hour, t4.currency) == (8.68, 2.61, "CNY")
    assert (t4.region, t4.zone) == ("ap-guangzhou", "ap-guangzhou-3")
    a10 = rows["GNV4.4XLARGE60"]
    assert (a10.gpu, a10.price_per_hour, a10.spot_price_per_hour) == (
        "A10",
        12.6,
        None,
    )  # the discounted price
    assert rows["GT4.4XLARGE96"].gpu == "A100"
    [(reason, n)] = result.skipped.items()
    assert n == 1 and "GN8" in reason


def test_currency_is_the_accounts_as_given() -> None:
    result = tencent.fetch(RecordedApi("tencent"), ["ap-guangzhou"], today=TODAY, currency="usd")
    assert {r.currency for r in result.rows} == {"USD"}


def test_an_error_in_the_response_body_fails_only_that_region() -> None:
    # ap-shanghai has no recording: the fake raises as the SDK does for an error body
    result = tencent.fetch(RecordedApi("tencent"), ["ap-guangzhou", "ap-shanghai"], today=TODAY)
    assert result.regions == ("ap-guangzhou",)
    assert len(result.warnings) == 1 and result.warnings[0].startswith("ap-shanghai: not fetched")


def test_error_inside_response_is_raised_with_its_code() -> None:
    class ErrorBody(RecordedApi):
        def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
            if action == "DescribeZoneInstanceConfigInfos":
                return {"Response": {"Error": {"Code": "InternalError", "Message": "x"}, "RequestId": "r"}}
            return super().call(action, region, params)

    with pytest.raises(CatalogError, match="No Tencent Cloud region answered"):
        tencent.fetch(ErrorBody("tencent"), ["ap-guangzhou"], today=TODAY)


def test_missing_spot_prices_are_a_warning_not_a_failure() -> None:
    api = RecordedApi("tencent")
    real = api.call

    def call(action: str, region: str | None, params: dict[str, object]) -> object:
        if params.get("Filters") and params["Filters"][0]["Values"] == ["SPOTPAID"]:  # type: ignore[index]
            raise ApiError("ResourceUnavailable", "spot not sold here")
        return real(action, region, params)

    api.call = call  # type: ignore[method-assign]
    result = tencent.fetch(api, ["ap-guangzhou"], today=TODAY)
    assert {r.spot_price_per_hour for r in result.rows} == {None}
    assert "ap-guangzhou: no spot prices (ResourceUnavailable: spot not sold here)" in result.warnings


def test_unknown_region_is_bad_input() -> None:
    with pytest.raises(NotFoundError, match="Did you mean 'ap-guangzhou'"):
        tencent.fetch(RecordedApi("tencent"), ["ap-guangzou"], today=TODAY)
