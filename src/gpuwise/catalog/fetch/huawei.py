"""Huawei Cloud: GPU flavors per region (ECS ``ListFlavors``) priced by the BSS on-demand price inquiry
(``ListOnDemandResourceRatings``). The response shapes are recorded in tests/fixtures/cn_clouds/huawei with
the reference of each.

- IAM ``KeystoneListAuthProjects``: the account's projects; a project named after a region (``cn-north-4``)
  is a region the account can use, and its id is what the price inquiry needs.
- per region ``ListFlavors``: flavors whose ``os_extra_specs`` say ``ecs:performancetype`` ``gpu``, with
  ``info:gpu:name`` (``1 * NVIDIA T4 / 1 * 16G``: count, model, memory per GPU), the zones they are sold in
  (``cond:operation:az``: ``cn-north-4a(normal),cn-north-4b(sellout)``) and the region-wide status.
- per region ``ListOnDemandResourceRatings``: each flavor's hourly Linux price (``amount``, the account's
  discounts applied; ``currency`` empty means CNY, as the reference says), up to 100 flavors per inquiry.

The GPU is the bundled family table's (``pi2`` = T4), else the model ``info:gpu:name`` names; neither: left
out and counted. Spot prices are not fetched from Huawei Cloud (the inquiry prices pay-per-use only).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
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
    gpu_from_name,
    items,
    number,
    with_memory_variant,
)
from gpuwise.errors import ConfigError
from gpuwise.locale import _

CLOUD = "Huawei Cloud"
ENV_NAMES = ("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK")
CREDENTIALS_DOC = "https://support.huaweicloud.com/intl/en-us/devg-apisign/api-sign-provide-aksk.html"
_SOLD = frozenset({"normal", "promotion"})  # cond:operation status values under which a flavor is on sale
_BATCH = 100  # product_infos per inquiry (the reference's limit)
_GPU_NAME = re.compile(r"(\d+)\s*\*\s*([^/]+?)\s*(?:/\s*\d+\s*\*\s*(\d+(?:\.\d+)?)\s*G)?\s*$")
# IAM and APIG error codes of a refused key or signature
_AUTH_CODES = ("APIGW.0301", "APIGW.0101", "IAM.0001", "IAM.0011", "Ecs.0302")


def fetch(api: Api, regions: list[str], *, today: date) -> FetchResult:
    """Every GPU flavor on sale in ``regions`` (all the account's regions when empty)."""
    warnings = FetchWarnings()
    try:
        projects = {
            str(p.get("name", "")): str(p.get("id", ""))
            for p in items(_call(api, "KeystoneListAuthProjects", None, {}, "projects"), "projects")
            if p.get("enabled", True) is not False and "_" not in str(p.get("name", "_"))
        }
        wanted = check_regions(regions, projects, cloud=CLOUD)
    except ApiError as exc:
        raise api_failure(CLOUD, exc) from exc

    def one(region: str) -> list[FetchedRow]:
        return _region_rows(api, region, projects[region], warnings)

    return for_each_region(wanted, one, warnings, cloud=CLOUD, provider="huawei", today=today)


def _call(
    api: Api, action: str, region: str | None, params: Mapping[str, Any], listed: str
) -> Mapping[str, Any]:
    """The answer of a call, which must carry its ``listed`` list (empty is an answer). The SDK raises only
    for an error status: a damaged or cut-off page (a proxy's HTML, a dropped connection) becomes a model
    whose every field is None, which would read as a region with nothing on sale; it is an ApiError (a
    warning for that region) instead."""
    try:
        doc = api.call(action, region, params)
    except ApiError as exc:
        exc.auth = exc.auth or exc.code.startswith(_AUTH_CODES)
        raise
    if not isinstance(doc.get(listed), list):
        raise ApiError("", f"{action} answered without its {listed} list (a damaged or cut-off page)")
    return doc


def _zones(specs: Mapping[str, Any]) -> list[str | None] | None:
    """Zones the flavor is sold in; [None] when the flavor names no zones; None when it is not on sale."""
    if str(specs.get("cond:operation:status", "normal")) not in _SOLD:
        return None
    raw = str(specs.get("cond:operation:az", "")).strip()
    if not raw:
        return [None]
    zones: list[str | None] = []
    for part in raw.split(","):
        m = re.match(r"\s*([^()\s]+)\s*\(\s*([a-z]+)\s*\)", part)
        if m and m.group(2) in _SOLD:
            zones.append(m.group(1))
    return zones or None


def _gpu_flavor(flavor: Mapping[str, Any], warnings: FetchWarnings) -> FetchedRow | None:
    specs = flavor.get("os_extra_specs")
    if not isinstance(specs, Mapping) or specs.get("ecs:performancetype") != "gpu":
        return None
    name = str(flavor.get("name") or flavor.get("id") or "").strip()
    described = _GPU_NAME.match(str(specs.get("info:gpu:name", "")).strip())
    count = float(described.group(1)) if described else None
    per_gpu = float(described.group(3)) if described and described.group(3) else None
    gpu, why = gpu_for("huawei", name)
    if gpu is None and described:
        gpu = gpu_from_name(described.group(2))
    if gpu is None or not count:
        warnings.skip(
            f"GPU not known to gpuwise ({why}; info:gpu:name {specs.get('info:gpu:name', 'absent')!r})"
        )
        return None
    ram_mib = number(flavor.get("ram"))
    return FetchedRow(
        instance_type=name,
        gpu=with_memory_variant(gpu, per_gpu),
        gpu_count=count,
        gpu_memory_gib=per_gpu,
        vcpus=number(flavor.get("vcpus")),
        memory_gib=None if ram_mib is None else ram_mib / 1024,
        price_per_hour=None,
        spot_price_per_hour=None,
        currency="",
        region="",
        zone=None,
    )


def _region_rows(api: Api, region: str, project_id: str, warnings: FetchWarnings) -> list[FetchedRow]:
    flavors: list[tuple[FetchedRow, list[str | None]]] = []
    for flavor in items(_call(api, "ListFlavors", region, {}, "flavors"), "flavors"):
        specs = flavor.get("os_extra_specs")
        row = _gpu_flavor(flavor, warnings)
        zones = _zones(specs) if isinstance(specs, Mapping) else None
        if row is not None and zones:
            flavors.append((row, zones))
    prices, currency = _prices(api, region, project_id, [row.instance_type for row, _ in flavors])
    rows: list[FetchedRow] = []
    for row, zones in flavors:
        price = prices.get(row.instance_type)
        if price is None:
            warnings.skip("no on-demand price in the inquiry's answer")
            continue
        rows.extend(
            replace(row, price_per_hour=price, currency=currency, region=region, zone=z) for z in zones
        )
    return rows


def _prices(api: Api, region: str, project_id: str, names: list[str]) -> tuple[dict[str, float], str]:
    """Flavor -> hourly Linux pay-per-use price, and the currency (empty in the answer means CNY)."""
    prices: dict[str, float] = {}
    currency = "CNY"
    for start in range(0, len(names), _BATCH):
        batch = names[start : start + _BATCH]
        doc = _call(
            api,
            "ListOnDemandResourceRatings",
            region,
            {
                "project_id": project_id,
                "inquiry_precision": 1,
                "product_infos": [
                    {
                        "id": str(start + i),
                        "cloud_service_type": "hws.service.type.ec2",
                        "resource_type": "hws.resource.type.vm",
                        "resource_spec": f"{name}.linux",
                        "region": region,
                        "usage_factor": "Duration",
                        "usage_value": 1,
                        "usage_measure_id": 4,  # hours, in BSS's measure units
                        "subscription_num": 1,
                    }
                    for i, name in enumerate(batch)
                ],
            },
            "product_rating_results",
        )
        currency = str(doc.get("currency") or "CNY").upper()
        for result in items(doc, "product_rating_results"):
            said = str(result.get("id", ""))
            index = int(said) - start if said.isdecimal() else -1  # isdigit() lets '²' through to int()
            amount = number(result.get("amount"))
            if 0 <= index < len(batch) and amount is not None and amount > 0:
                prices[batch[index]] = amount
    return prices, currency


# ---------------------------------------------------------------- the SDK adapter


def _json_keys(value: Any) -> Any:
    """An SDK model as the API's JSON: the SDK's to_dict() uses Python attribute names, the API (and our
    parser) the JSON keys its ``attribute_map`` names (``ecs:performancetype``)."""
    if hasattr(value, "attribute_map") and hasattr(value, "openapi_types"):
        return {value.attribute_map[a]: _json_keys(getattr(value, a)) for a in value.openapi_types}
    if isinstance(value, list):
        return [_json_keys(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_keys(v) for k, v in value.items()}
    return value


class SdkApi:
    """:class:`Api` over Huawei Cloud's Python SDK v3 (the ``gpuwise[huawei]`` extra: its core, IAM, ECS and
    BSS packages)."""

    def __init__(self, ak: str, sk: str) -> None:
        try:
            import huaweicloudsdkcore  # noqa: F401
        except ImportError as exc:
            raise ConfigError(
                _("The Huawei Cloud SDK is not installed"),
                fix=_("pip install 'gpuwise[huawei]' (huaweicloudsdkcore, -iam, -ecs and -bss)"),
            ) from exc
        self._ak, self._sk = ak, sk
        self._projects: dict[str, str] = {}

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        from huaweicloudsdkcore.exceptions.exceptions import SdkException

        try:
            return self._call(action, region, params)
        except SdkException as exc:
            code = str(getattr(exc, "error_code", "") or "")
            raise ApiError(code, str(getattr(exc, "error_msg", exc))) from exc

    def _call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        from huaweicloudsdkcore.auth.credentials import BasicCredentials, GlobalCredentials

        if action == "KeystoneListAuthProjects":
            from huaweicloudsdkiam.v3 import IamClient, KeystoneListAuthProjectsRequest
            from huaweicloudsdkiam.v3.region.iam_region import IamRegion

            iam = IamClient.new_builder().with_credentials(GlobalCredentials(self._ak, self._sk))
            client = iam.with_region(IamRegion.value_of("cn-north-4")).build()
            doc = _json_keys(client.keystone_list_auth_projects(KeystoneListAuthProjectsRequest()))
            self._projects = {str(p.get("name")): str(p.get("id")) for p in items(doc, "projects")}
            return dict(doc)
        if action == "ListFlavors" and region:
            from huaweicloudsdkecs.v2 import EcsClient, ListFlavorsRequest
            from huaweicloudsdkecs.v2.region.ecs_region import EcsRegion

            creds = BasicCredentials(self._ak, self._sk, self._projects.get(region))
            ecs = (
                EcsClient.new_builder()
                .with_credentials(creds)
                .with_region(EcsRegion.value_of(region))
                .build()
            )
            return dict(_json_keys(ecs.list_flavors(ListFlavorsRequest())))
        if action == "ListOnDemandResourceRatings":
            from huaweicloudsdkbss.v2 import (
                BssClient,
                DemandProductInfo,
                ListOnDemandResourceRatingsRequest,
                RateOnDemandReq,
            )
            from huaweicloudsdkbss.v2.region.bss_region import BssRegion

            bss = BssClient.new_builder().with_credentials(GlobalCredentials(self._ak, self._sk))
            client = bss.with_region(BssRegion.value_of("cn-north-1")).build()
            body = RateOnDemandReq(
                project_id=params["project_id"],
                inquiry_precision=params.get("inquiry_precision"),
                product_infos=[DemandProductInfo(**p) for p in params["product_infos"]],
            )
            answer = client.list_on_demand_resource_ratings(ListOnDemandResourceRatingsRequest(body=body))
            return dict(_json_keys(answer))
        raise ApiError("", f"{action} is not a call this adapter makes")


def sdk_api(env: Mapping[str, str] | None = None) -> SdkApi:
    """The real API with the credentials from the environment (bad input when they are missing)."""
    ak, sk = credentials(os.environ if env is None else env, ENV_NAMES, cloud=CLOUD, doc=CREDENTIALS_DOC)
    return SdkApi(ak, sk)
