"""POSTing a JSON event to a user's webhook (idle warnings and stops, monitor alerts), never leaking the
URL's secrets: webhook paths and queries often carry tokens, so only scheme and host reach any message.
The request itself goes through gpuwise.httpclient: one try by default (a notice is sent once, on its own
timeout); a caller may pass a `retry` (the idle daemon does: a stop warning that never arrives is a bill).

`chat_fields` gives the fields chat services need to show a notice: Slack's incoming webhooks and Discord's
Slack-compatible `/slack` endpoint read `text`; Discord's own webhook reads `content` (at most 2,000
characters: https://discord.com/developers/docs/resources/webhook#execute-webhook).
Standard library only."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from gpuwise import httpclient
from gpuwise.httpclient import redact_url

__all__ = ["chat_fields", "post_json", "redact_url"]  # redact_url's home is httpclient; kept importable here

# The receiver's answer is not used; reading a little of it lets the connection finish cleanly.
_ANSWER_BYTES = 10_000


def post_json(
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    user_agent: str = "gpuwise",
    timeout_s: float = 10.0,
    retry: httpclient.Retry = httpclient.NO_RETRY,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """POST ``body`` (JSON bytes), tried again per ``retry`` on 429/5xx and connection errors. None on
    success; else what went wrong, without the URL ("answered HTTP 500", "failed: URLError")."""
    try:
        answer = httpclient.request(
            "POST",
            url,
            body=body,
            headers={"Content-Type": "application/json", **(headers or {})},
            timeout_s=timeout_s,
            max_bytes=_ANSWER_BYTES,
            user_agent=user_agent,
            retry=retry,
            sleep=sleep,
        )
    except httpclient.TooLargeError:
        return None  # only a 2xx answer's body is read: delivered, with more reply than we read
    except httpclient.HttpError as exc:
        return f"failed: {_failure_name(exc)}"
    return None if answer.ok else f"answered HTTP {answer.status}"


def _failure_name(exc: httpclient.HttpError) -> str:
    """The kind of failure, as a name that cannot hold the URL: the underlying error's type
    (ConnectionRefusedError, TimeoutError, …)."""
    cause = exc.__cause__
    if cause is None:  # httpclient's own time limit ran out while the answer was read
        return "TimeoutError"
    return type(getattr(cause, "reason", cause)).__name__


_DISCORD_HOSTS = ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com")
_DISCORD_MAX_CHARS = 2000


def chat_fields(url: str, text: str) -> dict[str, str]:
    """`text` for Slack (and Discord's `/slack` endpoint), plus `content` for a Discord webhook URL."""
    fields = {"text": text}
    parts = urlsplit(url)
    if (parts.hostname or "") in _DISCORD_HOSTS and not parts.path.rstrip("/").endswith("/slack"):
        fields["content"] = text[:_DISCORD_MAX_CHARS]
    return fields
