"""One small HTTP helper for every outbound request gpuwise makes (catalog downloads, webhooks, cloud
metadata, the Jupyter kernels API): timeouts, retries with exponential backoff and jitter on 429/5xx and
connection errors (honouring Retry-After), a cap on the body read, and URLs redacted in every message it
writes.

Redaction: webhook and mirror URLs often carry tokens in their path or query, so a message only ever shows
scheme and host (``redact_url``); a caller that built a path itself (and knows it holds no secret) may
append it to ``redact_url(base)``.

Proxies: requests go through the proxies the environment names, except with ``use_proxy=False``, for
servers that must be asked directly (link-local cloud metadata, a Jupyter server on this machine).

Standard library only; a leaf module (imports nothing from gpuwise).
"""

from __future__ import annotations

import email.utils
import http.client
import math
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_CHUNK = 64 * 1024


def redact_url(url: str) -> str:
    """scheme://host[:port] of a URL, with "/…" where a path was left out. The port stays: two servers on
    one host (127.0.0.1:9090 and :9091) must not read as the same; user, password, path and query go."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:  # an IPv6 address keeps its brackets, or its last group reads as a port
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: not shown
        port = None
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    return shown + ("/…" if parts.path not in ("", "/") else "")


class HttpError(Exception):
    """A request that did not give an answer. ``str()`` never holds the URL's path or query."""

    def __init__(self, shown: str, reason: str, *, retryable: bool = False) -> None:
        super().__init__(f"{shown}: {reason}")
        self.shown = shown  # the redacted URL
        self.reason = reason
        self.retryable = retryable


class UnreachableError(HttpError):
    """Connection refused/reset, DNS failure, a socket timeout: the request may be retried."""

    def __init__(self, shown: str, reason: str) -> None:
        super().__init__(shown, reason, retryable=True)


class TooLargeError(HttpError):
    """The body (announced or read) passed ``max_bytes``; ``announced`` is the Content-Length if that
    was the reason."""

    def __init__(self, shown: str, reason: str, *, limit: int, announced: int | None = None) -> None:
        super().__init__(shown, reason)
        self.limit = limit
        self.announced = announced


class TooSlowError(HttpError):
    """The request ran past its own time (``timeout_s``) or past the caller's ``deadline``."""

    def __init__(self, shown: str, reason: str, *, deadline: bool) -> None:
        super().__init__(shown, reason)
        self.deadline = deadline


@dataclass(frozen=True)
class Retry:
    """How often and how long to wait: attempt n (from 1) waits ``backoff_s * 2**(n-1)`` times a
    random factor in [1 - jitter, 1 + jitter], at most ``max_backoff_s``; a Retry-After the server
    sends replaces it, up to ``max_retry_after_s`` (a longer ask ends the retries)."""

    attempts: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    jitter: float = 0.5
    max_retry_after_s: float = 30.0


NO_RETRY = Retry(attempts=1)


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    headers: Mapping[str, str]

    @property
    def ok(self) -> bool:
        """A 2xx answer (what urllib itself does not raise HTTPError for)."""
        return 200 <= self.status < 300


@dataclass(frozen=True)
class RetryEvent:
    """Told to ``on_retry`` before each wait: which try failed, why, and how long the wait is."""

    url: str  # redacted
    attempt: int
    reason: str  # "HTTP 429", "connection refused", …
    wait_s: float


def retry_after_s(value: str | None, now: Callable[[], datetime] | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date); None if absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = float((when - (now or (lambda: datetime.now(UTC)))()).total_seconds())
    return None if math.isnan(seconds) else max(0.0, seconds)


def backoff_s(attempt: int, policy: Retry, rand: Callable[[], float] = random.random) -> float:
    """The wait after failed try ``attempt`` (1-based), with full-range jitter around the doubling."""
    base = min(policy.max_backoff_s, policy.backoff_s * 2.0 ** (attempt - 1))
    return max(0.0, base * (1 - policy.jitter + 2 * policy.jitter * rand()))


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
    max_bytes: int = 10 << 20,
    retry: Retry = NO_RETRY,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[RetryEvent], None] | None = None,
    on_chunk: Callable[[int, int | None], None] | None = None,
    user_agent: str = "gpuwise",
    use_proxy: bool = True,
) -> Response:
    """One request, retried per ``retry`` on 429/5xx answers and connection errors.

    Returns the final answer whatever its status (a 404, or the last 503 when the tries ran out);
    raises :class:`HttpError` when no answer came (UnreachableError after the last try), the body
    passed ``max_bytes`` (TooLargeError, never retried) or the time ran out (TooSlowError: ``timeout_s``
    per try, also the socket timeout, and ``deadline`` on ``clock`` over all tries and waits).
    ``on_chunk(read, total)`` is called as the body arrives (total from Content-Length, or None) and may
    raise to stop it. ``use_proxy=False`` ignores the environment's proxies (a server that must be asked
    directly)."""
    shown = redact_url(url)
    attempt = 0
    while True:
        attempt += 1
        try:
            response = _once(
                method,
                url,
                shown,
                body,
                headers,
                timeout_s,
                max_bytes,
                deadline,
                clock,
                on_chunk,
                user_agent,
                use_proxy,
            )
            reason, wait = f"HTTP {response.status}", None
            if response.status not in RETRY_STATUSES:
                return response
            wait = retry_after_s(response.headers.get("Retry-After"))
            if wait is not None and wait > retry.max_retry_after_s:
                return response  # the server asks for longer than we will wait
        except UnreachableError as exc:
            response, reason, wait = None, exc.reason, None
            if attempt >= retry.attempts:
                raise
        if attempt >= retry.attempts:
            assert response is not None
            return response
        wait = backoff_s(attempt, retry) if wait is None else wait
        if deadline is not None and clock() + wait > deadline:
            if response is not None:
                return response
            raise TooSlowError(shown, f"no time left to retry after {reason}", deadline=True)
        if on_retry is not None:
            on_retry(RetryEvent(shown, attempt, reason, wait))
        sleep(wait)


def _once(  # noqa: PLR0917 - the request's parts, passed straight through
    method: str,
    url: str,
    shown: str,
    body: bytes | None,
    headers: Mapping[str, str] | None,
    timeout_s: float,
    max_bytes: int,
    deadline: float | None,
    clock: Callable[[], float],
    on_chunk: Callable[[int, int | None], None] | None,
    user_agent: str,
    use_proxy: bool,
) -> Response:
    start = clock()
    limit = timeout_s if deadline is None else min(timeout_s, deadline - start)
    if limit <= 0:
        raise TooSlowError(shown, "the time ran out before the request", deadline=True)
    req = urllib.request.Request(
        url, data=body, method=method, headers={"User-Agent": user_agent, **(headers or {})}
    )
    # an opener without proxies, or the default one (the environment's proxies)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({})) if not use_proxy else None
    try:
        with (opener.open if opener else urllib.request.urlopen)(req, timeout=limit) as answer:
            return Response(
                answer.status,
                _read_body(answer, shown, max_bytes, start, timeout_s, deadline, clock, on_chunk),
                dict(answer.headers.items()),
            )
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                data = exc.read(min(max_bytes, _CHUNK))
            except (OSError, http.client.HTTPException):
                data = b""
            return Response(exc.code, data, dict(exc.headers.items()) if exc.headers else {})
    except HttpError:
        raise
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        raise UnreachableError(shown, _reason(exc, url)) from exc


def _reason(exc: BaseException, url: str) -> str:
    """Why a request got no answer, in words that cannot hold the URL (an exception's text may)."""
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        said = reason.strerror
    elif isinstance(reason, str):
        said = reason
    else:
        said = type(reason).__name__
    parts = urllib.parse.urlsplit(url)
    secret = (parts.path.strip("/"), parts.query, parts.username or "", parts.password or "")
    return type(exc).__name__ if any(p and p in said for p in secret) else said


def _read_body(  # noqa: PLR0917 - the bounds of one read
    answer: http.client.HTTPResponse,
    shown: str,
    max_bytes: int,
    start: float,
    timeout_s: float,
    deadline: float | None,
    clock: Callable[[], float],
    on_chunk: Callable[[int, int | None], None] | None,
) -> bytes:
    declared = answer.headers.get("Content-Length", "")
    total = int(declared) if declared.strip().isdigit() else None
    if total is not None and total > max_bytes:
        raise TooLargeError(shown, f"announces {total:,} bytes", limit=max_bytes, announced=total)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = answer.read1(_CHUNK)  # what has arrived: a slow server cannot stall it
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise TooLargeError(shown, f"the body is larger than {max_bytes:,} bytes", limit=max_bytes)
        if on_chunk is not None:
            on_chunk(size, total)
        t = clock()
        if t - start > timeout_s:
            raise TooSlowError(shown, f"took longer than {timeout_s:g} s", deadline=False)
        if deadline is not None and t > deadline:
            raise TooSlowError(shown, "the time ran out", deadline=True)
