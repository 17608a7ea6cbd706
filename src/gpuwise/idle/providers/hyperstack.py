"""Hyperstack: hibernate the VM (`GET /v1/core/virtual-machines/{id}/hibernate`,
https://docs.hyperstack.cloud/docs/api-reference/virtual-machine). Not "stop": a SHUTOFF VM is billed in
full, a HIBERNATED one only for its saved root disk and public IP
(https://infrahub-doc.nexgencloud.com/docs/billing/states-and-billing).

The VM id is not published to the machine: set `[idle] instance_id`. The key comes from `HYPERSTACK_API_KEY`
and travels in the `api_key` header, as the API documents.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers.base import StopContext, StopStep, api_step, http_step_call, need_credential

API = "https://infrahub-api.nexgencloud.com/v1"
ENV = ("HYPERSTACK_API_KEY",)


def step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    vm = ident["instance_id"]
    url = f"{ctx.base_url('hyperstack', API)}/core/virtual-machines/{vm}/hibernate"

    def call() -> ActionResult:
        key = need_credential(ctx, "Hyperstack", ENV)
        return http_step_call(ctx, "GET", url, headers={"api_key": key.value}, secrets=[key.value])

    return api_step("hyperstack", f"Hyperstack: hibernate VM {vm}", call)
