"""The daemon's stop, from plan to notices: build the ordered steps (`gpuwise.idle.providers.plan`), run them
with retries, and say every failure and every risky fallback loudly — in the log, on logged-in terminals
(wall) and through the webhook — so a stop that did not end the billing is never silent.

Split from the daemon so the policy loop and the stop machinery change separately. Standard library only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuwise.idle.message import Msg, text
from gpuwise.idle.providers.base import StopContext, StopStep
from gpuwise.idle.providers.plan import STEPS, StepFailure, StopPlan, plan_steps, run_steps
from gpuwise.locale import N_, _

if TYPE_CHECKING:
    from gpuwise.idle.daemon import IdleDaemon
    from gpuwise.idle.policy import Decision

log = logging.getLogger("gpuwise.idle")


@dataclass(frozen=True)
class StopNotices:
    """The daemon's three ways to speak: wall(1), the webhook (event, decision, extra fields) and the
    monitor history's event log."""

    wall: Callable[[str], None]
    notify: Callable[..., None]
    event: Callable[[Decision, str], None]


def stop_context(daemon: IdleDaemon) -> StopContext:
    s = daemon.settings
    return StopContext(
        env=daemon.runner.env,
        runner=daemon.runner,
        api_urls=dict.fromkeys(STEPS, s.api_url) if s.api_url else {},
        instance_id=s.instance_id,
        allow_terminate=s.allow_terminate,
        sleep=daemon.sleep,
        clock=daemon.clock,
    )


def make_plan(daemon: IdleDaemon) -> StopPlan:
    s = daemon.settings
    return plan_steps(
        s.action,
        command=s.command,
        fallback=s.fallback,
        ctx=stop_context(daemon),
        endpoints=daemon.endpoints,
    )


@dataclass(frozen=True)
class StopReport:
    """What the stop did, for the daemon's state file: `ok` None when nothing was run (a dry run)."""

    ok: bool | None
    description: str
    provider: str | None


def stop_machine(
    daemon: IdleDaemon, d: Decision, say: StopNotices, *, retry_s: float, still_up: bool
) -> StopReport:
    """Stop now (or, in a dry run, say how). `still_up`: the last stop call succeeded, yet here we are."""
    plan = make_plan(daemon)
    log.info("stop plan: %s", plan.note)
    shown = " || ".join(step.description for step in plan.steps)
    if daemon.dry_run:
        log.warning("dry run: would stop now with: %s — %s", shown or "nothing", d.reason)
        say.notify(
            "stopping",
            d,
            action=shown,
            text=_("[dry run] would stop {host} now: {reason}").format(
                host=daemon.host, reason=text(d.reason)
            ),
        )
        return StopReport(None, shown, plan.provider)
    if not plan.steps:
        msg = Msg(
            N_(
                "gpuwise idle: cannot stop {host}: {note}, and no fallback is configured. "
                'It is still billing. Set [idle] action, or fallback = ["shutdown"]'
            ),
            host=daemon.host,
            note=plan.note,
        )
        log.error("%s", msg)  # logs in English, people in their language
        say.wall(msg)
        say.notify("stop_failed", d, detail=plan.note, text=msg.text())
        return StopReport(False, "no stop step", None)
    if still_up:
        log.warning("the machine is still up %g min after a successful stop call: trying again", retry_s / 60)
    say.wall(Msg(N_("gpuwise idle: stopping this machine now. {reason}"), reason=d.reason))
    say.notify(
        "stopping",
        d,
        action=plan.steps[0].description,
        text=_("stopping {host} now: {reason}").format(host=daemon.host, reason=text(d.reason)),
    )
    s = daemon.settings
    outcome = run_steps(
        plan.steps,
        attempts=s.stop_attempts,
        backoff_s=s.stop_backoff_s,
        sleep=daemon.sleep,
        on_start=lambda step: _say_warning(step, d, say, daemon.host),
        on_failure=lambda failure: _say_failure(failure, d, say, daemon.host, retry_s),
    )
    if outcome.done is None:
        return StopReport(False, shown, plan.provider)
    step = outcome.done
    log.warning("stopped with %s: %s", step.description, d.reason)
    stopped = _("stopped {host} ({step})").format(host=daemon.host, step=step.description)
    say.notify("stopped", d, action=step.description, text=stopped)
    say.event(d, "stopped")
    return StopReport(True, step.description, plan.provider)


def _say_warning(step: StopStep, d: Decision, say: StopNotices, host: str) -> None:
    if not step.warning:
        return
    msg = Msg(N_("gpuwise idle WARNING: {warning}"), warning=step.warning)
    log.warning("%s", msg)
    say.wall(msg)
    say.notify("stop_warning", d, action=step.description, warning=step.warning, text=f"{host}: {msg.text()}")


def _say_failure(f: StepFailure, d: Decision, say: StopNotices, host: str, retry_s: float) -> None:
    detail = f.result.detail[-500:]
    if f.attempt < f.attempts:
        then = Msg(N_("trying again ({n} of {attempts})"), n=f.attempt + 1, attempts=f.attempts)
    elif f.next_step is not None:
        then = Msg(N_("falling back to: {step}"), step=f.next_step.description)
    else:
        then = Msg(N_("every stop call failed; trying again in {minutes:g} min"), minutes=retry_s / 60)
    msg = Msg(
        N_(
            "gpuwise idle: the stop call FAILED ({step}: {detail}). This machine may still be billing. "
            "Now {then}"
        ),
        step=f.step.description,
        detail=detail,
        then=then,
    )
    log.error("%s", msg)
    say.wall(msg)
    extra: dict[str, Any] = {"action": f.step.description, "attempt": f.attempt, "attempts": f.attempts}
    if f.next_step is not None:
        extra["next"] = f.next_step.description
    say.notify("stop_failed", d, detail=detail, text=f"{host}: {msg.text()}", **extra)
