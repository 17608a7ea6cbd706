"""Alibaba Cloud (Aliyun) ECS: GPU instance types per region with pay-as-you-go and spot prices.

Calls, all of ECS API version 2014-05-26 (the response shapes are recorded in
tests/fixtures/cn_clouds/aliyun with the reference page of each):

- ``DescribeRegions``: the regions the account can use (an asked region must be one of them);
- ``DescribeInstanceTypes`` (paged, ``MinimumGPUAmount=1``): every GPU type with its GPU model
  (``GPUSpec``), count, per-GPU memory in GiB, vCPUs and memory;
- per region ``DescribeAvailableResource`` (pay-as-you-go instance types on sale, per zone);
- per type ``DescribePrice`` (``PriceUnit=Hour``): the hourly pay-as-you-go price the account would pay
  (``TradePrice``, account discounts applied) of the instance type alone (its ``instanceType`` detail, so
  the default system disk is not counted) and its currency;
- per type ``DescribeSpotPriceHistory`` (paged by row, ``Offset``/``NextOffset``): the newest Linux spot
  price per zone, over every page of the history since yesterday 00:00 UTC.

``DescribeRegions``, ``DescribeAvailableResource`` and ``DescribePrice`` take no paging parameter (their
references list none): one answer holds the whole list.

A type whose GPU gpuwise cannot name is left out and counted (never guessed); a type whose price call fails
is left out of that region with a warning; a region whose listing fails is a warning and the rest go on.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import replace
from datetime import date, timedelta
from typing import Any

from gpuwise.catalog.cn_families import gpu_for
from gpuwise.catalog.fetch.common import (
    Api,
    ApiError,
    FetchedRow,
    FetchResult,
    FetchWarnings,
    api_failure,
    check_regions,
    credentials,
    for_each_region,
    gpu_from_name,
    items,
    number,
    with_memory_variant,
)
from gpuwise.errors import ConfigError
from gpuwise.locale import _

CLOUD = "Alibaba Cloud"
ENV_NAMES = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET")
CREDENTIALS_DOC = "https://www.alibabacloud.com/help/en/sdk/developer-reference/configure-the-alibaba-cloud-accesskey-environment-variable-on-linux-macos-and-windows-systems"
# The endpoint the region list is asked of (any region answers DescribeRegions).
_HOME_REGION = "cn-hangzhou"
_PAGE = 100  # DescribeInstanceTypes' MaxResults limit since 2023-11-15 (its API reference)
# Pages of one type's spot price history read at most. The reference's example first page answers NextOffset
# 1000 (a page of 1000 rows); two days of hourly points in every zone of a region are a few hundred rows, so
# the cap only stops a runaway paging.
_SPOT_PAGES = 20
# Error codes that mean the key itself is refused (Alibaba Cloud's common error codes).
_AUTH_CODES = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "Forbidden",
    "NoPermission",
    "InvalidSecurityToken",
)


def is_auth_code(code: str) -> bool:
    return code.startswith(_AUTH_CODES)


def fetch(api: Api, regions: list[str], *, today: date) -> FetchResult:
    """Every GPU instance type on sale in ``regions`` (all the account's regions when empty)."""
    warnings = FetchWarnings()
    try:
        listed = items(_call(api, "DescribeRegions", None, {}), "Regions", "Region")
        wanted = check_regions(regions, [str(r.get("RegionId", "")) for r in listed], cloud=CLOUD)
        types = _gpu_types(api, warnings)
    except ApiError as exc:
        raise api_failure(CLOUD, exc) from exc

    def one(region: str) -> list[FetchedRow]:
        return _region_rows(api, region, types, today, warnings)

    return for_each_region(wanted, one, warnings, cloud=CLOUD, provider="aliyun", today=today)


def _call(api: Api, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        return api.call(action, region, params)
    except ApiError as exc:
        exc.auth = exc.auth or is_auth_code(exc.code)
        raise


def _gpu_types(api: Api, warnings: FetchWarnings) -> dict[str, FetchedRow]:
    """GPU instance types by id, as region-less rows (prices and places are filled per region)."""
    found: dict[str, FetchedRow] = {}
    token = ""
    for _page in range(1000):  # bounded: 100 000 types is far beyond any cloud's list
        params: dict[str, Any] = {"MaxResults": _PAGE, "MinimumGPUAmount": 1}
        if token:
            params["NextToken"] = token
        page = _call(api, "DescribeInstanceTypes", _HOME_REGION, params)
        for item in items(page, "InstanceTypes", "InstanceType"):
            row = _type_row(item, warnings)
            if row is not None:
                found[row.instance_type] = row
        token = str(page.get("NextToken") or "")
        if not token:
            break
    return found


def _type_row(item: Mapping[str, Any], warnings: FetchWarnings) -> FetchedRow | None:
    count = number(item.get("GPUAmount"))
    type_id = str(item.get("InstanceTypeId", "")).strip()
    if not type_id or count is None or count <= 0:
        return None
    spec = str(item.get("GPUSpec", "")).strip()
    per_gpu = number(item.get("GPUMemorySize"))
    gpu = gpu_from_name(spec) if spec else None
    if gpu is None:
        # the API's GPU name is not one gpuwise knows: the bundled family table may still say it
        gpu, why = gpu_for("aliyun", type_id)
        if gpu is None:
            warnings.skip(f"GPU not known to gpuwise: {spec or 'not said'} ({why})")
            return None
    return FetchedRow(
        instance_type=type_id,
        gpu=with_memory_variant(gpu, per_gpu),
        gpu_count=count,
        gpu_memory_gib=per_gpu if per_gpu else None,
        vcpus=number(item.get("CpuCoreCount")),
        memory_gib=number(item.get("MemorySize")),
        price_per_hour=None,
        spot_price_per_hour=None,
        currency="",
        region="",
        zone=None,
    )


def _on_sale(api: Api, region: str) -> dict[str, list[str]]:
    """Instance type -> zones of ``region`` where it is on sale pay-as-you-go."""
    doc = _call(
        api,
        "DescribeAvailableResource",
        region,
        {"RegionId": region, "DestinationResource": "InstanceType", "InstanceChargeType": "PostPaid"},
    )
    zones: dict[str, list[str]] = {}
    for zone in items(doc, "AvailableZones", "AvailableZone"):
        zone_id = str(zone.get("ZoneId", ""))
        for resource in items(zone, "AvailableResources", "AvailableResource"):
            for supported in items(resource, "SupportedResources", "SupportedResource"):
                if supported.get("Status") == "Available" and zone_id:
                    zones.setdefault(str(supported.get("Value", "")), []).append(zone_id)
    return zones


def _region_rows(
    api: Api, region: str, types: dict[str, FetchedRow], today: date, warnings: FetchWarnings
) -> list[FetchedRow]:
    rows: list[FetchedRow] = []
    for type_id, zones in sorted(_on_sale(api, region).items()):
        base = types.get(type_id)
        if base is None:
            continue  # not a GPU type (or one whose GPU is not known, counted once above)
        try:
            price, currency = _price(api, region, type_id)
        except ApiError as exc:
            if exc.auth:
                raise
            warnings.warn(f"{region} {type_id}: no pay-as-you-go price ({exc})")
            continue
        spots = _spot_prices(api, region, type_id, today, warnings)
        for zone in zones:
            rows.append(
                replace(
                    base,
                    price_per_hour=price,
                    spot_price_per_hour=spots.get(zone),
                    currency=currency,
                    region=region,
                    zone=zone,
                )
            )
    return rows


def _price(api: Api, region: str, type_id: str) -> tuple[float | None, str]:
    doc = _call(
        api,
        "DescribePrice",
        region,
        {"RegionId": region, "ResourceType": "instance", "InstanceType": type_id, "PriceUnit": "Hour"},
    )
    info = doc.get("PriceInfo")
    price = info.get("Price") if isinstance(info, Mapping) else None
    if not isinstance(price, Mapping):
        raise ApiError("", "the price response has no PriceInfo.Price")
    currency = str(price.get("Currency") or "").strip().upper()
    if not currency:
        raise ApiError("", "the price response names no currency")
    for detail in items(price, "DetailInfos", "DetailInfo"):
        if str(detail.get("Resource", "")).lower() == "instancetype":
            return number(detail.get("TradePrice")), currency
    return number(price.get("TradePrice")), currency


def _spot_prices(
    api: Api, region: str, type_id: str, today: date, warnings: FetchWarnings
) -> dict[str, float]:
    """Zone -> the newest Linux spot price of the last day, read across every page of the history; empty when
    the type has no spot market there or the history cannot be read."""
    # DescribeSpotPriceHistory pages by row: Offset is the row to start from (default 0) and NextOffset the
    # row the next page starts at (ECS API reference, api-ecs-2014-05-26-describespotpricehistory).
    params: dict[str, Any] = {
        "RegionId": region,
        "InstanceType": type_id,
        "NetworkType": "vpc",
        # a point carries no OS: ask Linux only, so a Windows price is never taken as the zone's newest
        "OSType": "linux",
        "StartTime": (today - timedelta(days=1)).isoformat() + "T00:00:00Z",
    }
    newest: dict[str, tuple[str, float]] = {}
    offset = 0
    try:
        for _page in range(_SPOT_PAGES):
            doc = _call(
                api, "DescribeSpotPriceHistory", region, {**params, "Offset": offset} if offset else params
            )
            points = items(doc, "SpotPrices", "SpotPriceType")
            _keep_newest(newest, points)
            following = number(doc.get("NextOffset"))
            if not points or following is None or not math.isfinite(following) or following <= 0:
                break  # the last page: no row left, or no next row named
            if following <= offset:
                warnings.warn(
                    f"{region} {type_id}: the spot price history's next page ({following:g}) does not "
                    f"advance past row {offset}; newer points may be missed"
                )
                break
            offset = int(following)
        else:
            warnings.warn(
                f"{region} {type_id}: the spot price history has more than {_SPOT_PAGES} pages; "
                "read the first ones only, newer points may be missed"
            )
    except ApiError as exc:
        if exc.auth:
            raise
        warnings.warn(f"{region} {type_id}: no spot price ({exc})")
        return {}
    return {zone: value for zone, (_, value) in newest.items()}


def _keep_newest(newest: dict[str, tuple[str, float]], points: list[Mapping[str, Any]]) -> None:
    """Fold one page of points into zone -> (timestamp, price) of the newest point seen. The reference
    promises no order, so every point is compared; its timestamps are ISO 8601 UTC, which sort as text."""
    for point in points:
        zone = str(point.get("ZoneId", ""))
        value = number(point.get("SpotPrice"))
        stamp = str(point.get("Timestamp", ""))
        if zone and value is not None and (zone not in newest or stamp > newest[zone][0]):
            newest[zone] = (stamp, value)


# ---------------------------------------------------------------- the SDK adapter


class SdkApi:
    """:class:`Api` over Alibaba Cloud's core Python SDK (``aliyun-python-sdk-core``, the
    ``gpuwise[aliyun]`` extra): its generic ``CommonRequest``, one RPC call per action."""

    def __init__(self, key_id: str, secret: str) -> None:
        try:
            from aliyunsdkcore.client import AcsClient
        except ImportError as exc:
            raise ConfigError(
                _("The Alibaba Cloud SDK is not installed"),
                fix=_("pip install 'gpuwise[aliyun]' (it installs aliyun-python-sdk-core)"),
            ) from exc
        self._client = AcsClient(key_id, secret, _HOME_REGION)

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        from aliyunsdkcore.acs_exception.exceptions import ClientException, ServerException
        from aliyunsdkcore.request import CommonRequest

        request = CommonRequest()
        request.set_accept_format("json")
        request.set_domain(f"ecs.{region}.aliyuncs.com" if region else "ecs.aliyuncs.com")
        request.set_method("POST")
        request.set_version("2014-05-26")
        request.set_action_name(action)
        for key, value in params.items():
            request.add_query_param(key, str(value))
        try:
            body = self._client.do_action_with_exception(request)
        except (ServerException, ClientException) as exc:
            raise ApiError(str(exc.get_error_code()), str(exc.get_error_msg())) from exc
        return answer(action, body)


def answer(action: str, body: bytes | str) -> Mapping[str, Any]:
    """The JSON object of a call's answer; ApiError (a warning for that region, never a traceback) for a
    damaged or cut-off page, such as a proxy's HTML error page or a body the connection dropped."""
    try:
        doc = json.loads(body)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise ApiError("", f"{action} answered a page that is not JSON (damaged or cut off)") from exc
    if not isinstance(doc, dict):
        raise ApiError("", f"{action} answered something other than a JSON object")
    return doc


def sdk_api(env: Mapping[str, str] | None = None) -> SdkApi:
    """The real API with the credentials from the environment (bad input when they are missing)."""
    key_id, secret = credentials(
        os.environ if env is None else env, ENV_NAMES, cloud=CLOUD, doc=CREDENTIALS_DOC
    )
    return SdkApi(key_id, secret)
