"""POSTing a JSON event to a user's webhook (idle warnings and stops, monitor alerts), never leaking the
URL's secrets: webhook paths and queries often carry tokens, so only scheme and host reach any message.
Standard library only."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping

from gpuwise.httpclient import redact_url

__all__ = ["post_json", "redact_url"]  # redact_url's home is httpclient; kept importable here


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
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": user_agent, **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read(10_000)
    except urllib.error.HTTPError as exc:
        return f"answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"failed: {type(reason).__name__}"
    return None
