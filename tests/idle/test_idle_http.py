"""Webhooks, cloud metadata and the Jupyter API over gpuwise.httpclient, against real servers on loopback:
the answers each caller relies on (a 404 is "no notice", a long 2xx reply is still delivered) and the rule
that link-local metadata and a local Jupyter server are never asked through a proxy."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from idle_fakes import serve

from gpuwise import httpclient
from gpuwise.gpu.sample import Snapshot
from gpuwise.idle.providers.metadata import MetadataError, metadata_text_or_none
from gpuwise.idle.signals import JupyterKernels
from gpuwise.webhook import post_json

ROUTES: dict[str, tuple[int, bytes]] = {
    "/ok": (200, b"  i-0abc  \n"),
    "/big": (200, b"x" * 50_000),  # more reply than a webhook sender reads
    "/fail": (500, b"oops"),
    "/missing": (404, b""),
    "/forbidden": (403, b"{}"),
    "/api/kernels": (200, b"[]"),
}


def _handler(seen: list[tuple[str, str, dict[str, str]]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # noqa: ARG002 - silence the request log
            return

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            seen.append((self.command, self.path, dict(self.headers)))
            code, body = ROUTES.get(self.path, (502, b"not a route: a proxied request"))
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = do_POST = _answer  # noqa: N815 - http.server's method names

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str]]]]]:
    seen: list[tuple[str, str, dict[str, str]]] = []
    with serve(_handler(seen)) as base:
        yield base, seen


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


def test_webhook_answers_become_short_messages_without_the_url(
    server: tuple[str, list[tuple[str, str, dict[str, str]]]],
) -> None:
    base, seen = server
    assert post_json(base + "/ok", b"{}", user_agent="gpuwise-idle", headers={"X-Token": "t"}) is None
    method, _, headers = seen[-1]
    assert method == "POST" and headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == "gpuwise-idle" and headers["X-Token"] == "t"
    assert post_json(base + "/big", b"{}") is None  # delivered; the long reply is not an error
    assert post_json(base + "/fail", b"{}") == "answered HTTP 500"
    refused = post_json(f"http://127.0.0.1:{_closed_port()}/hooks/SECRET", b"{}", timeout_s=2)
    assert refused == "failed: ConnectionRefusedError"


def test_a_metadata_404_is_no_notice_and_other_failures_are_errors(
    server: tuple[str, list[tuple[str, str, dict[str, str]]]],
) -> None:
    base, seen = server
    assert metadata_text_or_none(base + "/ok", timeout_s=2) == "i-0abc"
    assert metadata_text_or_none(base + "/missing", timeout_s=2) is None
    with pytest.raises(MetadataError, match="HTTP 500") as failed:
        metadata_text_or_none(base + "/fail", timeout_s=2)
    assert failed.value.status == 500
    token = metadata_text_or_none(base + "/ok", method="PUT", data=b"", headers={"X-Ttl": "300"}, timeout_s=2)
    assert token == "i-0abc" and seen[-1][0] == "PUT" and seen[-1][2]["X-Ttl"] == "300"
    with pytest.raises(MetadataError) as unreachable:
        metadata_text_or_none(f"http://127.0.0.1:{_closed_port()}/x", timeout_s=2)
    assert unreachable.value.status is None


def test_jupyter_answers_that_are_not_2xx_are_unknown_without_the_token(
    server: tuple[str, list[tuple[str, str, dict[str, str]]]],
) -> None:
    base, _ = server
    sig = JupyterKernels(base + "/forbidden", token="s3cret", timeout_s=2).gather(0.0, Snapshot(samples=()))
    assert sig.state == "unknown" and "s3cret" not in sig.detail


def test_metadata_and_jupyter_are_never_asked_through_a_proxy(
    server: tuple[str, list[tuple[str, str, dict[str, str]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, direct = server
    proxied: list[tuple[str, str, dict[str, str]]] = []
    with serve(_handler(proxied)) as proxy:
        for name in ("http_proxy", "HTTP_PROXY"):
            monkeypatch.setenv(name, proxy)
        for name in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        # urllib builds its default opener (and reads the proxy variables) once; start from none and
        # leave none behind, so this proxy is seen here and forgotten after
        urllib.request.install_opener(None)
        try:
            through_proxy = httpclient.request("GET", base + "/ok", timeout_s=2)
            assert through_proxy.status == 502 and proxied  # the fake proxy is what the environment names
            proxied.clear()
            assert metadata_text_or_none(base + "/ok", timeout_s=2) == "i-0abc"
            kernels = JupyterKernels(base, timeout_s=2).gather(0.0, Snapshot(samples=()))
            assert kernels.detail == "no Jupyter kernels"
        finally:
            urllib.request.install_opener(None)
    assert proxied == [] and [p for _, p, _ in direct] == ["/ok", "/api/kernels"]
