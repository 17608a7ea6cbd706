"""Fakes for the idle daemon tests (not a test module): a fake clock, recording stub programs on PATH,
a fake cloud metadata server and a webhook receiver, both on 127.0.0.1."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STUBS = ("aws", "gcloud", "az", "aliyun", "shutdown", "wall", "systemctl")


@dataclass
class FakeClock:
    now: float = 1_777_000_000.0
    slept: float = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds
        self.slept += seconds


def make_stubs(bin_dir: Path, log: Path, names: tuple[str, ...] = STUBS, fail: tuple[str, ...] = ()) -> None:
    """Scripts that append `name argv…` (and stdin for wall) to `log`; those in `fail` exit 1."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        script = bin_dir / name
        body = f'printf "%s" "{name}" >> "{log}"\nfor a in "$@"; do printf " %s" "$a" >> "{log}"; done\n'
        if name == "wall":
            body += f'printf " | %s" "$(cat)" >> "{log}"\n'
        body += f'printf "\\n" >> "{log}"\n'
        body += "exit 1\n" if name in fail else "exit 0\n"
        script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def stub_env(bin_dir: Path) -> dict[str, str]:
    """PATH with only the stubs and the system's basic tools (so a real aws/gcloud can never be found)."""
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    return env


@dataclass
class MetadataServer:
    provider: str
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    base: str = ""


def _metadata_handler(server_state: MetadataServer) -> type[BaseHTTPRequestHandler]:
    token = "tok-123"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # noqa: ARG002 - silence the request log
            return

        def _send(self, code: int, body: str) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _answer(self, method: str) -> None:
            p = server_state.provider
            server_state.requests.append((method, self.path, dict(self.headers)))
            h = self.headers
            if p == "aws":
                if method == "PUT" and self.path == "/latest/api/token":
                    if h.get("X-aws-ec2-metadata-token-ttl-seconds"):
                        return self._send(200, token)
                    return self._send(400, "")
                if method == "GET" and h.get("X-aws-ec2-metadata-token") != token:
                    return self._send(401, "")
                answers = {
                    "/latest/meta-data/instance-id": "i-0abc123def4567890",
                    "/latest/meta-data/placement/region": "us-east-2",
                }
            elif p == "gcp":
                if h.get("Metadata-Flavor") != "Google":
                    return self._send(403, "")
                answers = {
                    "/computeMetadata/v1/instance/name": "train-a100",
                    "/computeMetadata/v1/instance/zone": "projects/123456/zones/us-central1-a",
                    "/computeMetadata/v1/project/project-id": "my-proj",
                }
            elif p == "azure":
                if h.get("Metadata") != "true":
                    return self._send(400, "")
                doc = {"compute": {"name": "vm-gpu", "resourceGroupName": "rg-ml", "subscriptionId": "sub-1"}}
                answers = {"/metadata/instance?api-version=2021-02-01": json.dumps(doc)}
            elif p == "alibaba":
                answers = {
                    "/latest/meta-data/instance-id": "i-bp67acfmxazb4ph1",
                    "/latest/meta-data/region-id": "cn-hangzhou",
                }
            else:
                answers = {}
            if method == "GET" and self.path in answers:
                return self._send(200, answers[self.path])
            return self._send(404, "")

        def do_GET(self) -> None:
            self._answer("GET")

        def do_PUT(self) -> None:
            self._answer("PUT")

    return Handler


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def metadata_server(provider: str) -> Iterator[MetadataServer]:
    state = MetadataServer(provider)
    with serve(_metadata_handler(state)) as base:
        state.base = base
        yield state


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # noqa: ARG002 - silence the request log
            return

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length", "0"))
            got.append({"path": self.path, **json.loads(self.rfile.read(n))})
            self.send_response(204)
            self.end_headers()

    with serve(Handler) as base:
        yield base, got
