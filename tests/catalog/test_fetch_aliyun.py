"""`catalog fetch aliyun` against recorded ECS responses (tests/fixtures/cn_clouds/aliyun, PROVENANCE.md):
which rows come out, which are left out, and how a failing region, a bad region or a refused key end."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

import pytest
from fetch_fakes import RecordedApi

from gpuwise.catalog.fetch import aliyun
from gpuwise.catalog.fetch.common import ApiError, FetchedRow, to_csv
from gpuwise.errors import CatalogError, ConfigError, NotFoundError

TODAY = date(2026, 12, 2)


def _rows(api: RecordedApi, regions: list[str]) -> dict[tuple[str, str | None], FetchedRow]:
    result = aliyun.fetch(api, regions, today=TODAY)
    return {(r.instance_type, r.zone): r for r in result.rows}


def test_gpu_types_per_zone_with_the_instance_price_and_the_newest_spot_price() -> None:
    rows = _rows(RecordedApi("aliyun"), ["cn-hangzhou"])
    assert sorted(rows) == [
        ("ecs.gn7e-c16g1.4xlarge", "cn-hangzhou-j"),
        ("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-i"),
        ("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j"),
        ("ecs.gn8is.2xlarge", "cn-hangzhou-i"),  # sold out in zone j: not listed there
    ]
    a10 = rows[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-i")]
    # the instanceType detail's TradePrice, not the total with the default system disk (12.06)
    assert (a10.gpu, a10.gpu_count, a10.price_per_hour, a10.currency) == ("A10", 1, 12.0, "CNY")
    assert a10.spot_price_per_hour == 2.9  # the newest of two points in zone i, not the first (3.1)
    assert rows[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j")].spot_price_per_hour == 3.4
    assert (a10.vcpus, a10.memory_gib, a10.gpu_memory_gib, a10.region) == (8, 30, 24, "cn-hangzhou")
    # GPUSpec says "NVIDIA A100"; 80 GiB per GPU makes it the 80 GB card
    assert rows[("ecs.gn7e-c16g1.4xlarge", "cn-hangzhou-j")].gpu == "A100-80GB"
    l20 = rows[("ecs.gn8is.2xlarge", "cn-hangzhou-i")]
    assert (l20.gpu, l20.spot_price_per_hour) == ("L20", None)


def test_unknown_gpu_is_left_out_and_counted_never_guessed() -> None:
    result = aliyun.fetch(RecordedApi("aliyun"), ["cn-hangzhou"], today=TODAY)
    assert not any(r.instance_type.startswith("ecs.vgn5i") for r in result.rows)
    [(reason, n)] = result.skipped.items()
    assert n == 1 and "NVIDIA GRID P4-1Q" in reason


def test_instance_types_are_read_across_pages() -> None:
    api = RecordedApi("aliyun")
    aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    pages = [p for a, _, p in api.calls if a == "DescribeInstanceTypes"]
    assert [p.get("NextToken") for p in pages] == [None, "e71d8a535bd9cc11"]
    assert all(p["MaxResults"] <= 100 and p["MinimumGPUAmount"] == 1 for p in pages)


def test_a_failing_region_is_a_warning_and_the_others_are_fetched() -> None:
    api = RecordedApi(
        "aliyun", fail={("DescribeAvailableResource", "cn-beijing"): ApiError("Throttling", "busy")}
    )
    result = aliyun.fetch(api, ["cn-hangzhou", "cn-beijing"], today=TODAY)
    assert result.regions == ("cn-hangzhou",)
    assert {r.region for r in result.rows} == {"cn-hangzhou"}
    assert result.warnings == ("cn-beijing: not fetched (Throttling: busy)",)


def test_a_failing_price_call_leaves_that_type_out_with_a_warning() -> None:
    api = RecordedApi("aliyun", fail={("DescribePrice", "cn-hangzhou"): ApiError("Throttling", "busy")})
    result = aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    assert result.rows == ()
    assert "cn-hangzhou ecs.gn7i-c8g1.2xlarge: no pay-as-you-go price (Throttling: busy)" in result.warnings


def test_every_region_failing_is_an_error() -> None:
    api = RecordedApi(
        "aliyun", fail={("DescribeAvailableResource", None): ApiError("ServiceUnavailable", "down")}
    )
    with pytest.raises(CatalogError, match="No Alibaba Cloud region answered"):
        aliyun.fetch(api, ["cn-hangzhou", "cn-beijing"], today=TODAY)


def test_a_region_the_account_does_not_have_is_bad_input_with_close_matches() -> None:
    with pytest.raises(NotFoundError, match="Did you mean 'cn-hangzhou'") as info:
        aliyun.fetch(RecordedApi("aliyun"), ["cn-hangzou"], today=TODAY)
    assert info.value.exit_code == 2


def test_a_refused_key_stops_the_fetch_as_bad_input() -> None:
    api = RecordedApi(
        "aliyun",
        fail={
            ("DescribeRegions", None): ApiError(
                "InvalidAccessKeyId.NotFound", "Specified access key is not found."
            )
        },
    )
    with pytest.raises(ConfigError, match="refused the credentials") as info:
        aliyun.fetch(api, [], today=TODAY)
    assert info.value.exit_code == 2


def test_missing_credentials_name_the_variables_never_a_value() -> None:
    with pytest.raises(ConfigError) as info:
        aliyun.sdk_api({"ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI5tSECRETIDVALUE"})
    text = info.value.render()
    assert "ALIBABA_CLOUD_ACCESS_KEY_SECRET is not set" in text and "To fix: export" in text
    assert "LTAI5tSECRETIDVALUE" not in text


def test_the_file_is_the_import_schema_with_currency_and_price_date() -> None:
    result = aliyun.fetch(RecordedApi("aliyun"), ["cn-hangzhou"], today=TODAY)
    lines = to_csv(result).splitlines()
    assert lines[0] == (
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
        "AvailabilityZone,GpuInfo,Currency,PriceDate"
    )
    assert lines[1].startswith("ecs.gn7i-c8g1.2xlarge,A10,1,8,30,12,2.9,cn-hangzhou,cn-hangzhou-i,")
    assert "'SizeInMiB': 24576" in lines[1]  # the API's 24 GiB per GPU, for the import's GpuInfo reader
    assert lines[1].endswith(",CNY,2026-12-02")
    assert len(lines) == 5


# ---------------------------------------------------------------- the spot price history's pages


def test_the_spot_history_is_read_across_pages_and_the_newest_point_wins() -> None:
    api = RecordedApi("aliyun")
    rows = _rows(api, ["cn-hangzhou"])
    # page 1 holds 00:00 (9.8) and 06:00 (9.5); the newest point, 12:00 (9.2), is on page 2
    assert rows[("ecs.gn7e-c16g1.4xlarge", "cn-hangzhou-j")].spot_price_per_hour == 9.2
    pages = [p for a, _, p in api.calls if a == "DescribeSpotPriceHistory" and "gn7e" in p["InstanceType"]]
    assert [p.get("Offset") for p in pages] == [None, 2]  # page 2 starts at the NextOffset page 1 named
    assert all(p["OSType"] == "linux" and p["NetworkType"] == "vpc" for p in pages)


Page = Callable[[int], tuple[list[dict[str, Any]], Any]]


class SpotPages(RecordedApi):
    """The recorded ECS answers, with every type's spot price history served by ``page(offset)``:
    the page's points and its NextOffset (raising what ``page`` raises)."""

    def __init__(self, page: Page) -> None:
        super().__init__("aliyun")
        self.page = page

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if action != "DescribeSpotPriceHistory":
            return super().call(action, region, params)
        self.calls.append((action, region, dict(params)))
        points, following = self.page(int(params.get("Offset", 0)))
        return {
            "RequestId": "****",
            "Currency": "CNY",
            "NextOffset": following,
            "SpotPrices": {"SpotPriceType": points},
        }

    def offsets(self, type_id: str) -> list[int]:
        return [
            int(p.get("Offset", 0))
            for a, _, p in self.calls
            if a == "DescribeSpotPriceHistory" and p["InstanceType"] == type_id
        ]


def _point(hour: int, price: float, zone: str = "cn-hangzhou-i") -> dict[str, Any]:
    return {"ZoneId": zone, "Timestamp": f"2026-12-01T{hour:02d}:00:00Z", "SpotPrice": price}


A10 = ("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-i")


def test_a_next_offset_that_does_not_advance_ends_the_paging_with_a_warning() -> None:
    api = SpotPages(lambda offset: ([_point(offset, 3.0 - offset / 10)], 3))  # always "next: row 3"
    result = aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    assert api.offsets(A10[0]) == [0, 3]  # page 1, then row 3 once: it names row 3 again, so it stops
    rows = {(r.instance_type, r.zone): r for r in result.rows}
    assert rows[A10].spot_price_per_hour == 2.7  # the newest point read (03:00) is kept
    assert (
        "cn-hangzhou ecs.gn7i-c8g1.2xlarge: the spot price history's next page (3) does not advance past "
        "row 3; newer points may be missed"
    ) in result.warnings


def test_a_history_longer_than_the_cap_is_read_to_the_cap_with_a_warning() -> None:
    api = SpotPages(lambda offset: ([_point(offset // 1000, 2.0)], offset + 1000))  # never ends
    result = aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    assert api.offsets(A10[0]) == [1000 * n for n in range(aliyun._SPOT_PAGES)]
    assert (
        f"cn-hangzhou ecs.gn7i-c8g1.2xlarge: the spot price history has more than {aliyun._SPOT_PAGES} "
        "pages; read the first ones only, newer points may be missed"
    ) in result.warnings


@pytest.mark.parametrize("last", [0, None, "", "not a number", float("nan"), float("inf"), -1])
def test_the_paging_ends_quietly_when_a_page_names_no_next_row(last: Any) -> None:
    pages = {0: ([_point(1, 3.0)], 1), 1: ([_point(2, 2.5), _point(3, 4.0, "cn-hangzhou-j")], last)}
    api = SpotPages(lambda offset: pages[offset])
    result = aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    assert api.offsets(A10[0]) == [0, 1]
    rows = {(r.instance_type, r.zone): r for r in result.rows}
    assert rows[A10].spot_price_per_hour == 2.5
    assert rows[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j")].spot_price_per_hour == 4.0  # only on page 2
    assert not [w for w in result.warnings if "spot" in w]


def test_an_empty_page_ends_the_paging() -> None:
    # a NextOffset that counts the rows read, answered at last by an empty page, also ends the history
    pages = {0: ([_point(1, 3.0)], 1), 1: ([], 1)}
    api = SpotPages(lambda offset: pages[offset])
    result = aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    assert api.offsets(A10[0]) == [0, 1]
    assert {(r.instance_type, r.zone): r for r in result.rows}[A10].spot_price_per_hour == 3.0
    assert not [w for w in result.warnings if "spot" in w]


def _failing_page_2(error: ApiError) -> Page:
    def page(offset: int) -> tuple[list[dict[str, Any]], Any]:
        if offset:
            raise error
        return [_point(1, 3.0)], 1

    return page


def test_a_later_page_failing_leaves_the_spot_price_out_with_a_warning() -> None:
    # half a history could name a stale price as the newest: none is written rather than that one
    api = SpotPages(_failing_page_2(ApiError("Throttling", "busy")))
    result = aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    rows = {(r.instance_type, r.zone): r for r in result.rows}
    assert rows[A10].spot_price_per_hour is None and rows[A10].price_per_hour == 12.0
    assert "cn-hangzhou ecs.gn7i-c8g1.2xlarge: no spot price (Throttling: busy)" in result.warnings


def test_a_refused_key_on_a_later_page_stops_the_fetch_as_bad_input() -> None:
    api = SpotPages(_failing_page_2(ApiError("Forbidden.RAM", "not authorized")))
    with pytest.raises(ConfigError, match="refused the credentials") as info:
        aliyun.fetch(api, ["cn-hangzhou"], today=TODAY)
    assert info.value.exit_code == 2
