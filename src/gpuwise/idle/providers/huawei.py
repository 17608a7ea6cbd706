"""Huawei Cloud ECS: stop the server with the batch-stop call (`POST /v1/{project_id}/cloudservers/action`
with `os-stop`, https://support.huaweicloud.com/intl/en-us/api-ecs/ecs_02_0303.html), signed with AK/SK
(SDK-HMAC-SHA256, as in Huawei's API signing guide, "AK/SK-based authentication").

A stopped pay-per-use ECS is not billed for its vCPUs and memory, except flavors with local disks or
FPGAs; disks and EIPs stay billed (Huawei ECS billing docs). Identity (server id, project id, region) from the
ECS metadata service; credentials from `HUAWEICLOUD_SDK_AK`/`HUAWEICLOUD_SDK_SK`, the variables Huawei's
SDKs read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers.base import (
    StopContext,
    StopError,
    StopStep,
    api_step,
    find_credential,
    http_step_call,
)
from gpuwise.locale import _

API = "https://ecs.{region}.myhuaweicloud.com"


def sdk_authorization(
    ak: str, sk: str, *, method: str, url: str, headers: Mapping[str, str], body: bytes
) -> str:
    """The Authorization header for a request whose `headers` include Host and X-Sdk-Date."""
    parts = urlsplit(url)
    path = quote(parts.path or "/", safe="/-_.~")
    path += "" if path.endswith("/") else "/"  # the signer's canonical URI always ends with "/"
    lower = {k.lower(): v.strip() for k, v in headers.items()}
    signed = sorted(lower)
    canonical = "\n".join(
        [
            method,
            path,
            parts.query,
            "".join(f"{k}:{lower[k]}\n" for k in signed),
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    to_sign = "\n".join(
        ["SDK-HMAC-SHA256", lower["x-sdk-date"], hashlib.sha256(canonical.encode()).hexdigest()]
    )
    signature = hmac.new(sk.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    return f"SDK-HMAC-SHA256 Access={ak}, SignedHeaders={';'.join(signed)}, Signature={signature}"


def step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    server, project, region = ident["instance_id"], ident["project_id"], ident["region"]
    url = f"{ctx.base_url('huawei', API.format(region=region))}/v1/{project}/cloudservers/action"
    body = json.dumps({"os-stop": {"type": "SOFT", "servers": [{"id": server}]}}).encode()

    def call() -> ActionResult:
        ak = find_credential(ctx, ["HUAWEICLOUD_SDK_AK"])
        sk = find_credential(ctx, ["HUAWEICLOUD_SDK_SK"])
        if ak is None or sk is None:
            raise StopError(_("no Huawei Cloud credentials: set HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK"))
        headers = {
            "Content-Type": "application/json",
            "Host": urlsplit(url).netloc,
            "X-Sdk-Date": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(ctx.clock())),
        }
        headers["Authorization"] = sdk_authorization(
            ak.value, sk.value, method="POST", url=url, headers=headers, body=body
        )
        return http_step_call(ctx, "POST", url, headers=headers, body=body, secrets=[ak.value, sk.value])

    return api_step("huawei", f"Huawei Cloud: stop ECS {server} ({region})", call)
