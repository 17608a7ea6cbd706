"""Which stop steps to try, in order: the instance's identity picks the provider's own stop call, and the
user's `fallback` list says what follows when it fails (default: `shutdown -h now` in auto mode, as before;
nothing after a provider the user named). `run_steps` tries them, each `attempts` times with a backoff, and
reports every failure to the daemon, which says it loudly (log, wall, webhook).

Identity, in order: the variables a platform sets in every machine (RunPod's `RUNPOD_POD_ID`, Vast.ai's
`VAST_CONTAINERLABEL`), then the metadata services (AWS, GCP, Azure, Alibaba Cloud, Tencent
Cloud, Huawei Cloud), then `[idle] instance_id` for a provider named in `[idle] action`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpuwise.idle.actions import ActionResult
from gpuwise.idle.providers import clis, huawei, hyperstack, lambdalabs, paperspace, runpod, tencent, vast
from gpuwise.idle.providers.base import StopContext, StopStep
from gpuwise.idle.providers.metadata import IDENTITY, MORE_IDENTITY, MetadataEndpoints, MetadataError
from gpuwise.locale import _

StepBuilder = Callable[[Mapping[str, str], StopContext], StopStep]


def _big(provider: str) -> StepBuilder:
    return lambda ident, ctx: clis.big_cloud_step(provider, ident, ctx)


STEPS: dict[str, StepBuilder] = {
    "runpod": runpod.step,
    "vast": vast.step,
    "lambda": lambdalabs.step,
    "paperspace": paperspace.step,
    "jarvislabs": clis.jarvislabs_step,
    "nebius": clis.nebius_step,
    "hyperstack": hyperstack.step,
    "tencent": tencent.step,
    "huawei": huawei.step,
    "aws": _big("aws"),
    "gcp": _big("gcp"),
    "azure": _big("azure"),
    "alibaba": _big("alibaba"),
}
PROVIDER_ACTIONS = tuple(STEPS)
ALIASES = {"aliyun": "alibaba"}  # the catalog's id for Alibaba Cloud
METADATA = {**IDENTITY, **MORE_IDENTITY}


def _env_identity(env: Mapping[str, str]) -> dict[str, str | None]:
    return {"runpod": env.get("RUNPOD_POD_ID", "").strip() or None, "vast": vast.instance_id_from_env(env)}


@dataclass(frozen=True)
class Identity:
    provider: str
    ids: dict[str, str]
    how: str  # "RUNPOD_POD_ID", "metadata service", "[idle] instance_id"


def identify(provider: str | None, ctx: StopContext, endpoints: MetadataEndpoints) -> Identity | None:
    """This machine's provider and ids (`provider` None: any provider; else only that one)."""
    if provider is not None and provider not in METADATA and ctx.instance_id:
        return Identity(provider, {"instance_id": ctx.instance_id}, "[idle] instance_id")
    for name, value in _env_identity(ctx.env).items():
        if value and provider in (None, name):
            return Identity(name, {"instance_id": value}, "environment variables")
    for name, lookup in METADATA.items():
        if provider not in (None, name):
            continue
        try:
            return Identity(name, lookup(endpoints), "metadata service")
        except MetadataError:
            continue
    return None


@dataclass
class StopPlan:
    steps: list[StopStep]
    note: str
    provider: str | None


def _failing(action: str, why: str) -> StopStep:
    description = f"{action} stop"
    return StopStep(action, description, lambda: ActionResult(False, description, why))


def _provider_step(provider: str, ctx: StopContext, endpoints: MetadataEndpoints) -> tuple[StopStep, str]:
    found = identify(provider, ctx, endpoints)
    if found is None:
        where = (
            _("its metadata service did not answer") if provider in METADATA else _("set [idle] instance_id")
        )
        why = _("cannot identify this {provider} instance: {where}").format(provider=provider, where=where)
        return _failing(provider, why), _("not identified")
    return STEPS[provider](found.ids, ctx), f"{provider} instance {found.ids} (from {found.how})"


def plan_steps(
    action: str,
    *,
    command: str | None,
    fallback: Sequence[str] | None,
    ctx: StopContext,
    endpoints: MetadataEndpoints,
) -> StopPlan:
    """The steps for `[idle] action` (auto, a provider, shutdown or command) followed by the fallbacks."""
    action = ALIASES.get(action, action)
    if action == "command":
        assert command is not None
        primary, note, provider = [clis.command_step(command, ctx)], "custom command", None
    elif action == "shutdown":
        primary, note, provider = [clis.shutdown_step(ctx, None)], "shutdown -h now", None
        primary[0].warning = ""  # chosen on purpose, not a fallback
    elif action == "auto":
        found = identify(None, ctx, endpoints)
        if found is None:
            primary, note, provider = (
                [],
                _("no provider identified (no platform variable, no metadata)"),
                None,
            )
        else:
            provider = found.provider
            primary = [STEPS[provider](found.ids, ctx)]
            note = f"{provider} instance {found.ids} (from {found.how})"
    else:
        step, note = _provider_step(action, ctx, endpoints)
        primary, provider = [step], action
    chain = list(fallback) if fallback is not None else (["shutdown"] if action == "auto" else [])
    return StopPlan(
        primary + [_fallback(a, command, ctx, endpoints, provider) for a in chain], note, provider
    )


def _fallback(
    action: str, command: str | None, ctx: StopContext, endpoints: MetadataEndpoints, provider: str | None
) -> StopStep:
    action = ALIASES.get(action, action)
    if action == "shutdown":
        return clis.shutdown_step(ctx, provider)
    if action == "command":
        if not command:
            return _failing("command", "fallback 'command' needs [idle] command")
        return clis.command_step(command, ctx)
    return _provider_step(action, ctx, endpoints)[0]


@dataclass
class StepFailure:
    step: StopStep
    attempt: int
    attempts: int
    result: ActionResult
    next_step: StopStep | None  # what comes next when this step has no tries left


@dataclass
class StopOutcome:
    done: StopStep | None  # the step that succeeded
    results: list[ActionResult] = field(default_factory=list)


def run_steps(
    steps: Sequence[StopStep],
    *,
    attempts: int,
    backoff_s: float,
    sleep: Callable[[float], None],
    on_start: Callable[[StopStep], None],
    on_failure: Callable[[StepFailure], None],
) -> StopOutcome:
    """Each step up to `attempts` times (waiting `backoff_s`, doubled each time, between tries), then the
    next one. `on_start` is told before a step's first try (to say its warning); `on_failure` after every
    failed try."""
    outcome = StopOutcome(None)
    for index, step in enumerate(steps):
        on_start(step)
        for attempt in range(1, attempts + 1):
            result = step.run()
            outcome.results.append(result)
            if result.ok:
                outcome.done = step
                return outcome
            last = attempt == attempts
            nxt = steps[index + 1] if last and index + 1 < len(steps) else None
            on_failure(StepFailure(step, attempt, attempts, result, nxt))
            if not last:
                sleep(backoff_s * 2 ** (attempt - 1))
    return outcome
