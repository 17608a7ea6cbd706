"""`gpuwise idle providers --this-machine`: which provider this machine is, the stop steps the daemon would
try, and whether the credentials they need are there — without calling any stop. Credentials are reported by
where they were found (a variable's or a file's name), never by value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gpuwise.idle.providers import hyperstack, lambdalabs, paperspace, runpod, tencent, vast
from gpuwise.idle.providers.base import StopContext, find_credential
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.providers.plan import ALIASES, identify, plan_steps
from gpuwise.locale import _

# provider -> (environment variables, files under the home folder, keys in those files)
CREDENTIALS: dict[str, tuple[Sequence[str], Sequence[str], Sequence[str]]] = {
    "runpod": (runpod.ENV, runpod.FILES, ("api_key", "apikey")),
    "vast": (vast.ENV, vast.FILES, ("api_key",)),
    "lambda": (lambdalabs.ENV, lambdalabs.FILES, ("api_key",)),
    "paperspace": (paperspace.ENV, (), ()),
    "hyperstack": (hyperstack.ENV, (), ()),
    "tencent": (("TENCENTCLOUD_SECRET_ID",), tencent.FILES, ("secret_id",)),
    "huawei": (("HUAWEICLOUD_SDK_AK",), (), ()),
}
CLIS = {
    "jarvislabs": "jl",
    "nebius": "nebius",
    "aws": "aws",
    "gcp": "gcloud",
    "azure": "az",
    "alibaba": "aliyun",
}


@dataclass(frozen=True)
class MachineCheck:
    provider: str | None
    found_by: str | None
    ids: dict[str, str]
    steps: list[str]  # what the daemon would try, in order
    credentials: str | None  # where the provider's credentials were found, or what is missing
    ready: bool  # the first step has what it needs

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def credentials_for(provider: str, ctx: StopContext) -> tuple[bool, str]:
    """(found, where-or-what-is-missing) for `provider`'s stop call."""
    if provider in CLIS:
        program = CLIS[provider]
        path = ctx.runner.which(program)
        if path:
            return True, _("{program} CLI at {path}").format(program=program, path=path)
        return False, _("{program} CLI not found on PATH").format(program=program)
    env, files, keys = CREDENTIALS[provider]
    found = find_credential(ctx, env, files, keys)
    if found is None:
        where = _(" or ").join([*env, *("~/" + f for f in files)])
        return False, _("missing: set {where}").format(where=where)
    return True, _("found in {source}").format(source=found.source)


def check_machine(
    action: str,
    *,
    command: str | None,
    fallback: Sequence[str] | None,
    ctx: StopContext,
    endpoints: MetadataEndpoints,
) -> MachineCheck:
    action = ALIASES.get(action, action)
    plan = plan_steps(action, command=command, fallback=fallback, ctx=ctx, endpoints=endpoints)
    steps = [s.description for s in plan.steps]
    if action in ("command", "shutdown"):
        return MachineCheck(None, None, {}, steps, None, bool(steps))
    found = identify(None if action == "auto" else action, ctx, endpoints)
    if found is None:
        return MachineCheck(None, None, {}, steps, None, False)
    ok, where = credentials_for(found.provider, ctx)
    if found.provider == "lambda" and not ctx.allow_terminate:
        ok, where = False, where + _("; allow_terminate is not set")
    return MachineCheck(found.provider, found.how, found.ids, steps, where, ok)
