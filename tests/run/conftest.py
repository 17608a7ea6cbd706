"""Fixtures for `gpuwise run`: an isolated data dir, a real S3-compatible endpoint (moto's server on
127.0.0.1, a random port) reached through s3fs, a fake cloud metadata server on loopback, and a helper that
starts `gpuwise run` as a real process (signals and SIGKILL need one)."""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from run_support import FAKE_KEY_ID, FAKE_SECRET, S3, FakeMetadata, Result

_LAUNCHER_VARS = (
    "GPUWISE_RUN_ID",
    "SKYPILOT_TASK_ID",
    "DSTACK_RUN_NAME",
    "SLURM_JOB_ID",
    "GPUWISE_RESUME_FROM",
)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUWISE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GPUWISE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("GPUWISE_CHECKPOINT_DIR", str(tmp_path / "ckpt"))
    for var in _LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3:
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = "ckpt-" + uuid.uuid4().hex[:12]
    client.create_bucket(Bucket=bucket)
    return S3(moto_endpoint, bucket, client)


@pytest.fixture
def metadata() -> Iterator[FakeMetadata]:
    state = FakeMetadata()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # silence the request log
            pass

        def _answer(self, method: str) -> None:
            state.requests.append((method, self.path, {k.lower(): v for k, v in self.headers.items()}))
            if method == "PUT" and self.path == "/latest/api/token":
                code, body = 200, state.token
            elif (
                self.path.startswith("/latest/")
                and self.headers.get("X-aws-ec2-metadata-token") != state.token
            ):
                code, body = 401, "no token"
            elif (
                self.path.startswith("/computeMetadata/") and self.headers.get("Metadata-Flavor") != "Google"
            ):
                code, body = 403, "missing Metadata-Flavor"
            elif self.path.startswith("/metadata/") and self.headers.get("Metadata") != "true":
                code, body = 400, "missing Metadata header"
            else:
                code, body = state.routes.get(self.path, (404, "not found"))
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_PUT(self) -> None:
            self._answer("PUT")

        def do_POST(self) -> None:  # Azure's StartRequests: recorded with its arrival time, then answered
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.posts.append((time.time(), self.path, body))
            self._answer("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def gw(capfd: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run a gpuwise command in this process (no interpreter start-up: the slow part of these tests on a
    busy machine). The job's own output is captured at the file descriptors."""
    from gpuwise.cli.main import main

    def call(*args: str, env: dict[str, str] | None = None, timeout_s: float = 0) -> Result:
        saved = dict(os.environ)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        capfd.readouterr()
        try:
            code = main(list(args))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        out, err = capfd.readouterr()
        return Result(code, out, err)

    return call
