"""Fakes for the provider stop calls (not a test module): one recording HTTP server on 127.0.0.1 that plays
every provider API (it records method, path, body and headers, and answers with the statuses it is told),
and recorded identities (platform variables, metadata answers)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str:
        """A header by name, whatever its case (urllib sends `Api_key` for `api_key`)."""
        found = {k.lower(): v for k, v in self.headers.items()}
        return found[name.lower()]


@dataclass
class FakeApi:
    """Answers `statuses` in turn (then the last one for ever) with `answer` as the JSON body; serves
    `metadata` (path -> text) for GETs of those paths. A metadata service is `FakeApi(metadata=…,
    statuses=[404])`: every other path is 404, as the real ones answer."""

    statuses: list[int] = field(default_factory=lambda: [200])
    answer: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    base: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def calls(self) -> list[Recorded]:
        return [r for r in self.requests if r.path not in self.metadata]


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # noqa: ARG002 - silence the request log
            return

        def _answer(self) -> None:
            n = int(self.headers.get("Content-Length", "0") or 0)
            body = self.rfile.read(n) if n else b""
            if self.command == "GET" and self.path in api.metadata:
                data = api.metadata[self.path].encode()
                code = 200
            else:
                with api._lock:
                    api.requests.append(Recorded(self.command, self.path, body, dict(self.headers)))
                    calls = len(api.calls())
                code = api.statuses[min(calls, len(api.statuses)) - 1]
                data = json.dumps(api.answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def do_PUT(self) -> None:
            self._answer()

        def do_PATCH(self) -> None:
            self._answer()

    return Handler


@contextmanager
def fake_api(**kwargs: Any) -> Iterator[FakeApi]:
    api = FakeApi(**kwargs)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    api.base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# Metadata answers as the providers document them (Tencent: tencentcloud.com/document/product/213/4934;
# Huawei: support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0166.html, its example's keys).
TENCENT_METADATA = {
    "/latest/meta-data/instance-id": "ins-a1b2c3d4",
    "/latest/meta-data/placement/region": "ap-guangzhou",
}
HUAWEI_META_DATA = {
    "uuid": "616fb98f-46ca-475e-917e-2563e5a8cd19",
    "project_id": "0b9c7e2a6f8d4e1b8c3a5d7f9e1b2c4d",
    "availability_zone": "cn-north-4a",
    "hostname": "ecs-gpu.novalocal",
    "name": "ecs-gpu",
    "meta": {
        "metering.image_id": "img-1",
        "metering.resourcespeccode": "p2s.2xlarge.8",
        "charging_mode": "0",
    },
}
PLAIN_OPENSTACK_META_DATA = {
    "uuid": "11111111-2222-3333-4444-555555555555",
    "project_id": "abc",
    "availability_zone": "nova",
    "meta": {},
}
