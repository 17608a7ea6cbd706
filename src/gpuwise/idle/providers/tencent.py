"""Tencent Cloud CVM: `StopInstances` with `StoppedMode = STOP_CHARGING`
(https://www.tencentcloud.com/document/api/213/33235), signed with TC3-HMAC-SHA256
(https://www.tencentcloud.com/document/product/267/37447).

STOP_CHARGING ends the charge for CPU, memory and GPU of a pay-as-you-go instance that supports it; its disks
and a public IP stay billed. The default, KEEP_CHARGING, and a shutdown from inside the guest keep billing.
The API answers HTTP 200 even for an error, with `Response.Error`: that is a failed stop here.

Identity from the CVM metadata service (`gpuwise.idle.providers.metadata`); credentials from
`TENCENTCLOUD_SECRET_ID`/`TENCENTCLOUD_SECRET_KEY` (and `TENCENTCLOUD_SESSION_TOKEN`), else
~/.tencentcloud/credentials (`secret_id`, `secret_key`), the places Tencent's SDKs read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers.base import (
    StopContext,
    StopError,
    StopStep,
    api_step,
    find_credential,
    http_step_call,
    mask,
)
from gpuwise.locale import _

API = "https://cvm.tencentcloudapi.com"
SERVICE = "cvm"
VERSION = "2017-03-12"
FILES = (".tencentcloud/credentials",)
CONTENT_TYPE = "application/json; charset=utf-8"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def tc3_authorization(secret_id: str, secret_key: str, host: str, payload: bytes, timestamp: int) -> str:
    """The Authorization header of a POST of JSON `payload` to `host` at `timestamp` (TC3-HMAC-SHA256)."""
    date = time.strftime("%Y-%m-%d", time.gmtime(timestamp))
    canonical = "\n".join(
        [
            "POST",
            "/",
            "",
            f"content-type:{CONTENT_TYPE}\nhost:{host}\n",
            "content-type;host",
            _sha256(payload),
        ]
    )
    scope = f"{date}/{SERVICE}/tc3_request"
    to_sign = "\n".join(["TC3-HMAC-SHA256", str(timestamp), scope, _sha256(canonical.encode("utf-8"))])
    key = _hmac(_hmac(_hmac(("TC3" + secret_key).encode("utf-8"), date), SERVICE), "tc3_request")
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return (
        f"TC3-HMAC-SHA256 Credential={secret_id}/{scope}, SignedHeaders=content-type;host, "
        f"Signature={signature}"
    )


def _credentials(ctx: StopContext) -> tuple[str, str]:
    sid = find_credential(ctx, ["TENCENTCLOUD_SECRET_ID"], FILES, ["secret_id"])
    skey = find_credential(ctx, ["TENCENTCLOUD_SECRET_KEY"], FILES, ["secret_key"])
    if sid is None or skey is None:
        raise StopError(
            _(
                "no Tencent Cloud credentials: set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY, "
                "or secret_id and secret_key in ~/.tencentcloud/credentials"
            )
        )
    return sid.value, skey.value


def step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    instance, region = ident["instance_id"], ident["region"]
    url = ctx.base_url("tencent", API) + "/"
    payload = json.dumps(
        {"InstanceIds": [instance], "StopType": "SOFT_FIRST", "StoppedMode": "STOP_CHARGING"}
    ).encode("utf-8")

    def call() -> ActionResult:
        sid, skey = _credentials(ctx)
        host = urlsplit(url).netloc
        ts = int(ctx.clock())
        headers = {
            "Authorization": tc3_authorization(sid, skey, host, payload, ts),
            "Content-Type": CONTENT_TYPE,
            "Host": host,
            "X-TC-Action": "StopInstances",
            "X-TC-Version": VERSION,
            "X-TC-Timestamp": str(ts),
            "X-TC-Region": region,
        }
        token = ctx.env.get("TENCENTCLOUD_SESSION_TOKEN", "")
        if token:
            headers["X-TC-Token"] = token
        result = http_step_call(ctx, "POST", url, headers=headers, body=payload, secrets=[sid, skey, token])
        if result.ok:
            error = _api_error(result.detail)
            if error:
                return ActionResult(False, result.description, mask(error, [sid, skey, token]))
        return result

    return api_step("tencent", f"Tencent Cloud: StopInstances {instance} (STOP_CHARGING, {region})", call)


def _api_error(answer: str) -> str | None:
    """`Response.Error` of a 200 answer as "Code: Message", or None; an answer that is not the documented
    JSON is an error too (the stop cannot be confirmed)."""
    try:
        doc = json.loads(answer)
        error = doc["Response"].get("Error")
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"answer is not the documented JSON: {answer[:200]}"
    if error:
        return f"{error.get('Code', '?')}: {error.get('Message', '')}"
    return None
