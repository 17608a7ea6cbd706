"""Vast.ai: stop the instance (`PUT /api/v0/instances/{id}/` with `{"state": "stopped"}`, the call
`vastai stop instance` makes: https://docs.vast.ai/cli/reference/stop-instance).

A stopped instance keeps its data and is billed for storage only; starting it again depends on the host's GPUs
being free (same page). Inside an instance Vast sets `CONTAINER_ID` (and `VAST_CONTAINERLABEL` = "C.<id>");
the key comes from `VAST_API_KEY`, `CONTAINER_API_KEY` (the instance's own key) or
~/.config/vastai/vast_api_key (vastai's own CLI).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers.base import StopContext, StopStep, api_step, http_step_call, need_credential

API = "https://console.vast.ai/api/v0"
ENV = ("VAST_API_KEY", "CONTAINER_API_KEY")
FILES = (".config/vastai/vast_api_key", ".vast_api_key")


def instance_id_from_env(env: Mapping[str, str]) -> str | None:
    """The number in VAST_CONTAINERLABEL ("C.12345"), else CONTAINER_ID — but only beside another `VAST_`
    variable (`CONTAINER_ID` alone is too common a name to stop a machine on)."""
    label = env.get("VAST_CONTAINERLABEL", "").strip()
    if label.startswith("C.") and label[2:].isdigit():
        return label[2:]
    cid = env.get("CONTAINER_ID", "").strip()
    if cid.isdigit() and any(name.startswith("VAST_") for name in env):
        return cid
    return None


def step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    instance = ident["instance_id"]
    url = f"{ctx.base_url('vast', API)}/instances/{instance}/"

    def call() -> ActionResult:
        key = need_credential(ctx, "Vast.ai", ENV, FILES, ["api_key"])
        headers = {"Authorization": f"Bearer {key.value}", "Content-Type": "application/json"}
        body = json.dumps({"state": "stopped"}).encode()
        return http_step_call(ctx, "PUT", url, headers=headers, body=body, secrets=[key.value])

    return api_step("vast", f"Vast.ai: stop instance {instance}", call)
