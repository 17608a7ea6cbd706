"""The exporter's app on the bounded server: routes, the bearer token, and coalesced collections.

`ExporterApp` runs on the server's loop thread and never blocks it: `/`, 404, 401, OPTIONS and 405 are
answered at once; a `/metrics` request is parked until a collection that began after the request
arrived has finished, and every request parked for the same encoding is answered by that one collection.
So every answer is still a fresh read of the GPUs, while 50 clients cost about one probe read per
collection instead of 50 queued ones. Collections run one at a time on the app's own collector thread,
so a slow GPU read delays scrapes but never the loop (idle connections, timeouts, 401s).

Rendering: the Prometheus text format and OpenMetrics 1.0.0 (what Prometheus asks for) are written by
`monitor.exposition`, byte for byte what prometheus-client writes, at a fifth of its cost. Anything else
(an `escaping=` other than the default, another OpenMetrics version, the `name[]` filter) goes through
prometheus-client's own WSGI app, unchanged. Tokens and headers are never logged.
"""

from __future__ import annotations

import gzip
import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, choose_encoder, gzip_accepted
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_1

from gpuwise.monitor.dcgm import DCGM_METRICS
from gpuwise.monitor.exposition import render_openmetrics, render_text
from gpuwise.monitor.httpserver import Reply, Request, Response

__all__ = ["COUNTERS", "ExporterApp", "counter_types"]

log = logging.getLogger("gpuwise.monitor.exporter")

# dcgm-exporter's counters keep their names without `_total`. OpenMetrics requires `_total` on a counter's
# samples, so the collector types them `unknown` (valid in both formats under their exact names); the
# text format, which dcgm-exporter speaks, types them `counter` again.
COUNTERS = frozenset(name for name, kind, *_ in DCGM_METRICS if kind == "counter")
_COUNTER_TYPE_FIXES = [
    (f"# TYPE {name} untyped\n".encode(), f"# TYPE {name} counter\n".encode()) for name in sorted(COUNTERS)
]
_TEXT = "text/plain; charset=utf-8"
_ALLOW = ("Allow", "GET, HEAD, OPTIONS")

Renderer = Callable[[Iterable[Metric]], bytes]
_RENDERERS: dict[str, Renderer] = {  # content type chosen by prometheus-client -> our renderer
    CONTENT_TYPE_PLAIN_0_0_4: lambda families: render_text(families, COUNTERS),
    OPENMETRICS_1: render_openmetrics,
    f"{OPENMETRICS_1}; escaping=underscores": render_openmetrics,
}

Key = tuple[str, bool, str]  # (content type, gzip, query string): requests that can share an answer


def counter_types(body: bytes) -> bytes:
    """Type dcgm-exporter's counters `counter` in prometheus-client's text output (it writes `untyped`)."""
    for old, new in _COUNTER_TYPE_FIXES:
        body = body.replace(old, new)
    return body


class ExporterApp:
    """`/` says where the metrics are, `/metrics` serves them (see the module docstring)."""

    _MAX_CACHED = 16  # distinct answers (and Accept headers) remembered

    def __init__(self, registry: CollectorRegistry, token: str | None) -> None:
        self._registry = registry
        self._token = token.encode() if token else None
        self._metrics = make_wsgi_app(registry)
        self._collector = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpuwise-scrape")
        self._lock = threading.Lock()
        self._running: set[Key] = set()
        self._parked: dict[Key, list[tuple[float, Reply]]] = {}
        self._done: dict[Key, tuple[float, Response]] = {}  # the latest answer and when its collection began
        self._encodings: dict[str, str] = {}  # Accept header -> content type (choose_encoder, remembered)

    def authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), self._token)

    def __call__(self, request: Request, reply: Reply) -> None:
        if request.path == "/":
            reply(Response(200, [("Content-Type", _TEXT)], b"gpuwise exporter: metrics at /metrics\n"))
        elif request.path != "/metrics":
            reply(Response(404, [("Content-Type", _TEXT)], b"not found\n"))
        elif not self.authorized(request.headers.get("authorization")):
            headers = [("Content-Type", _TEXT), ("WWW-Authenticate", 'Bearer realm="gpuwise"')]
            reply(Response(401, headers, b"unauthorized: send Authorization: Bearer <token>\n"))
        elif request.method == "OPTIONS":
            reply(Response(200, [_ALLOW], b""))
        elif request.method not in ("GET", "HEAD"):  # HEAD: answered as GET, the server drops the body
            reply(Response(405, [_ALLOW, ("Content-Type", _TEXT)], b"use GET or HEAD\n"))
        else:
            self._metrics_for(request, reply)

    def close(self) -> None:
        """Stop the collector thread once the collection under way (if any) has finished."""
        self._collector.shutdown(wait=True)

    # -- coalescing -------------------------------------------------------------------------------------

    def _metrics_for(self, request: Request, reply: Reply) -> None:
        key = (
            self._content_type(request.headers.get("accept", "")),
            gzip_accepted(request.headers.get("accept-encoding", "")),
            request.query,
        )
        with self._lock:
            done = self._done.get(key)
            if done is None or done[0] < request.received_at:
                self._parked.setdefault(key, []).append((request.received_at, reply))
                if key not in self._running:
                    self._running.add(key)
                    self._collector.submit(self._collect, key, request)
                return
        reply(done[1])

    def _content_type(self, accept: str) -> str:
        got = self._encodings.get(accept)
        if got is None:
            if len(self._encodings) >= self._MAX_CACHED:
                self._encodings.clear()
            got = self._encodings[accept] = choose_encoder(accept)[1]
        return got

    def _collect(self, key: Key, request: Request) -> None:
        """On the collector thread: collect again until every parked request has been answered by a
        collection that began after it arrived."""
        more = True
        while more:
            started = time.monotonic()
            response = _failed()  # what the parked requests get if rendering dies of a BaseException
            try:
                response = self._render(key, request)
            finally:
                more = self._answer(key, started, response)

    def _answer(self, key: Key, started: float, response: Response) -> bool:
        """Answer every request parked before `started`; True when others wait for a newer collection."""
        with self._lock:
            parked = self._parked.pop(key, [])
            ready = [reply for arrived, reply in parked if arrived <= started]
            later = [(arrived, reply) for arrived, reply in parked if arrived > started]
            if later:
                self._parked[key] = later
            else:
                self._running.discard(key)
            if len(self._done) >= self._MAX_CACHED:
                self._done.clear()
            self._done[key] = (started, response)
        for reply in ready:
            reply(response)
        return bool(later)

    def _render(self, key: Key, request: Request) -> Response:
        content_type, gzipped, query = key
        renderer = _RENDERERS.get(content_type)
        try:
            if renderer is not None and "name[]" not in parse_qs(query):
                headers = [("Content-Type", content_type)]
                body = renderer(self._registry.collect())
            else:
                openmetrics = content_type.startswith("application/openmetrics-text")
                status, headers, body = self._prometheus_client_app(request, compress=openmetrics)
                if openmetrics or not status.startswith("200"):
                    return Response(int(status.split()[0]), headers, body)
                body = counter_types(body)  # the text format: compressed below, after the fix
        except Exception:  # a collector fault must not kill the server; Prometheus marks the scrape failed
            log.exception("scrape failed")
            return _failed()
        if gzipped:
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        return Response(200, headers, body)

    def _prometheus_client_app(
        self, request: Request, compress: bool
    ) -> tuple[str, list[tuple[str, str]], bytes]:
        environ: dict[str, Any] = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": "/metrics",
            "QUERY_STRING": request.query,
            "HTTP_ACCEPT": request.headers.get("accept", ""),
            "HTTP_ACCEPT_ENCODING": request.headers.get("accept-encoding", "") if compress else "",
        }
        got: list[tuple[str, list[tuple[str, str]]]] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            del exc_info  # the app's exception, if any, propagates from the call itself
            got[:] = [(status, list(headers))]

        body = b"".join(self._metrics(environ, start_response))
        return got[0][0], got[0][1], body


def _failed() -> Response:
    return Response(500, [("Content-Type", _TEXT)], b"scrape failed; see the exporter log\n")
