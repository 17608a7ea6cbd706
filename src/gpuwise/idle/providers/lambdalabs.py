"""Lambda Cloud: there is no stop, only terminate (`POST /api/v1/instance-operations/terminate`, in the
Cloud API browser linked from https://docs.lambda.ai/public-cloud/on-demand/creating-managing-instances/).
Terminating ends the billing and destroys the instance and its local disk; only a persistent filesystem
attached to it survives. So this action runs only with `[idle] allow_terminate = true`, and says so loudly
before every call.

The instance id is not published to the machine: set `[idle] instance_id` (the id `lambda instances` or the
console shows). The key comes from `LAMBDA_API_KEY` or ~/.lambda_cloud/lambda_keys (`api_key = …`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers.base import (
    StopContext,
    StopError,
    StopStep,
    api_step,
    http_step_call,
    need_credential,
)
from gpuwise.locale import N_, _

API = "https://cloud.lambdalabs.com/api/v1"
ENV = ("LAMBDA_API_KEY",)
FILES = (".lambda_cloud/lambda_keys",)
WARNING = N_(
    "Lambda has no stop: gpuwise idle TERMINATES instance {id}. Its local disk is deleted for good; only a "
    "persistent filesystem attached to it survives"
)


def step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    instance = ident["instance_id"]
    url = f"{ctx.base_url('lambda', API)}/instance-operations/terminate"

    def call() -> ActionResult:
        if not ctx.allow_terminate:
            raise StopError(_("Lambda can only terminate: set allow_terminate = true in [idle] to allow it"))
        key = need_credential(ctx, "Lambda", ENV, FILES, ["api_key"])
        headers = {"Authorization": f"Bearer {key.value}", "Content-Type": "application/json"}
        body = json.dumps({"instance_ids": [instance]}).encode()
        return http_step_call(ctx, "POST", url, headers=headers, body=body, secrets=[key.value])

    return api_step(
        "lambda", f"Lambda: terminate instance {instance}", call, warning=_(WARNING).format(id=instance)
    )
