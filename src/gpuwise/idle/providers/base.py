"""What every provider's stop call shares: where credentials come from, one HTTP call with a timeout and
retries with backoff (through gpuwise.httpclient), and the `StopStep` the daemon runs.

Credentials are read at the moment of the stop (a key rotated after the daemon started is picked up) and
never reach a log line, a notice or the state file: a step's `description` and every failure `detail` are
built without them, and a provider answer that echoes the key has it replaced by "***".
"""

from __future__ import annotations

import configparser
import json
import os
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwise import httpclient
from gpuwise.idle.actions import ActionResult, Runner
from gpuwise.locale import _

# Each stop call: 3 tries on 429/5xx/connection errors, 2 s then 4 s apart (jittered); 30 s per try.
STOP_RETRY = httpclient.Retry(attempts=3, backoff_s=2.0, max_backoff_s=30.0)
_ANSWER_BYTES = 100_000


class StopError(Exception):
    """A stop step cannot be built (no instance id, no credentials): the message says what to set."""


@dataclass
class StopContext:
    """Where a stop step finds its inputs. `api_urls` replaces a provider's documented base URL (a proxy, or
    a fake on 127.0.0.1 in tests); `sleep` is the daemon's (a fake clock in tests)."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    runner: Runner = field(default_factory=Runner)
    home: Path = field(default_factory=Path.home)
    api_urls: Mapping[str, str] = field(default_factory=dict)
    instance_id: str | None = None  # [idle] instance_id: this machine's id at its provider
    allow_terminate: bool = False
    timeout_s: float = 30.0
    retry: httpclient.Retry = STOP_RETRY
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time  # request signatures carry the time (Tencent, Huawei)

    def base_url(self, provider: str, documented: str) -> str:
        return self.api_urls.get(provider, documented).rstrip("/")


@dataclass(frozen=True)
class Credential:
    value: str
    source: str  # where it came from ("RUNPOD_API_KEY", "~/.runpod/config.toml"), never the value


def _read_key(path: Path, keys: Sequence[str]) -> str | None:
    """The first of `keys` in a TOML, INI or JSON file (any section), or the whole file when it holds one
    line (vastai's vast_api_key)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for parse in (_toml_values, _json_values, _ini_values):
        values = parse(text)
        for key in keys:
            if values.get(key):
                return values[key]
    line = text.strip()
    return line if line and "\n" not in line and "=" not in line and " " not in line else None


def _toml_values(text: str) -> dict[str, str]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}
    return _flatten(doc)


def _json_values(text: str) -> dict[str, str]:
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    return _flatten(doc) if isinstance(doc, dict) else {}


def _ini_values(text: str) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text if text.lstrip().startswith("[") else "[default]\n" + text)
    except configparser.Error:
        return {}
    return {k: v.strip().strip("\"'") for s in parser.sections() for k, v in parser.items(s)}


def _flatten(doc: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in doc.items():
        if isinstance(value, Mapping):
            for k, v in _flatten(value).items():
                out.setdefault(k, v)
        elif isinstance(value, str):
            out.setdefault(str(key), value)
    return out


def find_credential(
    ctx: StopContext, env_names: Sequence[str], files: Sequence[str] = (), keys: Sequence[str] = ()
) -> Credential | None:
    """The first environment variable set, else the first file (relative to the home folder) holding one of
    `keys`."""
    for name in env_names:
        value = ctx.env.get(name, "").strip()
        if value:
            return Credential(value, name)
    for rel in files:
        found = _read_key(ctx.home / rel, keys)
        if found:
            return Credential(found.strip(), "~/" + rel)
    return None


def need_credential(
    ctx: StopContext,
    provider: str,
    env_names: Sequence[str],
    files: Sequence[str] = (),
    keys: Sequence[str] = (),
) -> Credential:
    found = find_credential(ctx, env_names, files, keys)
    if found is None:
        where = _(" or ").join([*env_names, *("~/" + f for f in files)])
        raise StopError(_("no {provider} API key: set {where}").format(provider=provider, where=where))
    return found


def http_step_call(
    ctx: StopContext,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    body: bytes | None = None,
    secrets: Sequence[str] = (),
) -> ActionResult:
    """One provider API call with STOP_RETRY. ok on a 2xx answer; otherwise the status and the start of the
    answer (with every secret masked), or why no answer came. `description` is the method and the URL's
    path, with no query and no header."""
    shown = f"{method} {httpclient.redact_url(url).removesuffix('/…')}{_path(url)}"
    try:
        answer = httpclient.request(
            method,
            url,
            body=body,
            headers=headers,
            timeout_s=ctx.timeout_s,
            max_bytes=_ANSWER_BYTES,
            retry=ctx.retry,
            sleep=ctx.sleep,
            user_agent="gpuwise-idle",
        )
    except httpclient.HttpError as exc:
        return ActionResult(False, shown, mask(exc.reason, secrets))
    said = answer.body.decode("utf-8", errors="replace").strip()[:300]
    if not answer.ok:
        return ActionResult(False, shown, mask(f"HTTP {answer.status}: {said}", secrets))
    return ActionResult(True, shown, mask(said, secrets))


def _path(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).path


def mask(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


@dataclass
class StopStep:
    """One way to stop this machine: what it is called in logs (no secret), what it does to the bill, and
    the call itself (run by the daemon, retried and then followed by the next step when it fails)."""

    action: str  # the action's name: "runpod", "shutdown", "command", …
    description: str
    run: Callable[[], ActionResult]
    stops_billing: bool | None = True  # None: depends on the provider (shutdown, command)
    warning: str = ""  # said loudly before the step runs (Lambda's terminate, a shutdown that keeps billing)


def cli_step(action: str, argv: list[str], ctx: StopContext, *, shown: str | None = None) -> StopStep:
    """A step that runs a provider's own CLI (found on the runner's PATH, credentials from its own config)."""
    return StopStep(action, shown or " ".join(argv), lambda: ctx.runner.run(argv))


def api_step(
    action: str, description: str, call: Callable[[], ActionResult], *, warning: str = ""
) -> StopStep:
    """A step around a provider API call; a missing credential is a failed attempt that says what to set."""

    def run() -> ActionResult:
        try:
            return call()
        except StopError as exc:
            return ActionResult(False, description, str(exc))

    return StopStep(action, description, run, warning=warning)
