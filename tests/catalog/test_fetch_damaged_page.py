"""`catalog fetch aliyun` when the API answers a damaged page (cut off by a dropped connection, or a proxy's
HTML error page): a warning for that region, the other regions written; a damaged first answer is one
clear error. Before, the adapter's json.loads raised past every handler: a traceback, nothing written.

The pages go through the adapter's own parsing (``aliyun.answer``) from the recorded responses; the SDK is
never imported or patched."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Any

import pytest
from fetch_fakes import RecordedApi

from gpuwise.catalog.fetch import aliyun
from gpuwise.catalog.fetch.common import ApiError
from gpuwise.errors import CatalogError

TODAY = date(2026, 12, 2)
HTML = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


class PagesApi(RecordedApi):
    """The recorded answers as the bytes the SDK hands over, damaged for one (action, region); cn-beijing
    answers as cn-hangzhou's recording (there is none of its own), so only the damage makes it fail."""

    def __init__(self, damaged: tuple[str, str | None], page: bytes | None = None) -> None:
        super().__init__("aliyun")
        self.damaged, self.page = damaged, page

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if (action, region) == self.damaged and self.page is not None:
            return aliyun.answer(action, self.page)
        body = json.dumps(
            super().call(action, "cn-hangzhou" if region == "cn-beijing" else region, params)
        ).encode()
        if (action, region) == self.damaged:
            body = body[: len(body) // 2]  # cut off mid-answer
        return aliyun.answer(action, body)


@pytest.mark.parametrize("page", [None, HTML, b"\xff\xfe\x00garbage"])
def test_a_damaged_answer_for_one_region_is_a_warning_and_the_rest_are_written(page: bytes | None) -> None:
    api = PagesApi(("DescribeAvailableResource", "cn-beijing"), page)
    result = aliyun.fetch(api, ["cn-hangzhou", "cn-beijing"], today=TODAY)
    assert result.regions == ("cn-hangzhou",) and result.rows
    (warning,) = result.warnings
    assert warning.startswith(
        "cn-beijing: not fetched (DescribeAvailableResource answered a page that is not JSON"
    )


def test_a_damaged_region_list_is_one_clear_error() -> None:
    with pytest.raises(CatalogError) as info:
        aliyun.fetch(PagesApi(("DescribeRegions", None), HTML), ["cn-hangzhou"], today=TODAY)
    assert "not JSON" in info.value.render()


def test_the_parser_takes_a_whole_page_and_refuses_a_list() -> None:
    assert aliyun.answer("DescribeRegions", b'{"Regions": {}}') == {"Regions": {}}
    with pytest.raises(ApiError, match="other than a JSON object"):
        aliyun.answer("DescribeRegions", b"[]")
