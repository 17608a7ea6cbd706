"""Paperspace (DigitalOcean): stop the machine (`PATCH /v1/machines/{id}/stop`,
https://docs.digitalocean.com/reference/paperspace/api-reference/machine).

A stopped machine is not billed for compute; its disk stays and is billed as storage. The machine id is not
published to the machine: set `[idle] instance_id`. The key comes from `PAPERSPACE_API_KEY`.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers.base import StopContext, StopStep, api_step, http_step_call, need_credential

API = "https://api.paperspace.com/v1"
ENV = ("PAPERSPACE_API_KEY",)


def step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    machine = ident["instance_id"]
    url = f"{ctx.base_url('paperspace', API)}/machines/{machine}/stop"

    def call() -> ActionResult:
        key = need_credential(ctx, "Paperspace", ENV)
        headers = {"Authorization": f"Bearer {key.value}"}
        return http_step_call(ctx, "PATCH", url, headers=headers, secrets=[key.value])

    return api_step("paperspace", f"Paperspace: stop machine {machine}", call)
