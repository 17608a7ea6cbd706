"""RunPod: stop the pod (REST `POST /v1/pods/{podId}/stop`,
https://docs.runpod.io/api-reference/pods/POST/pods/podId/stop).

A stopped pod's GPU is not billed; its volume disk stays and is billed as storage, and the container disk is
reset (https://docs.runpod.io/runpodctl/reference/runpodctl-stop-pod). Inside a pod RunPod sets
`RUNPOD_POD_ID` and `RUNPOD_API_KEY`; elsewhere the key comes from ~/.runpod/config.toml (runpod's own CLI).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers.base import StopContext, StopStep, api_step, http_step_call, need_credential

API = "https://rest.runpod.io/v1"
ENV = ("RUNPOD_API_KEY",)
FILES = (".runpod/config.toml",)


def step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    pod = ident["instance_id"]
    url = f"{ctx.base_url('runpod', API)}/pods/{pod}/stop"

    def call() -> ActionResult:
        key = need_credential(ctx, "RunPod", ENV, FILES, ["api_key", "apikey"])
        headers = {"Authorization": f"Bearer {key.value}"}
        return http_step_call(ctx, "POST", url, headers=headers, secrets=[key.value])

    return api_step("runpod", f"RunPod: stop pod {pod}", call)
