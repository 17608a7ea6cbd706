"""Tencent Cloud CVM: GPU instance types per zone with pay-as-you-go and spot prices.

Calls, CVM API version 2017-03-12 (the response shapes are recorded in tests/fixtures/cn_clouds/tencent
with the reference page of each):

- ``DescribeRegions``: the regions the account can use (an asked region must be one of them);
- per region ``DescribeZoneInstanceConfigInfos`` twice, filtered by ``instance-charge-type``
  ``POSTPAID_BY_HOUR`` and ``SPOTPAID``: every instance type on sale per zone with its price (this API
  carries prices). The hourly price taken is ``UnitPriceDiscount`` (the account's discount applied), or
  ``UnitPrice`` when no discounted price is given; only ``ChargeUnit`` ``HOUR`` rows are read.

The API names an instance family (``GN7``), not a GPU: the GPU comes from the bundled instance-family table
(``catalog/data/cn-instance-families.csv``); a family it does not map is left out and counted, never guessed.
The API does not say the currency either: a China-site account is billed in CNY (the default), an
international-site account in USD (``--billed-in USD``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import date
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
    items,
    number,
)
from gpuwise.errors import ConfigError
from gpuwise.locale import _

CLOUD = "Tencent Cloud"
ENV_NAMES = ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")
CREDENTIALS_DOC = "https://www.tencentcloud.com/document/product/1278/46696"
_HOME_REGION = "ap-guangzhou"
# Tencent Cloud's common error codes for a refused key: AuthFailure.* and UnauthorizedOperation.*
_AUTH_PREFIXES = ("AuthFailure", "UnauthorizedOperation")


def fetch(api: Api, regions: list[str], *, today: date, currency: str = "CNY") -> FetchResult:
    """Every GPU instance type on sale in ``regions`` (all the account's regions when empty)."""
    warnings = FetchWarnings()
    try:
        listed = items(_response(api, "DescribeRegions", None, {}), "RegionSet")
    except ApiError as exc:
        raise api_failure(CLOUD, exc) from exc
    known = [str(r.get("Region", "")) for r in listed if r.get("RegionState", "AVAILABLE") == "AVAILABLE"]
    wanted = check_regions(regions, [r for r in known if r], cloud=CLOUD)

    def one(region: str) -> list[FetchedRow]:
        return _region_rows(api, region, currency.upper(), warnings)

    return for_each_region(wanted, one, warnings, cloud=CLOUD, provider="tencent", today=today)


def _response(api: Api, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``Response`` object of a call; an ``Error`` inside it (how the API reports failures) raised."""
    try:
        doc = api.call(action, region, params)
    except ApiError as exc:
        exc.auth = exc.auth or exc.code.startswith(_AUTH_PREFIXES)
        raise
    body = doc.get("Response")
    if not isinstance(body, Mapping):
        raise ApiError("", f"{action} answered without a Response object")
    error = body.get("Error")
    if isinstance(error, Mapping):
        code = str(error.get("Code", ""))
        raise ApiError(code, str(error.get("Message", "")), auth=code.startswith(_AUTH_PREFIXES))
    return body


def _quota_items(api: Api, region: str, charge_type: str) -> list[Mapping[str, Any]]:
    body = _response(
        api,
        "DescribeZoneInstanceConfigInfos",
        region,
        {"Filters": [{"Name": "instance-charge-type", "Values": [charge_type]}]},
    )
    return items(body, "InstanceTypeQuotaSet")


def _hourly(item: Mapping[str, Any]) -> float | None:
    price = item.get("Price")
    if not isinstance(price, Mapping) or str(price.get("ChargeUnit", "HOUR")).upper() != "HOUR":
        return None
    for key in ("UnitPriceDiscount", "UnitPrice"):
        value = number(price.get(key))
        if value is not None and value > 0:
            return value
    return None


def _gpus(item: Mapping[str, Any]) -> float | None:
    for key in ("GpuCount", "Gpu"):
        value = number(item.get(key))
        if value is not None and value > 0:
            return value
    return None


def _region_rows(api: Api, region: str, currency: str, warnings: FetchWarnings) -> list[FetchedRow]:
    on_demand = [i for i in _quota_items(api, region, "POSTPAID_BY_HOUR") if _gpus(i) is not None]
    spot: dict[tuple[str, str], float] = {}
    try:
        for item in _quota_items(api, region, "SPOTPAID"):
            value = _hourly(item)
            if value is not None and item.get("Status") == "SELL":
                spot[(str(item.get("Zone", "")), str(item.get("InstanceType", "")))] = value
    except ApiError as exc:
        if exc.auth:
            raise
        warnings.warn(f"{region}: no spot prices ({exc})")
    rows: list[FetchedRow] = []
    for item in on_demand:
        type_id = str(item.get("InstanceType", "")).strip()
        zone = str(item.get("Zone", "")).strip()
        if not type_id or item.get("Status") != "SELL":
            continue
        gpu, why = gpu_for("tencent", type_id)
        if gpu is None:
            warnings.skip(f"GPU not known to gpuwise ({why})")
            continue
        price = _hourly(item)
        spot_price = spot.get((zone, type_id))
        if price is None and spot_price is None:
            warnings.skip("no hourly price in the response")
            continue
        rows.append(
            FetchedRow(
                instance_type=type_id,
                gpu=gpu,
                gpu_count=_gpus(item) or 0,
                gpu_memory_gib=None,
                vcpus=number(item.get("Cpu")),
                memory_gib=number(item.get("Memory")),
                price_per_hour=price,
                spot_price_per_hour=spot_price,
                currency=currency,
                region=region,
                zone=zone or None,
            )
        )
    return rows


# ---------------------------------------------------------------- the SDK adapter


class SdkApi:
    """:class:`Api` over Tencent Cloud's Python SDK common package (``tencentcloud-sdk-python-common``, the
    ``gpuwise[tencent]`` extra): its generic ``CommonClient`` for CVM 2017-03-12."""

    def __init__(self, secret_id: str, secret_key: str) -> None:
        try:
            from tencentcloud.common import credential
        except ImportError as exc:
            raise ConfigError(
                _("The Tencent Cloud SDK is not installed"),
                fix=_("pip install 'gpuwise[tencent]' (it installs tencentcloud-sdk-python-common)"),
            ) from exc
        self._credential = credential.Credential(secret_id, secret_key)

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        from tencentcloud.common.common_client import CommonClient
        from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

        client = CommonClient("cvm", "2017-03-12", self._credential, region or _HOME_REGION)
        try:
            return answer(action, lambda: client.call_json(action, dict(params)))
        except TencentCloudSDKException as exc:
            raise ApiError(str(exc.get_code()), str(exc.get_message())) from exc


def answer(action: str, send: Callable[[], Any]) -> Mapping[str, Any]:
    """The JSON object ``send`` (the SDK's call) returns; ApiError (a warning for that region, never a
    traceback) for a damaged or cut-off page. The SDK parses the body itself and lets json's ValueError
    escape for a proxy's HTML error page or a body the connection dropped, and a KeyError or TypeError for
    JSON without the ``Response`` object it indexes; only a non-200 status becomes its own exception."""
    try:
        doc = send()
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ApiError(
            "", f"{action} answered a page that is not the API's JSON (damaged or cut off)"
        ) from exc
    if not isinstance(doc, dict):
        raise ApiError("", f"{action} answered something other than a JSON object")
    return doc


def sdk_api(env: Mapping[str, str] | None = None) -> SdkApi:
    """The real API with the credentials from the environment (bad input when they are missing)."""
    secret_id, secret_key = credentials(
        os.environ if env is None else env, ENV_NAMES, cloud=CLOUD, doc=CREDENTIALS_DOC
    )
    return SdkApi(secret_id, secret_key)
