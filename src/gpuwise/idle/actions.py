"""Stop actions and notices (the edge): cloud instance identity from the metadata services, the provider's
own stop call, `shutdown -h now`, a custom command, the pre-stop hook, wall(1) messages and webhooks.

Every network address is injectable (`MetadataEndpoints`) so tests run a fake metadata server on
127.0.0.1 and never reach the real link-local addresses; requests go through gpuwise.httpclient, never
through a proxy. Provider CLIs are looked up on the PATH given (tests put recording stubs first). Tokens
are never logged: a webhook URL is shown as scheme://host only. Standard library only.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuwise import httpclient
from gpuwise.webhook import post_json, redact_url

PROVIDERS = ("aws", "gcp", "azure", "alibaba")
AZURE_API_VERSION = "2021-02-01"


@dataclass(frozen=True)
class MetadataEndpoints:
    """Base URLs of the cloud metadata services (the documented link-local addresses by default)."""

    aws: str = "http://169.254.169.254"
    gcp: str = "http://metadata.google.internal"
    azure: str = "http://169.254.169.254"
    alibaba: str = "http://100.100.100.200"
    timeout_s: float = 2.0

    @classmethod
    def all_at(cls, base: str, timeout_s: float = 2.0) -> MetadataEndpoints:
        """Every provider at one base URL (a fake metadata server in tests, or a proxy)."""
        return cls(aws=base, gcp=base, azure=base, alibaba=base, timeout_s=timeout_s)


class MetadataError(Exception):
    """The metadata service did not answer as the provider documents. `status` is the HTTP status of an
    answer that was not 2xx (None when there was no answer)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# A metadata answer is a few bytes to a few KB; a larger one is not what the provider documents.
_METADATA_MAX_BYTES = 1_000_000


def _http(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    timeout_s: float,
    data: bytes | None = None,
) -> str:
    try:
        # No proxies: metadata services are link-local and must never be asked through a proxy.
        answer = httpclient.request(
            method,
            url,
            body=data,
            headers=headers,
            timeout_s=timeout_s,
            max_bytes=_METADATA_MAX_BYTES,
            use_proxy=False,
        )
    except httpclient.HttpError as exc:
        raise MetadataError(f"{method} {url}: {exc.reason}") from exc
    if not answer.ok:
        raise MetadataError(f"{method} {url}: HTTP {answer.status}", status=answer.status)
    return answer.body.decode("utf-8", errors="replace").strip()


def metadata_text_or_none(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    timeout_s: float,
    data: bytes | None = None,
) -> str | None:
    """Like a metadata GET, but HTTP 404 is None: the providers answer 404 for "no such notice" (AWS
    spot/instance-action and the rebalance recommendation). Used by `gpuwise run`'s preemption watchers."""
    try:
        return _http(url, method=method, headers=headers, timeout_s=timeout_s, data=data)
    except MetadataError as exc:
        if exc.status == 404:
            return None
        raise


def aws_identity(ep: MetadataEndpoints) -> dict[str, str]:
    """IMDSv2: a session token first, then instance-id and region."""
    token = _http(
        ep.aws + "/latest/api/token",
        method="PUT",
        headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"},
        timeout_s=ep.timeout_s,
        data=b"",
    )
    h = {"X-aws-ec2-metadata-token": token}
    instance = _http(ep.aws + "/latest/meta-data/instance-id", headers=h, timeout_s=ep.timeout_s)
    region = _http(ep.aws + "/latest/meta-data/placement/region", headers=h, timeout_s=ep.timeout_s)
    if not instance.startswith("i-") or not region:
        raise MetadataError(f"AWS metadata gave instance id {instance!r} and region {region!r}")
    return {"instance_id": instance, "region": region}


def gcp_identity(ep: MetadataEndpoints) -> dict[str, str]:
    h = {"Metadata-Flavor": "Google"}
    base = ep.gcp + "/computeMetadata/v1"
    name = _http(base + "/instance/name", headers=h, timeout_s=ep.timeout_s)
    zone = _http(base + "/instance/zone", headers=h, timeout_s=ep.timeout_s).rsplit("/", 1)[-1]
    project = _http(base + "/project/project-id", headers=h, timeout_s=ep.timeout_s)
    if not (name and zone and project):
        raise MetadataError("GCP metadata lacks the instance name, zone or project")
    return {"name": name, "zone": zone, "project": project}


def azure_identity(ep: MetadataEndpoints) -> dict[str, str]:
    text = _http(
        ep.azure + f"/metadata/instance?api-version={AZURE_API_VERSION}",
        headers={"Metadata": "true"},
        timeout_s=ep.timeout_s,
    )
    try:
        compute = json.loads(text)["compute"]
        out = {
            "name": str(compute["name"]),
            "resource_group": str(compute["resourceGroupName"]),
            "subscription": str(compute["subscriptionId"]),
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise MetadataError(f"Azure IMDS answer is not the documented JSON: {exc}") from exc
    return out


def alibaba_identity(ep: MetadataEndpoints) -> dict[str, str]:
    base = ep.alibaba + "/latest/meta-data"
    instance = _http(base + "/instance-id", timeout_s=ep.timeout_s)
    region = _http(base + "/region-id", timeout_s=ep.timeout_s)
    if not instance or not region:
        raise MetadataError("Alibaba Cloud metadata lacks the instance id or region")
    return {"instance_id": instance, "region": region}


IDENTITY = {"aws": aws_identity, "gcp": gcp_identity, "azure": azure_identity, "alibaba": alibaba_identity}


def detect_provider(ep: MetadataEndpoints) -> tuple[str, dict[str, str]] | None:
    """The first provider whose metadata service answers as documented, with the instance identity."""
    for provider in PROVIDERS:
        try:
            return provider, IDENTITY[provider](ep)
        except MetadataError:
            continue
    return None


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


def plan_stop(
    action: str, *, command: str | None, endpoints: MetadataEndpoints, runner: Runner
) -> tuple[list[list[str]], str, str | None]:
    """What to run, in order (later entries are fallbacks), a note, and the provider (if any).

    auto: the provider found through its metadata service and its CLI on PATH, falling back to
    `shutdown -h now`; a named provider: its CLI only; shutdown; command."""
    if action == "command":
        assert command is not None
        return [["/bin/sh", "-c", command]], "custom command", None
    if action == "shutdown":
        return [SHUTDOWN_ARGV], "shutdown -h now", None
    if action in PROVIDERS:
        ident = IDENTITY[action](endpoints)
        return [stop_argv(action, ident)], f"{action} stop through its CLI", action
    found = detect_provider(endpoints)
    if found is None:
        return [SHUTDOWN_ARGV], "no cloud metadata service answered: shutdown -h now", None
    provider, ident = found
    argv = stop_argv(provider, ident)
    note = f"{provider} instance {ident}"
    if runner.which(argv[0]) is None:
        note += f"; {argv[0]} not on PATH, falling back to shutdown -h now"
        if provider == "azure":
            note += " (an Azure VM shut down from inside stays allocated and billed: install az)"
        return [SHUTDOWN_ARGV], note, provider
    return [argv, SHUTDOWN_ARGV], note, provider


def post_webhook(url: str, payload: Mapping[str, Any], *, timeout_s: float = 10.0) -> str | None:
    """POST `payload` as JSON. Returns None on success, else an error text without the URL's secrets."""
    problem = post_json(
        url, json.dumps(payload).encode("utf-8"), user_agent="gpuwise-idle", timeout_s=timeout_s
    )
    return None if problem is None else f"webhook {redact_url(url)} {problem}"


def wall(message: str, runner: Runner) -> ActionResult:
    """Broadcast to logged-in users' terminals with wall(1) (message on stdin)."""
    return runner.run(["wall"], stdin=message, timeout_s=10)
