"""Cloud instance identity from the metadata services (AWS IMDSv2, GCP, Azure IMDS, Alibaba Cloud), shared by
the idle stopper and `gpuwise run`'s preemption watchers.

Every base URL is injectable (`MetadataEndpoints`) so tests run a fake metadata server on 127.0.0.1 and never
reach the real link-local addresses; requests go through gpuwise.httpclient, never through a proxy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from gpuwise import httpclient

PROVIDERS = ("aws", "gcp", "azure", "alibaba")
AZURE_API_VERSION = "2021-02-01"


@dataclass(frozen=True)
class MetadataEndpoints:
    """Base URLs of the cloud metadata services (the documented link-local addresses by default)."""

    aws: str = "http://169.254.169.254"
    gcp: str = "http://metadata.google.internal"
    azure: str = "http://169.254.169.254"
    alibaba: str = "http://100.100.100.200"
    tencent: str = "http://metadata.tencentyun.com"
    huawei: str = "http://169.254.169.254"
    timeout_s: float = 2.0

    @classmethod
    def all_at(cls, base: str, timeout_s: float = 2.0) -> MetadataEndpoints:
        """Every provider at one base URL (a fake metadata server in tests, or a proxy)."""
        return cls(
            aws=base, gcp=base, azure=base, alibaba=base, tencent=base, huawei=base, timeout_s=timeout_s
        )


class MetadataError(Exception):
    """The metadata service did not answer as the provider documents. `status` is the HTTP status of an
    answer that was not 2xx (None when there was no answer)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# A metadata answer is a few bytes to a few KB; a larger one is not what the provider documents.
_METADATA_MAX_BYTES = 1_000_000


def _http(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    timeout_s: float,
    data: bytes | None = None,
) -> str:
    try:
        # No proxies: metadata services are link-local and must never be asked through a proxy.
        answer = httpclient.request(
            method,
            url,
            body=data,
            headers=headers,
            timeout_s=timeout_s,
            max_bytes=_METADATA_MAX_BYTES,
            use_proxy=False,
        )
    except httpclient.HttpError as exc:
        raise MetadataError(f"{method} {url}: {exc.reason}") from exc
    if not answer.ok:
        raise MetadataError(f"{method} {url}: HTTP {answer.status}", status=answer.status)
    return answer.body.decode("utf-8", errors="replace").strip()


def metadata_text_or_none(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    timeout_s: float,
    data: bytes | None = None,
) -> str | None:
    """Like a metadata GET, but HTTP 404 is None: the providers answer 404 for "no such notice" (AWS
    spot/instance-action and the rebalance recommendation). Used by `gpuwise run`'s preemption watchers."""
    try:
        return _http(url, method=method, headers=headers, timeout_s=timeout_s, data=data)
    except MetadataError as exc:
        if exc.status == 404:
            return None
        raise


def aws_identity(ep: MetadataEndpoints) -> dict[str, str]:
    """IMDSv2: a session token first, then instance-id and region."""
    token = _http(
        ep.aws + "/latest/api/token",
        method="PUT",
        headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"},
        timeout_s=ep.timeout_s,
        data=b"",
    )
    h = {"X-aws-ec2-metadata-token": token}
    instance = _http(ep.aws + "/latest/meta-data/instance-id", headers=h, timeout_s=ep.timeout_s)
    region = _http(ep.aws + "/latest/meta-data/placement/region", headers=h, timeout_s=ep.timeout_s)
    if not instance.startswith("i-") or not region:
        raise MetadataError(f"AWS metadata gave instance id {instance!r} and region {region!r}")
    return {"instance_id": instance, "region": region}


def gcp_identity(ep: MetadataEndpoints) -> dict[str, str]:
    h = {"Metadata-Flavor": "Google"}
    base = ep.gcp + "/computeMetadata/v1"
    name = _http(base + "/instance/name", headers=h, timeout_s=ep.timeout_s)
    zone = _http(base + "/instance/zone", headers=h, timeout_s=ep.timeout_s).rsplit("/", 1)[-1]
    project = _http(base + "/project/project-id", headers=h, timeout_s=ep.timeout_s)
    if not (name and zone and project):
        raise MetadataError("GCP metadata lacks the instance name, zone or project")
    return {"name": name, "zone": zone, "project": project}


def azure_identity(ep: MetadataEndpoints) -> dict[str, str]:
    text = _http(
        ep.azure + f"/metadata/instance?api-version={AZURE_API_VERSION}",
        headers={"Metadata": "true"},
        timeout_s=ep.timeout_s,
    )
    try:
        compute = json.loads(text)["compute"]
        out = {
            "name": str(compute["name"]),
            "resource_group": str(compute["resourceGroupName"]),
            "subscription": str(compute["subscriptionId"]),
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise MetadataError(f"Azure IMDS answer is not the documented JSON: {exc}") from exc
    return out


def alibaba_identity(ep: MetadataEndpoints) -> dict[str, str]:
    base = ep.alibaba + "/latest/meta-data"
    instance = _http(base + "/instance-id", timeout_s=ep.timeout_s)
    region = _http(base + "/region-id", timeout_s=ep.timeout_s)
    if not instance or not region:
        raise MetadataError("Alibaba Cloud metadata lacks the instance id or region")
    return {"instance_id": instance, "region": region}


def tencent_identity(ep: MetadataEndpoints) -> dict[str, str]:
    """Tencent Cloud CVM metadata (https://www.tencentcloud.com/document/product/213/4934): instance id and
    region, plain text."""
    base = ep.tencent + "/latest/meta-data"
    instance = _http(base + "/instance-id", timeout_s=ep.timeout_s)
    region = _http(base + "/placement/region", timeout_s=ep.timeout_s)
    if not instance.startswith("ins-") or not region:
        raise MetadataError(f"Tencent Cloud metadata gave instance id {instance!r} and region {region!r}")
    return {"instance_id": instance, "region": region}


def huawei_identity(ep: MetadataEndpoints) -> dict[str, str]:
    """Huawei Cloud ECS metadata, the OpenStack-style meta_data.json
    (https://support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0166.html). Other OpenStack clouds serve
    the same file, so only one with Huawei's own `metering.*` keys counts; the region is `region_id`, else the
    availability zone without its trailing letter (cn-north-4a -> cn-north-4)."""
    text = _http(ep.huawei + "/openstack/latest/meta_data.json", timeout_s=ep.timeout_s)
    try:
        doc = json.loads(text)
        meta = doc.get("meta") or {}
        uuid, project = str(doc["uuid"]), str(doc["project_id"])
        zone = str(doc.get("availability_zone") or "")
        region = str(doc.get("region_id") or zone.rstrip("abcdefghijklmnopqrstuvwxyz"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MetadataError(f"OpenStack metadata is not the documented JSON: {exc}") from exc
    if not any(str(k).startswith("metering.") for k in meta) or not (uuid and project and region):
        raise MetadataError("OpenStack metadata without Huawei Cloud's metering keys: not a Huawei ECS")
    return {"instance_id": uuid, "project_id": project, "region": region}


MORE_IDENTITY = {"tencent": tencent_identity, "huawei": huawei_identity}

IDENTITY = {"aws": aws_identity, "gcp": gcp_identity, "azure": azure_identity, "alibaba": alibaba_identity}


def detect_provider(ep: MetadataEndpoints) -> tuple[str, dict[str, str]] | None:
    """The first provider whose metadata service answers as documented, with the instance identity."""
    for provider in PROVIDERS:
        try:
            return provider, IDENTITY[provider](ep)
        except MetadataError:
            continue
    return None
