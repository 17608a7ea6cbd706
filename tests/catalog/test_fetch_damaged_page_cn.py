"""`catalog fetch tencent|huawei` when the API answers a damaged page (cut off by a dropped connection, or a
proxy's HTML error page): a warning for that region, the other regions written; a damaged first answer is
one clear error. Before, Tencent's SDK let json's error (or a KeyError on the missing ``Response``) out as a
traceback, and Huawei's SDK turned the page into an empty model: a region silently "answered" with nothing
on sale, and a damaged project list crashed.

The pages go through our own interfaces from the recorded responses: Tencent's ``tencent.answer`` with a
stand-in for the SDK's call that parses as the SDK does (json.loads, then the ``Response`` object);
Huawei's answer as its adapter hands it over (the SDK model of a page that is not JSON has every field
None). No SDK is imported or patched."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Any

import pytest
from fetch_fakes import RecordedApi

from gpuwise.catalog.fetch import huawei, tencent
from gpuwise.catalog.fetch.common import ApiError
from gpuwise.errors import CatalogError

TODAY = date(2026, 12, 2)
HTML = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def sdk_parse(body: bytes) -> dict[str, Any]:
    """What Tencent's CommonClient.call_json does with a 200 answer's body before handing it over."""
    doc: dict[str, Any] = json.loads(body)
    if "Error" in doc["Response"]:
        raise AssertionError("not a page this test sends")
    return doc


class TencentPages(RecordedApi):
    """ap-shanghai answers as ap-guangzhou's recording, so only the damage makes it fail."""

    def __init__(self, damaged: tuple[str, str | None], page: bytes | None) -> None:
        super().__init__("tencent")
        self.damaged, self.page = damaged, page

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        recorded = super().call(action, "ap-guangzhou" if region == "ap-shanghai" else region, params)
        body = json.dumps(recorded).encode()
        if (action, region) == self.damaged:
            body = self.page if self.page is not None else body[: len(body) // 2]  # None: cut off mid-answer
        return tencent.answer(action, lambda: sdk_parse(body))


@pytest.mark.parametrize("page", [None, HTML, b"\xff\xfe\x00garbage", b'{"Unexpected": {}}'])
def test_tencent_damaged_answer_for_one_region_is_a_warning(page: bytes | None) -> None:
    api = TencentPages(("DescribeZoneInstanceConfigInfos", "ap-shanghai"), page)
    result = tencent.fetch(api, ["ap-guangzhou", "ap-shanghai"], today=TODAY)
    assert result.regions == ("ap-guangzhou",) and result.rows
    assert result.warnings[0].startswith(
        "ap-shanghai: not fetched (DescribeZoneInstanceConfigInfos answered a page that is not the API's JSON"
    )


def test_tencent_damaged_region_list_is_one_clear_error() -> None:
    with pytest.raises(CatalogError) as info:
        tencent.fetch(TencentPages(("DescribeRegions", None), HTML), ["ap-guangzhou"], today=TODAY)
    assert "damaged or cut off" in info.value.render()


def test_tencent_answer_refuses_a_list() -> None:
    with pytest.raises(ApiError, match="other than a JSON object"):
        tencent.answer("DescribeRegions", lambda: [])


class HuaweiPages(RecordedApi):
    """cn-east-3 answers as cn-north-4's recording; the damaged call answers ``page`` as the adapter would."""

    def __init__(self, damaged: tuple[str, str | None], page: Mapping[str, Any]) -> None:
        super().__init__("huawei")
        self.damaged, self.page = damaged, page

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if (action, region) == self.damaged:
            return self.page
        if region == "cn-east-3":
            params = {**params, "project_id": "as cn-north-4"}
        return super().call(action, "cn-north-4" if region == "cn-east-3" else region, params)


# the SDK's model of a page that is not JSON, through the adapter (every field None), and an empty object
DAMAGED = [{"flavors": None, "links": None}, {}]


@pytest.mark.parametrize("page", DAMAGED)
@pytest.mark.parametrize("action", ["ListFlavors", "ListOnDemandResourceRatings"])
def test_huawei_damaged_answer_for_one_region_is_a_warning(action: str, page: Mapping[str, Any]) -> None:
    api = HuaweiPages((action, "cn-east-3"), page)
    result = huawei.fetch(api, ["cn-north-4", "cn-east-3"], today=TODAY)
    assert result.regions == ("cn-north-4",) and result.rows
    assert result.warnings[0].startswith(f"cn-east-3: not fetched ({action} answered without its")


@pytest.mark.parametrize("page", [{"projects": None, "links": None}, {}])
def test_huawei_damaged_project_list_is_one_clear_error(page: Mapping[str, Any]) -> None:
    with pytest.raises(CatalogError) as info:
        huawei.fetch(HuaweiPages(("KeystoneListAuthProjects", None), page), [], today=TODAY)
    assert "damaged or cut-off page" in info.value.render()


def test_huawei_an_empty_flavor_list_is_an_answer() -> None:
    api = HuaweiPages(("ListFlavors", "cn-east-3"), {"flavors": []})
    result = huawei.fetch(api, ["cn-north-4", "cn-east-3"], today=TODAY)
    assert result.regions == ("cn-north-4", "cn-east-3") and not result.warnings


def test_an_api_error_is_one_bounded_line() -> None:
    """Tencent's SDK puts a non-200 answer's whole body in its message: a proxy's HTML page became the
    per-region warning line."""
    page = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>" + "x" * 5000 + "</body></html>"
    text = str(ApiError("HTTP502", page))
    assert "\n" not in text and len(text) <= 320 and text.startswith("HTTP502: <html> <head><title>502")
    assert str(ApiError("", "short  reason")) == "short reason"
