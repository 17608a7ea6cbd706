"""The exporter's collector and HTTP server, driven by a fake probe (no Prometheus here; see
test_monitor_prometheus.py for the real server)."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import resources

import pytest
from monitor_fakes import GIB, FakeClock, FakeProbe, gpu, snap

from gpuwise.cli.main import main
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, GpuProcess, Sample
from gpuwise.monitor.exporter import (
    LABELS,
    ExporterServer,
    GpuCollector,
    exposition,
    is_loopback,
    make_registry,
    served_metric_names,
)

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample lines by their exact name. (prometheus-client's own parser renames counter samples to
    `_total`, which would hide the very thing these tests check.)"""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, line
        labels = dict(_LABEL.findall(m.group(2) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out


def scrape(collector: GpuCollector) -> dict[str, list[tuple[dict[str, str], float]]]:
    return parse_exposition(exposition(make_registry(collector)).decode())


def by_gpu(series: list[tuple[dict[str, str], float]]) -> dict[str, float]:
    return {labels["gpu"]: value for labels, value in series}


def test_dcgm_names_labels_and_units() -> None:
    probe = FakeProbe(
        [snap(gpu(0, memory_used_bytes=10 * GIB, pcie_replay_count=120, xid_last=79, xid_errors=2))]
    )
    got = scrape(GpuCollector(probe, hostname="node-1"))
    for name in (
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    ):  # fmt: skip
        assert name in got, name
    labels, value = got["DCGM_FI_DEV_FB_USED"][0]
    assert set(labels) == set(LABELS)
    assert labels == {
        "gpu": "0",
        "UUID": "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd",
        "pci_bus_id": "00000000:10:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA H100 80GB HBM3",
        "hostname": "node-1",
    }
    assert value == 10 * 1024  # MiB, as dcgm-exporter
    assert got["DCGM_FI_DEV_FB_FREE"][0][1] == 70 * 1024
    assert got["DCGM_FI_DEV_POWER_USAGE"][0][1] == 650.0
    assert got["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"][0][1] == 120
    assert got["DCGM_FI_DEV_XID_ERRORS"][0][1] == 79  # the last Xid's code, as dcgm-exporter


def test_counters_keep_dcgm_names_without_total_suffix() -> None:
    text = exposition(make_registry(GpuCollector(FakeProbe([snap(gpu(0))]), hostname="h"))).decode()
    assert "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter" in text
    assert re.search(r"^DCGM_FI_DEV_PCIE_REPLAY_COUNTER\{", text, re.M)
    assert "DCGM_FI_DEV_PCIE_REPLAY_COUNTER_total" not in text


def test_unsupported_or_failed_reading_is_absent_not_a_sentinel() -> None:
    probe = FakeProbe(
        [snap(gpu(0, temperature_c=NOT_SUPPORTED), gpu(1, temperature_c=Failed("Unknown Error")), gpu(2))]
    )
    got = scrape(GpuCollector(probe, hostname="h"))
    assert by_gpu(got["DCGM_FI_DEV_GPU_TEMP"]) == {"2": 65.0}
    assert set(by_gpu(got["DCGM_FI_DEV_GPU_UTIL"])) == {"0", "1", "2"}
    assert "DCGM_FI_DEV_FAN_SPEED" not in got  # never supported here: no family at all


def test_each_scrape_reads_afresh_and_ended_processes_leave_no_series() -> None:
    two = (GpuProcess(1, "train", 10 * GIB), GpuProcess(2, "eval", 1 * GIB))
    probe = FakeProbe([snap(gpu(0, processes=two)), snap(gpu(0, processes=two[:1], util_gpu_pct=50.0))])
    collector = GpuCollector(probe, hostname="h")
    first = scrape(collector)
    assert {lab["pid"] for lab, _ in first["gpuwise_process_gpu_memory_bytes"]} == {"1", "2"}
    second = scrape(collector)
    assert {lab["pid"] for lab, _ in second["gpuwise_process_gpu_memory_bytes"]} == {"1"}
    assert by_gpu(second["DCGM_FI_DEV_GPU_UTIL"]) == {"0": 50.0}
    assert probe.reads == 2


def test_lost_or_vanished_gpu_is_down_and_others_still_report() -> None:
    lost = Sample(
        timestamp_s=0.0, index=1, lost=True, bus_id="00000000:11:00.0", util_gpu_pct=Failed("GPU is lost")
    )
    probe = FakeProbe([snap(gpu(0), gpu(1), gpu(2)), snap(gpu(0), lost), snap(gpu(0))])
    collector = GpuCollector(probe, hostname="h")
    assert by_gpu(scrape(collector)["gpuwise_gpu_up"]) == {"0": 1, "1": 1, "2": 1}
    second = scrape(collector)
    assert by_gpu(second["gpuwise_gpu_up"]) == {"0": 1, "1": 0, "2": 0}
    assert set(by_gpu(second["DCGM_FI_DEV_GPU_UTIL"])) == {"0"}
    assert by_gpu(scrape(collector)["gpuwise_gpu_up"]) == {"0": 1, "1": 0, "2": 0}


def test_idle_seconds_price_and_cost_follow_the_clock() -> None:
    clock = FakeClock(1000.0)
    busy, idle = snap(gpu(0)), snap(gpu(0, util_gpu_pct=0.0))
    probe = FakeProbe([busy, idle, idle])
    collector = GpuCollector(probe, clock=clock, hostname="h", price_usd_per_hour=3.6)
    clock.advance(10)
    first = scrape(collector)
    assert first["gpuwise_idle_seconds"][0][1] == 0
    assert first["gpuwise_cost_usd_total"][0][1] == pytest.approx(0.01)  # 10 s at $3.60/h
    assert first["gpuwise_price_usd_per_hour"][0][1] == 3.6
    clock.advance(30)
    scrape(collector)
    clock.advance(20)
    assert scrape(collector)["gpuwise_idle_seconds"][0][1] == 50  # idle since the busy scrape
    no_price = scrape(GpuCollector(FakeProbe([busy]), hostname="h"))
    assert "gpuwise_price_usd_per_hour" not in no_price
    assert "gpuwise_cost_usd_total" not in no_price


def test_grafana_dashboard_uses_only_served_metrics() -> None:
    text = resources.files("gpuwise.monitor").joinpath("data/grafana-dashboard.json").read_text("utf-8")
    dash = json.loads(text)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 10
    served = served_metric_names() | {"gpuwise_cost_usd_total"}
    promql_words = {
        "sum",
        "max",
        "min",
        "by",
        "rate",
        "increase",
        "or",
        "gpu",
        "reason",
        "hostname",
        "instance",
        "m",
    }
    for expr in exprs:
        stripped = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"", "", expr)
        names = {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", stripped) if w not in promql_words}
        assert names, expr
        assert names <= served, (expr, names - served)
    assert {p["id"] for p in dash["panels"]} == set(range(1, len(dash["panels"]) + 1))
    assert all({"type", "title", "gridPos"} <= set(p) for p in dash["panels"])


def test_dashboard_works_for_a_fleet() -> None:
    """Every panel can be narrowed to some exporters ($instance) and nothing sums GPUs of different
    machines into one line except the fleet's price and cost totals."""
    text = resources.files("gpuwise.monitor").joinpath("data/grafana-dashboard.json").read_text("utf-8")
    dash = json.loads(text)
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert "label_values(gpuwise_gpu_up, instance)" in variables["instance"]["definition"]
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            assert 'instance=~"$instance"' in expr, expr
            for agg in re.findall(r"\b(?:sum|max|min)\b(?: by \(([^)]*)\))?", expr):
                assert "instance" in agg or target.get("legendFormat") == "fleet", expr
            if target.get("legendFormat") != "fleet":
                assert "{{instance}}" in target.get("legendFormat", "{{instance}}"), target


def test_dashboard_covers_the_contract_metrics() -> None:
    text = resources.files("gpuwise.monitor").joinpath("data/grafana-dashboard.json").read_text("utf-8")
    wanted = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"]
    for name in [*wanted, "gpuwise_idle_seconds", "gpuwise_cost_usd_total"]:
        assert name in text


@pytest.fixture
def server_with_token() -> Iterator[str]:
    collector = GpuCollector(FakeProbe([snap(gpu(0))]), hostname="h")
    server = ExporterServer(("127.0.0.1", 0), make_registry(collector), token="s3cret-token")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        body = exc.read().decode()
        exc.close()
        return exc.code, body


def test_bearer_token_401_then_200(server_with_token: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="gpuwise")
    assert _get(server_with_token + "/metrics")[0] == 401
    assert _get(server_with_token + "/metrics", "wrong")[0] == 401
    status, body = _get(server_with_token + "/metrics", "s3cret-token")
    assert status == 200
    assert "DCGM_FI_DEV_GPU_UTIL{" in body
    assert _get(server_with_token + "/nope", "s3cret-token")[0] == 404
    assert "s3cret-token" not in caplog.text


def test_non_loopback_bind_without_token_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["exporter", "--bind", "0.0.0.0", "--port", "0"])
    assert code == 2
    assert "without a token" in capsys.readouterr().err


def test_empty_token_file_is_bad_input(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "token"
    empty.write_text("\n")
    assert main(["exporter", "--token-file", str(empty), "--port", "0"]) == 2
    assert "is empty" in capsys.readouterr().err


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.5") and not is_loopback("example.com")


def test_idle_seconds_follow_the_idle_policy_when_tracked() -> None:
    """The exporter's gpuwise_idle_seconds is the idle room's policy answer, fed by the sampler."""
    from gpuwise.idle.policy import IdlePolicy
    from gpuwise.idle.tracker import IdleTracker
    from gpuwise.monitor.sampler import Sampler

    clock = FakeClock(1000.0)
    idle_gpu = snap(gpu(0, util_gpu_pct=0.0, processes=(), memory_used_bytes=0))
    probe = FakeProbe([snap(gpu(0))] + [idle_gpu] * 20)
    tracker = IdleTracker(IdlePolicy(), clock=clock)
    sampler = Sampler(probe, observers=[tracker.observe], clock=clock)
    collector = GpuCollector(probe, clock=clock, hostname="h", idle_seconds=tracker.seconds)
    sampler.tick()  # busy at t=1000
    for _ in range(10):
        clock.advance(30)
        sampler.tick()
    # the job's memory was released at the first idle read (t=1030): the policy counts that as activity
    assert tracker.seconds() == 270.0
    assert scrape(collector)["gpuwise_idle_seconds"][0][1] == 270.0


def test_a_probe_that_fails_marks_every_gpu_down_and_the_scrape_still_answers() -> None:
    from gpuwise.errors import GpuError

    class Flaky(FakeProbe):
        def read(self):  # type: ignore[no-untyped-def]
            if self.reads == 1:
                self.reads += 1
                raise GpuError("NVML: Unknown Error")
            return super().read()

    collector = GpuCollector(Flaky([snap(gpu(0), gpu(1))]), hostname="h")
    assert scrape(collector)["gpuwise_probe_up"][0][1] == 1
    failed = scrape(collector)
    assert failed["gpuwise_probe_up"][0][1] == 0
    assert by_gpu(failed["gpuwise_gpu_up"]) == {"0": 0, "1": 0}
    assert "DCGM_FI_DEV_GPU_UTIL" not in failed


def test_hints_are_served_per_gpu_while_they_hold() -> None:
    from gpuwise.monitor.hints import Hint

    current = [
        Hint("gpu_idle_while_peers_busy", 1, "warn", "m", "e"),
        Hint("throttled", 5, "warn", "gone", ""),
    ]
    collector = GpuCollector(FakeProbe([snap(gpu(0), gpu(1))]), hostname="h", hints=lambda: current)
    (series,) = scrape(collector)["gpuwise_hint"]
    assert series[0]["gpu"] == "1" and series[0]["hint"] == "gpu_idle_while_peers_busy"
    assert series[0]["severity"] == "warn" and series[1] == 1
    current.clear()
    assert "gpuwise_hint" not in scrape(collector)  # no stale series once the hint clears
