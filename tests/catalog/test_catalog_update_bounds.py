"""`catalog update` against hostile loopback servers: one that streams forever, one that announces a huge
body, one that drips a byte at a time. Each ends with a clear error, in bounded time, and the old catalog
stays."""

from __future__ import annotations

import http.server
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from gpuwise.catalog.download import download_catalog, http_fetch
from gpuwise.cli.main import main
from gpuwise.errors import CatalogError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "catalog"
TODAY = date(2026, 11, 30)
HEADER = b"InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"


class _Hostile(http.server.BaseHTTPRequestHandler):
    """Serves every vms.csv in the way ``server.mode`` says; 404 for anything else."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        mode = self.server.mode  # type: ignore[attr-defined]
        if not self.path.endswith("/v9/lambda/vms.csv"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        try:
            if mode == "endless":  # no length, never ends
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(HEADER)
                row = b"x,H100,1,8,32,2.0,,us\n" * 1000
                while not self.server.stopping:  # type: ignore[attr-defined]
                    self.wfile.write(row)
            elif mode == "huge":  # announces 10 GB
                self.send_header("Content-Length", str(10 * 1024**3))
                self.end_headers()
                self.wfile.write(HEADER)
            elif mode == "drip":  # one byte every 20 ms, forever
                self.send_header("Connection", "close")
                self.end_headers()
                while not self.server.stopping:  # type: ignore[attr-defined]
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def hostile() -> Iterator[tuple[str, http.server.ThreadingHTTPServer]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    server.stopping = False  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/catalogs", server
    finally:
        server.stopping = True  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.timeout(60)
def test_a_body_that_never_ends_stops_at_the_size_cap(
    hostile: tuple[str, http.server.ThreadingHTTPServer],
) -> None:
    base, server = hostile
    server.mode = "endless"  # type: ignore[attr-defined]
    fetch = http_fetch(30.0, max_file_bytes=2 << 20)
    with pytest.raises(CatalogError, match="larger than 2 MiB"):
        download_catalog(base, fetch, today=TODAY, schema_version=9)
    fetch = http_fetch(30.0, max_total_bytes=1 << 20)
    with pytest.raises(CatalogError, match="the files together is larger than 1 MiB"):
        download_catalog(base, fetch, today=TODAY, schema_version=9)


@pytest.mark.timeout(60)
def test_a_huge_announced_body_is_refused_before_reading(
    hostile: tuple[str, http.server.ThreadingHTTPServer],
) -> None:
    base, server = hostile
    server.mode = "huge"  # type: ignore[attr-defined]
    started = time.monotonic()
    with pytest.raises(CatalogError, match="announces 10,737,418,240 bytes"):
        download_catalog(base, http_fetch(30.0), today=TODAY, schema_version=9)
    assert time.monotonic() - started < 20


@pytest.mark.timeout(60)
def test_a_dripping_server_stops_at_the_request_and_total_time_caps(
    hostile: tuple[str, http.server.ThreadingHTTPServer],
) -> None:
    base, server = hostile
    server.mode = "drip"  # type: ignore[attr-defined]
    started = time.monotonic()
    # each byte arrives well within the socket timeout: only the per-request bound ends it
    with pytest.raises(CatalogError, match="longer than --timeout-s 1 s"):
        download_catalog(base, http_fetch(1.0), today=TODAY, schema_version=9)
    assert time.monotonic() - started < 15
    started = time.monotonic()
    with pytest.raises(CatalogError, match="the whole update took longer than 1 s"):
        download_catalog(base, http_fetch(30.0, total_timeout_s=1.0), today=TODAY, schema_version=9)
    assert time.monotonic() - started < 15


@pytest.mark.timeout(90)
def test_cli_update_from_a_hostile_server_keeps_the_old_catalog(
    hostile: tuple[str, http.server.ThreadingHTTPServer],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, server = hostile
    target = tmp_path / "catalog"
    shutil.copy(FIXTURES / "own.csv", tmp_path / "own.csv")
    assert main(["catalog", "import", str(tmp_path / "own.csv"), "--catalog-dir", str(target)]) == 0
    before = sorted((p.name, p.read_bytes()) for p in target.iterdir())
    capsys.readouterr()
    server.mode = "drip"  # type: ignore[attr-defined]
    started = time.monotonic()
    args = ["catalog", "update", "--base-url", base, "--catalog-dir", str(target), "--schema-version", "9"]
    assert main([*args, "--total-timeout-s", "1", "--timeout-s", "0.5"]) == 1
    assert time.monotonic() - started < 20
    err = capsys.readouterr().err
    assert "stopped" in err and "nothing was changed" in err and "To fix:" in err
    assert sorted((p.name, p.read_bytes()) for p in target.iterdir()) == before
