"""How much the monitor and the exporter cost: CPU time per sample and scrape latency for 8 GPUs.

Replays 8 GPUs (the 8x H100 `nvidia-smi -q` recording from ../shared, and the constructed 8-GPU
time series in tests/fixtures/monitor) and measures:

* CPU time per sample: one probe read; one sampler tick (read + hints + alerts); a tick that also
  writes history to SQLite.
* Scrape latency: HTTP GET /metrics against the exporter on 127.0.0.1 (median, p95), and the
  in-process time to build the exposition text.

On a machine with an NVIDIA GPU it also times one NVML sample against one
`nvidia-smi --query-gpu` call. Exits 1 when the median scrape takes 10 ms or more.

    .venv/bin/python benchmarks/monitor_overhead.py [--scrapes 300] [--samples 300]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from gpuwise.gpu.probe import open_probe
from gpuwise.monitor.alerts import AlertEngine, AlertsConfig
from gpuwise.monitor.exporter import ExporterServer, GpuCollector, exposition, make_registry
from gpuwise.monitor.history import HistoryStore
from gpuwise.monitor.sampler import Sampler

REPO = Path(__file__).resolve().parent.parent
RECORDINGS = {
    "8x H100 -q text (snapshot)": REPO.parent
    / "shared/fixtures/nvidia-smi/query-text/8x-h100__sw-power-cap-sw-thermal__535.183.01.txt",
    "8x H100 CSV (time series)": REPO / "tests/fixtures/monitor/8x-h100__training__constructed.csv",
}
SCRAPE_TARGET_MS = 10.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_per_call_us(fn: Callable[[], object], n: int) -> float:
    fn()  # warm up caches and imports
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def measure(name: str, path: Path, samples: int, scrapes: int) -> float:
    probe = open_probe(path, loop=True)
    n_gpus = len(probe.read().samples)
    print(f"\n{name}: {path.name} ({n_gpus} GPUs)")
    read_us = cpu_per_call_us(probe.read, samples)
    sampler = Sampler(probe, alerts=AlertEngine.from_config(AlertsConfig()))
    tick_us = cpu_per_call_us(sampler.tick, samples)
    with tempfile.TemporaryDirectory() as tmp:
        store = HistoryStore(Path(tmp) / "h.sqlite")
        alerts = AlertEngine.from_config(AlertsConfig())
        with_history = Sampler(probe, alerts=alerts, history=store, history_every_s=0.0)
        hist_us = cpu_per_call_us(with_history.tick, samples)
        store.close()
    print(f"  CPU per sample: probe read {read_us:.1f} µs; tick (hints, alerts) {tick_us:.1f} µs;")
    print(f"  tick + SQLite history {hist_us:.1f} µs")

    registry = make_registry(GpuCollector(probe, hostname="bench"))
    build_ms = [0.0] * scrapes
    for i in range(scrapes):
        t0 = time.perf_counter()
        exposition(registry)
        build_ms[i] = (time.perf_counter() - t0) * 1e3
    server = ExporterServer(("127.0.0.1", 0), registry, token=None)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    http_ms: list[float] = []
    size = 0
    try:
        for _ in range(scrapes):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url, timeout=5) as resp:
                size = len(resp.read())
            http_ms.append((time.perf_counter() - t0) * 1e3)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        probe.close()
    med = statistics.median(http_ms)
    p95 = pct(http_ms, 0.95)
    built, built95 = statistics.median(build_ms), pct(build_ms, 0.95)
    print(f"  scrape over HTTP ({scrapes}x, {size} bytes): median {med:.2f} ms, p95 {p95:.2f} ms")
    print(f"  building the text in-process: median {built:.2f} ms, p95 {built95:.2f} ms")
    return med


def compare_with_real_gpu() -> None:
    """One NVML sample versus one nvidia-smi --query-gpu call, when this machine has a GPU."""
    try:
        from gpuwise.gpu.nvml import NvmlProbe

        nvml = NvmlProbe()
    except Exception as exc:  # no driver, no GPU: say so and move on
        print(f"\nreal GPU: not available here ({type(exc).__name__}); NVML vs nvidia-smi comparison skipped")
        return
    nvml.read()
    t0 = time.perf_counter()
    n = 20
    for _ in range(n):
        snap = nvml.read()
    nvml_ms = (time.perf_counter() - t0) / n * 1e3
    nvml.close()
    print(f"\nreal GPU ({len(snap.samples)} GPUs): one NVML sample {nvml_ms:.2f} ms")
    smi = shutil.which("nvidia-smi")
    if smi is None:
        print("  nvidia-smi not found: comparison skipped")
        return
    query = "timestamp,index,utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm"
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run(
            [smi, f"--query-gpu={query}", "--format=csv"], capture_output=True, check=False, timeout=30
        )
        times.append((time.perf_counter() - t0) * 1e3)
    smi_ms = statistics.median(times)
    print(f"  one nvidia-smi --query-gpu call {smi_ms:.1f} ms (median of 5)")
    print(f"  NVML is {smi_ms / nvml_ms:.0f}x faster")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--scrapes", type=int, default=300)
    args = parser.parse_args()
    print(
        f"monitor overhead (python {sys.version.split()[0]}); target: median scrape < {SCRAPE_TARGET_MS:g} ms"
    )
    worst = 0.0
    for name, path in RECORDINGS.items():
        if not path.exists():
            print(f"\n{name}: {path} missing, skipped")
            continue
        worst = max(worst, measure(name, path, args.samples, args.scrapes))
    compare_with_real_gpu()
    ok = worst < SCRAPE_TARGET_MS
    verdict = "OK" if ok else "TOO SLOW"
    print(f"\nworst median scrape {worst:.2f} ms: {verdict} (target < {SCRAPE_TARGET_MS:g} ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
