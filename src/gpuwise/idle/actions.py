"""Stop actions and notices (the edge): the big clouds' CLI stop calls, `shutdown -h now`, a custom command,
the pre-stop hook, wall(1) messages and webhooks.

Instance identity from the metadata services lives in `gpuwise.idle.providers.metadata` (shared with
`gpuwise run`'s preemption watchers and `gpuwise bench`'s machine section); the stop call of every
provider, marketplaces included, and the order they are tried in live in `gpuwise.idle.providers`.
Provider CLIs are looked up on the PATH given (tests put recording stubs first). Tokens are never logged: a
webhook URL is shown as scheme://host only. Standard library only.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuwise import httpclient
from gpuwise.locale import _
from gpuwise.webhook import chat_fields, post_json, redact_url

__all__ = [
    "SHUTDOWN_ARGV",
    "ActionResult",
    "Runner",
    "notice_text",
    "post_webhook",
    "stop_argv",
    "wall",
]


def stop_argv(provider: str, ident: Mapping[str, str]) -> list[str]:
    """The provider CLI's own stop call. Stop/deallocate, never terminate: disks survive."""
    if provider == "aws":
        return [
            "aws",
            "ec2",
            "stop-instances",
            "--instance-ids",
            ident["instance_id"],
            "--region",
            ident["region"],
        ]
    if provider == "gcp":
        return [
            "gcloud", "compute", "instances", "stop", ident["name"],
            "--zone", ident["zone"], "--project", ident["project"], "--quiet",
        ]  # fmt: skip
    if provider == "azure":
        # deallocate, not stop: a merely stopped Azure VM is still billed for its compute
        return [
            "az", "vm", "deallocate", "--name", ident["name"],
            "--resource-group", ident["resource_group"], "--subscription", ident["subscription"], "--no-wait",
        ]  # fmt: skip
    if provider == "alibaba":
        # StopCharging: a pay-as-you-go instance stops billing for vCPU, memory and GPU while stopped
        return [
            "aliyun", "ecs", "StopInstance", "--InstanceId", ident["instance_id"],
            "--StoppedMode", "StopCharging", "--region", ident["region"],
        ]  # fmt: skip
    raise ValueError(f"unknown provider {provider!r}")


SHUTDOWN_ARGV = ["shutdown", "-h", "now"]


@dataclass
class ActionResult:
    ok: bool
    description: str  # what was (or would be) run
    detail: str = ""  # output or error
    provider: str | None = None


@dataclass
class Runner:
    """Runs commands with a timeout, finding programs on `path` (tests put stubs first)."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    timeout_s: float = 120.0

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.env.get("PATH", os.defpath))

    def run(
        self, argv: Sequence[str], *, timeout_s: float | None = None, stdin: str | None = None
    ) -> ActionResult:
        shown = shlex.join(argv)
        exe = self.which(argv[0]) if os.sep not in argv[0] else argv[0]
        if exe is None:
            return ActionResult(False, shown, f"{argv[0]} not found on PATH")
        try:
            proc = subprocess.run(
                [exe, *argv[1:]],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout_s or self.timeout_s,
                env=dict(self.env),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return ActionResult(False, shown, f"timed out after {timeout_s or self.timeout_s:g} s")
        except OSError as exc:
            return ActionResult(False, shown, str(exc))
        out = (proc.stdout + proc.stderr).strip()[-2000:]
        if proc.returncode != 0:
            return ActionResult(False, shown, f"exit {proc.returncode}: {out}")
        return ActionResult(True, shown, out)

    def run_shell(self, command: str, *, timeout_s: float) -> ActionResult:
        """A user's command line (hook, custom stop) through /bin/sh, so pipes and && work."""
        result = self.run(["/bin/sh", "-c", command], timeout_s=timeout_s)
        result.description = command
        return result


# A notice is tried 3 times, 1 s then 2 s apart (jittered), on 429/5xx and connection errors.
WEBHOOK_RETRY = httpclient.Retry(attempts=3, backoff_s=1.0, max_backoff_s=10.0, max_retry_after_s=30.0)


def notice_text(payload: Mapping[str, Any]) -> str:
    """The one line a person reads in Slack or Discord, when the event did not bring its own."""
    event = str(payload.get("event", "notice"))
    host = payload.get("host", "?")
    head = _("gpuwise idle on {host}").format(host=host)
    if payload.get("dry_run"):
        head += _(" [dry run]")
    reason = payload.get("reason", "")
    if event == "warning" and payload.get("stop_in_min") is not None:
        text = _("{head}: will stop in {minutes:g} min. {reason}")
        return text.format(head=head, minutes=payload["stop_in_min"], reason=reason).strip()
    return (
        _("{head}: {event}. {reason}").format(head=head, event=event.replace("_", " "), reason=reason).strip()
    )


def post_webhook(
    url: str,
    payload: Mapping[str, Any],
    *,
    timeout_s: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """POST `payload` as JSON, with a `text` (and for Discord a `content`) field so chat services show it;
    retried per WEBHOOK_RETRY. Returns None on success, else an error text without the URL's secrets."""
    body = {**payload, **chat_fields(url, str(payload.get("text") or notice_text(payload)))}
    problem = post_json(
        url,
        json.dumps(body).encode("utf-8"),
        user_agent="gpuwise-idle",
        timeout_s=timeout_s,
        retry=WEBHOOK_RETRY,
        sleep=sleep,
    )
    return None if problem is None else f"webhook {redact_url(url)} {problem}"


def wall(message: str, runner: Runner) -> ActionResult:
    """Broadcast to logged-in users' terminals with wall(1) (message on stdin)."""
    return runner.run(["wall"], stdin=message, timeout_s=10)
