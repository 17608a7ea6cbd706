"""What prometheus-client's WSGI app brings to the exporter, over real HTTP on loopback: gzip, OpenMetrics
negotiation, HEAD, keep-alive; plus the driver-version label and counter names in both formats."""

from __future__ import annotations

import gzip
import http.client
import threading
from collections.abc import Iterator

import pytest
from monitor_fakes import FakeProbe, gpu, snap
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from test_monitor_exporter import parse_exposition

from gpuwise.gpu.sample import Snapshot
from gpuwise.monitor.exporter import DRIVER_LABEL, ExporterServer, GpuCollector, exposition, make_registry

pytestmark = pytest.mark.timeout(30)

TOKEN = "s3cret-token"
OPENMETRICS = "application/openmetrics-text; version=1.0.0"
# what Prometheus 2.x sends: OpenMetrics preferred, the text format as a fallback
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


@pytest.fixture
def port() -> Iterator[int]:
    probe = FakeProbe(
        [Snapshot(samples=(gpu(0, pcie_replay_count=120), gpu(1)), driver_version="535.183.01")]
    )
    server = ExporterServer(("127.0.0.1", 0), make_registry(GpuCollector(probe, hostname="h")), TOKEN)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def request(port: int, method: str = "GET", **headers: str) -> tuple[http.client.HTTPResponse, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request(method, "/metrics", headers={"Authorization": f"Bearer {TOKEN}", **headers})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp, body


def test_gzip_when_asked(port: int) -> None:
    resp, body = request(port, **{"Accept-Encoding": "gzip"})
    assert resp.status == 200 and resp.getheader("Content-Encoding") == "gzip"
    text = gzip.decompress(body).decode()
    assert "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter" in text  # dcgm's exact name and type
    assert parse_exposition(text)["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"][0][1] == 120
    plain, plain_body = request(port)
    assert plain.getheader("Content-Encoding") is None and b"DCGM_FI_DEV_GPU_UTIL{" in plain_body


@pytest.mark.parametrize("accept", [OPENMETRICS, PROMETHEUS_ACCEPT])
def test_openmetrics_when_asked(port: int, accept: str) -> None:
    resp, body = request(port, Accept=accept)
    assert resp.status == 200
    assert resp.getheader("Content-Type", "").startswith("application/openmetrics-text")
    text = body.decode()
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(text)}  # a strict OpenMetrics parser
    replay = families["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"]
    assert replay.type == "unknown"  # OpenMetrics counters must end in _total; dcgm's name is kept
    assert {s.name for s in replay.samples} == {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER"}
    zipped, zbody = request(port, Accept=accept, **{"Accept-Encoding": "gzip"})
    assert zipped.getheader("Content-Encoding") == "gzip"
    assert gzip.decompress(zbody).decode().endswith("# EOF\n")


def test_head_answers_like_get_without_a_body(port: int) -> None:
    resp, body = request(port, "HEAD")
    assert resp.status == 200 and body == b""
    assert int(resp.getheader("Content-Length", "0")) > 1000
    assert resp.getheader("Content-Type", "").startswith("text/plain")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("HEAD", "/metrics")
    assert conn.getresponse().status == 401  # HEAD needs the token too
    conn.close()


def test_keep_alive_serves_several_scrapes_on_one_connection(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    for _ in range(3):
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        resp = conn.getresponse()
        assert resp.status == 200 and b"gpuwise_gpu_up" in resp.read()
    conn.request("POST", "/metrics", body=b"x", headers={"Authorization": f"Bearer {TOKEN}"})
    assert conn.getresponse().status == 405
    conn.close()


def test_driver_version_label_when_known_and_absent_when_not() -> None:
    known = Snapshot(samples=(gpu(0),), driver_version="535.183.01")
    got = parse_exposition(exposition(make_registry(GpuCollector(FakeProbe([known]), hostname="h"))).decode())
    for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "gpuwise_gpu_up"):
        assert got[name][0][0][DRIVER_LABEL] == "535.183.01", name
    unknown = parse_exposition(
        exposition(make_registry(GpuCollector(FakeProbe([snap(gpu(0))]), hostname="h"))).decode()
    )
    assert DRIVER_LABEL not in unknown["DCGM_FI_DEV_GPU_UTIL"][0][0]  # no empty label either


def test_energy_and_reserved_memory_when_the_probe_has_them_and_absent_otherwise() -> None:
    from monitor_fakes import GIB

    probe = FakeProbe([snap(gpu(0, energy_mj=123456789.0, memory_reserved_bytes=GIB // 2), gpu(1))])
    text = exposition(make_registry(GpuCollector(probe, hostname="h"))).decode()
    got = parse_exposition(text)
    assert got["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == [(got["DCGM_FI_DEV_GPU_UTIL"][0][0], 123456789.0)]
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in text  # mJ, a counter, as dcgm-exporter
    assert [(lab["gpu"], v) for lab, v in got["DCGM_FI_DEV_FB_RESERVED"]] == [("0", 512.0)]  # MiB
    none = parse_exposition(
        exposition(make_registry(GpuCollector(FakeProbe([snap(gpu(0))]), hostname="h"))).decode()
    )
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" not in none and "DCGM_FI_DEV_FB_RESERVED" not in none


def test_reserved_memory_is_read_from_nvidia_smi_q(smi_fixtures) -> None:  # type: ignore[no-untyped-def]
    from gpuwise.gpu.probe import open_probe

    probe = open_probe(smi_fixtures / "query-text" / "8x-h100__sw-power-cap-sw-thermal__535.183.01.txt")
    got = parse_exposition(exposition(make_registry(GpuCollector(probe, hostname="h"))).decode())
    probe.close()
    assert {v for _, v in got["DCGM_FI_DEV_FB_RESERVED"]} == {551.0}  # "Reserved : 551 MiB"
    assert got["DCGM_FI_DEV_GPU_TEMP"][0][0][DRIVER_LABEL] == "535.183.01"


def test_concurrent_scrapes_share_a_collection_but_each_sees_a_read_after_it_arrived() -> None:
    import time
    from concurrent.futures import ThreadPoolExecutor

    class SlowProbe(FakeProbe):
        def read(self) -> Snapshot:
            time.sleep(0.2)
            return super().read()

    probe = SlowProbe([snap(gpu(0))])
    server = ExporterServer(("127.0.0.1", 0), make_registry(GpuCollector(probe, hostname="h")), TOKEN)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        request(port)
        request(port)
        assert probe.reads == 2  # one after the other: each scrape reads the GPUs afresh
        with ThreadPoolExecutor(10) as pool:
            statuses = [r.status for r, _ in pool.map(lambda _: request(port), range(10))]
        assert statuses == [200] * 10
        assert 2 + 2 <= probe.reads <= 2 + 3  # ten scrapes, two or three reads (not ten queued ones)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
