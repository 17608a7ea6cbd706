"""Done-when: a real Prometheus server scrapes `gpuwise exporter --replay …` on loopback, and the values
read back through Prometheus's HTTP API match the recording."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from monitor_fakes import EIGHT_GPU_CSV

from gpuwise.gpu.smi_csv import read_query_csv

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    what: str, check: Callable[[], Any], timeout_s: float, proc: subprocess.Popen[bytes] | None = None
) -> Any:
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            pytest.fail(f"{what}: process exited with {proc.returncode}: {out[-2000:]}")
        try:
            got = check()
        except (OSError, urllib.error.URLError, ValueError) as exc:
            got, last = None, exc
        if got:
            return got
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what} (last: {last!r})")


def http_get(url: str, token: str | None = None) -> str:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=3) as resp:
        return str(resp.read().decode())


TOKEN = "prom-scrape-token-0123"
AUTH = f"    authorization:\n      type: Bearer\n      credentials: {TOKEN}\n"


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if proc.stdout:
        proc.stdout.close()


def start_exporter(
    replay: Path, port: int, env: dict[str, str], *extra: str, token: str | None = None
) -> subprocess.Popen[bytes]:
    cli = [sys.executable, "-c", "from gpuwise.cli.main import run; run()"]
    cmd = [*cli, "exporter", "--replay", str(replay), "--port", str(port), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/metrics"
    wait_for("the exporter", lambda: "DCGM_FI_DEV_GPU_UTIL" in http_get(url, token), 20, proc)
    return proc


@pytest.fixture
def exporters(tmp_path: Path, smi_fixtures: Path) -> Iterator[dict[str, int]]:
    ports = {"series": free_port(), "h100": free_port()}
    procs = []
    # the series exporter wants a bearer token (from the environment); its price comes from the config file
    config = tmp_path / "config.toml"
    config.write_text("[machine]\nprice_usd_per_hour = 98.32\n")
    token_env = {**os.environ, "GPUWISE_EXPORTER_TOKEN": TOKEN}
    try:
        args = ("--config", str(config))
        procs.append(start_exporter(EIGHT_GPU_CSV, ports["series"], token_env, *args, token=TOKEN))
        h100 = smi_fixtures / "query-text" / "8x-h100__sw-power-cap-sw-thermal__535.183.01.txt"
        procs.append(start_exporter(h100, ports["h100"], dict(os.environ)))
        yield ports
    finally:
        for p in procs:
            stop(p)


@pytest.fixture
def prometheus(
    tmp_path: Path, exporters: dict[str, int], need_program: Callable[[str], str]
) -> Iterator[str]:
    binary = need_program("prometheus")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n"
        + "".join(
            f"  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{p}']\n"
            + (AUTH if job == "series" else "")
            for job, p in exporters.items()
        )
    )
    proc = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for("prometheus to be ready", lambda: "Ready" in http_get(base + "/-/ready"), 30, proc)
        yield base
    finally:
        stop(proc)


def query(base: str, promql: str) -> list[dict[str, Any]]:
    body = json.loads(http_get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
    assert body["status"] == "success", body
    return list(body["data"]["result"])


def test_exporter_refuses_scrapes_without_the_token(exporters: dict[str, int]) -> None:
    url = f"http://127.0.0.1:{exporters['series']}/metrics"
    for token in (None, "wrong"):
        with pytest.raises(urllib.error.HTTPError) as info:
            http_get(url, token)
        assert info.value.code == 401
        info.value.close()
    assert "gpuwise_gpu_up" in http_get(url, TOKEN)


def test_prometheus_reads_back_the_recorded_values(prometheus: str) -> None:
    recorded: dict[str, set[float]] = {}
    for s in read_query_csv(EIGHT_GPU_CSV):
        assert isinstance(s.util_gpu_pct, float)
        recorded.setdefault(str(s.index), set()).add(s.util_gpu_pct)

    util = wait_for(
        "8 GPU series in Prometheus",
        lambda: (r := query(prometheus, 'DCGM_FI_DEV_GPU_UTIL{job="series"}')) and len(r) == 8 and r,
        40,
    )
    for series in util:
        labels = series["metric"]
        assert labels["modelName"] == "NVIDIA H100 80GB HBM3"
        assert labels["device"] == f"nvidia{labels['gpu']}"
        assert labels["UUID"].startswith("GPU-") and labels["pci_bus_id"] and labels["hostname"]
        assert float(series["value"][1]) in recorded[labels["gpu"]], series
    fb = {
        r["metric"]["gpu"]: float(r["value"][1])
        for r in query(prometheus, 'DCGM_FI_DEV_FB_USED{job="series"}')
    }
    assert fb["0"] == 61440 and fb["7"] == 1  # MiB, as recorded
    temp = query(prometheus, 'DCGM_FI_DEV_GPU_TEMP{job="series",gpu="3"}')
    assert float(temp[0]["value"][1]) == 87
    assert query(prometheus, 'up{job="series"}')[0]["value"][1] == "1"
    price = query(prometheus, "gpuwise_price_usd_per_hour")
    assert float(price[0]["value"][1]) == 98.32
    assert float(query(prometheus, "gpuwise_cost_usd_total")[0]["value"][1]) > 0

    # the -q text snapshot of 8 H100s: one GPU recorded "Replays Since Reset: 120"
    replays = wait_for(
        "the PCIe replay counter",
        lambda: query(prometheus, 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{job="h100"}'),
        20,
    )
    assert len(replays) == 8
    assert 120.0 in {float(r["value"][1]) for r in replays}
    sm = query(prometheus, 'DCGM_FI_DEV_SM_CLOCK{job="h100",pci_bus_id=~".*75:00.0"}')
    assert len(sm) == 1
    throttled = query(prometheus, 'gpuwise_throttled{job="h100",reason="sw_thermal_slowdown"}')
    assert [r["metric"]["pci_bus_id"].lower()[-7:] for r in throttled] == ["75:00.0"]
