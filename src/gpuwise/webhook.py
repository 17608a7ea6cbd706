"""POSTing a JSON event to a user's webhook (idle warnings and stops, monitor alerts), never leaking the
URL's secrets: webhook paths and queries often carry tokens, so only scheme and host reach any message.
The request itself goes through gpuwise.httpclient (one try: a notice is sent once, on its own timeout).
Standard library only."""

from __future__ import annotations

from collections.abc import Mapping

from gpuwise import httpclient
from gpuwise.httpclient import redact_url

__all__ = ["post_json", "redact_url"]  # redact_url's home is httpclient; kept importable here

# The receiver's answer is not used; reading a little of it lets the connection finish cleanly.
_ANSWER_BYTES = 10_000


def post_json(
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    user_agent: str = "gpuwise",
    timeout_s: float = 10.0,
) -> str | None:
    """POST ``body`` (JSON bytes). None on success; else what went wrong, without the URL
    ("answered HTTP 500", "failed: URLError")."""
    try:
        answer = httpclient.request(
            "POST",
            url,
            body=body,
            headers={"Content-Type": "application/json", **(headers or {})},
            timeout_s=timeout_s,
            max_bytes=_ANSWER_BYTES,
            user_agent=user_agent,
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
