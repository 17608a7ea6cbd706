"""The Prometheus exporter (CONTRACTS §7): a custom collector and a small HTTP server.

`GpuCollector.collect()` reads the probe afresh on every scrape and yields new metric families, so a
process that ended or a GPU that vanished leaves no stale series. GPU metrics use NVIDIA
dcgm-exporter's names, units and labels (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`,
`hostname`); a reading that is not supported or failed is simply absent for that GPU (never a
sentinel). gpuwise's own metrics start with `gpuwise_`. The collector is registered in an injected
`CollectorRegistry`, never in prometheus-client's global default one.

The server is `http.server.ThreadingHTTPServer` calling `generate_latest(registry)`, so the bearer
token check is ours: with a token configured every request to /metrics needs
`Authorization: Bearer <token>` (401 otherwise). Tokens and headers are never logged.
"""

from __future__ import annotations

import hmac
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from gpuwise.errors import GpuwiseError
from gpuwise.gpu.sample import Sample, Snapshot, value_or_none
from gpuwise.monitor.hints import Hint
from gpuwise.monitor.record import throttle_mask
from gpuwise.monitor.source import Probe
from gpuwise.units import MIB

log = logging.getLogger("gpuwise.monitor.exporter")

LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname"]


def _num(reading: object) -> float | None:
    """A numeric reading as float (bools count 0/1); None for NotSupported/Failed or a non-number."""
    if isinstance(reading, int | float):
        return float(reading)
    return None


def _fb_free(s: Sample) -> float | None:
    used, total = value_or_none(s.memory_used_bytes), value_or_none(s.memory_total_bytes)
    return None if used is None or total is None else (total - used) / MIB


def _mib(reading: object) -> float | None:
    v = _num(reading)
    return None if v is None else v / MIB


def _mask(s: Sample) -> float | None:
    reasons = value_or_none(s.throttle_reasons)
    return None if reasons is None else float(throttle_mask(reasons))


def _xid_last(s: Sample) -> float | None:
    # dcgm-exporter's XID_ERRORS is the value (code) of the last Xid seen; 0 when none was.
    last = _num(s.xid_last)
    if last is not None:
        return last
    count = _num(s.xid_errors)
    return 0.0 if count == 0 else None


# (name, type, help, value) — names, units and types as dcgm-exporter's default-counters.csv.
DCGM_METRICS: list[tuple[str, str, str, Callable[[Sample], float | None]]] = [
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", lambda s: _num(s.util_gpu_pct)),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", lambda s: _num(s.util_memory_pct)),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", lambda s: _num(s.util_encoder_pct)),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", lambda s: _num(s.util_decoder_pct)),
    (
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "Framebuffer memory used (in MiB).",
        lambda s: _mib(s.memory_used_bytes),
    ),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", _fb_free),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", lambda s: _num(s.temperature_c)),
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        "gauge",
        "Memory temperature (in C).",
        lambda s: _num(s.memory_temperature_c),
    ),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", lambda s: _num(s.power_draw_watts)),
    (
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "gauge",
        "Power management limit (in W).",
        lambda s: _num(s.power_limit_watts),
    ),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", lambda s: _num(s.sm_clock_mhz)),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        "gauge",
        "Memory clock frequency (in MHz).",
        lambda s: _num(s.memory_clock_mhz),
    ),
    ("DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed (in %).", lambda s: _num(s.fan_speed_pct)),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", _xid_last),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "counter",
        "Total number of PCIe retries.",
        lambda s: _num(s.pcie_replay_count),
    ),
    (
        "DCGM_FI_DEV_PCIE_LINK_GEN",
        "gauge",
        "PCIe current link generation.",
        lambda s: _num(s.pcie_gen_current),
    ),
    (
        "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "gauge",
        "PCIe current link width.",
        lambda s: _num(s.pcie_width_current),
    ),
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "gauge",
        "Current clock throttle reasons (bitmask of nvml reasons).",
        _mask,
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
        lambda s: _num(s.ecc_corrected_volatile),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
        lambda s: _num(s.ecc_uncorrected_volatile),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "counter",
        "Total number of double-bit persistent ECC errors.",
        lambda s: _num(s.ecc_uncorrected_aggregate),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors.",
        lambda s: _num(s.remapped_rows_correctable),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors.",
        lambda s: _num(s.remapped_rows_uncorrectable),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "Whether remapping of rows has failed.",
        lambda s: _num(s.remapped_rows_failure),
    ),
]

GPUWISE_METRICS = [
    "gpuwise_gpu_up",
    "gpuwise_probe_up",
    "gpuwise_hint",
    "gpuwise_idle_seconds",
    "gpuwise_price_usd_per_hour",
    "gpuwise_cost_usd_total",
    "gpuwise_process_gpu_memory_bytes",
    "gpuwise_gpu_processes",
    "gpuwise_scrape_duration_seconds",
    "gpuwise_throttled",
]


def served_metric_names() -> set[str]:
    """Every metric name the exporter can serve (the Grafana dashboard test checks against it)."""
    return {name for name, *_ in DCGM_METRICS} | set(GPUWISE_METRICS)


def _family(name: str, kind: str, doc: str) -> Metric:
    if kind == "counter":
        # dcgm-exporter serves counters without the `_total` suffix prometheus-client would add to a
        # CounterMetricFamily; a raw Metric keeps the exact name while still typing it a counter.
        return Metric(name, doc, "counter")
    return GaugeMetricFamily(name, doc, labels=LABELS)


class GpuCollector(Collector):
    """Fresh dcgm-compatible and gpuwise metric families from one probe read per scrape."""

    def __init__(
        self,
        probe: Probe,
        *,
        clock: Callable[[], float] = time.time,
        hostname: str | None = None,
        price_usd_per_hour: float | None = None,
        idle_threshold_pct: float = 5.0,
        on_snapshot: Callable[[Snapshot], None] | None = None,
        idle_seconds: Callable[[], float | None] | None = None,
        hints: Callable[[], Sequence[Hint]] | None = None,
    ) -> None:
        self.probe = probe
        self.clock = clock
        self.hostname = hostname if hostname is not None else socket.gethostname()
        self.price_usd_per_hour = price_usd_per_hour
        self.idle_threshold_pct = idle_threshold_pct
        # When given (the CLI passes the idle policy's tracker), gpuwise_idle_seconds is the idle
        # policy's own answer; otherwise a simple "every GPU at or below the threshold" clock.
        self.idle_seconds = idle_seconds
        self.hints = hints  # the background sampler's latest bottleneck hints, served as gpuwise_hint
        self.on_snapshot = on_snapshot
        self.started_s = clock()
        self._last_busy_s = self.started_s
        self._known: dict[int, list[str]] = {}  # GPU index -> labels, to report a vanished GPU as down
        self._lock = threading.Lock()

    def describe(self) -> list[Metric]:
        # Returning nothing keeps registration from calling collect() (a probe read) up front.
        return []

    def collect(self) -> Iterator[Metric]:
        start = time.perf_counter()
        with self._lock:
            try:
                snapshot = self.probe.read()
            except GpuwiseError as exc:
                # The driver stopped answering: every GPU is down for this scrape, the scrape itself
                # still succeeds so Prometheus records the outage instead of a gap.
                log.warning("reading the GPUs failed: %s", exc.render())
                snapshot = Snapshot(samples=(), errors=(exc.message,))
            now = self.clock()
            families = self._families(snapshot, now)
        if self.on_snapshot is not None:
            self.on_snapshot(snapshot)
        yield from families
        took = GaugeMetricFamily(
            "gpuwise_scrape_duration_seconds", "Time gpuwise spent reading the GPUs and building this scrape."
        )
        took.add_metric([], time.perf_counter() - start)
        yield took

    def _labels(self, s: Sample) -> list[str]:
        bus = value_or_none(s.bus_id) or ""
        return [
            str(s.index),
            value_or_none(s.uuid) or "",
            bus,
            f"nvidia{s.index}",
            value_or_none(s.name) or "",
            self.hostname,
        ]

    def _families(self, snapshot: Snapshot, now: float) -> list[Metric]:
        families = {name: _family(name, kind, doc) for name, kind, doc, _ in DCGM_METRICS}
        up = GaugeMetricFamily(
            "gpuwise_gpu_up", "1 when the GPU answered this scrape, 0 when lost.", labels=LABELS
        )
        throttled = GaugeMetricFamily(
            "gpuwise_throttled",
            "1 while a clock-event (throttle) reason is active, per reason.",
            labels=[*LABELS, "reason"],
        )
        proc_mem = GaugeMetricFamily(
            "gpuwise_process_gpu_memory_bytes",
            "GPU memory used by a process (bytes).",
            labels=[*LABELS, "pid", "name"],
        )
        nprocs = GaugeMetricFamily("gpuwise_gpu_processes", "Processes using the GPU.", labels=LABELS)
        present: set[int] = set()
        busy = False
        for s in snapshot.samples:
            present.add(s.index)
            labels = self._labels(s)
            self._known[s.index] = labels
            up.add_metric(labels, 0.0 if s.lost else 1.0)
            if s.lost:
                continue
            for name, kind, _, getter in DCGM_METRICS:
                value = getter(s)
                if value is None:
                    continue
                fam = families[name]
                if kind == "counter":
                    fam.add_sample(name, dict(zip(LABELS, labels, strict=True)), value)
                else:
                    fam.add_metric(labels, value)  # type: ignore[attr-defined]  # a GaugeMetricFamily
            reasons = value_or_none(s.throttle_reasons)
            if reasons is not None:
                for r in reasons:
                    throttled.add_metric([*labels, r], 1.0)
            procs = value_or_none(s.processes)
            if procs is not None:
                nprocs.add_metric(labels, float(len(procs)))
                for p in procs:
                    mem = value_or_none(p.used_memory_bytes)
                    if mem is not None:
                        proc_mem.add_metric([*labels, str(p.pid), p.name], float(mem))
            util = _num(s.util_gpu_pct)
            enc = max(_num(s.util_encoder_pct) or 0.0, _num(s.util_decoder_pct) or 0.0)
            if (util is not None and util > self.idle_threshold_pct) or enc > self.idle_threshold_pct:
                busy = True
        for index, labels in self._known.items():
            if index not in present:
                up.add_metric(labels, 0.0)
        if busy:
            self._last_busy_s = now
        policy_idle = self.idle_seconds() if self.idle_seconds is not None else None
        if policy_idle is not None:
            idle = GaugeMetricFamily(
                "gpuwise_idle_seconds",
                "Seconds the machine has been idle by gpuwise's idle policy (GPU util, memory, processes"
                " and signals), counted from exporter start.",
            )
            idle.add_metric([], max(0.0, policy_idle))
        else:
            idle = GaugeMetricFamily(
                "gpuwise_idle_seconds",
                f"Seconds since any GPU was last above {self.idle_threshold_pct:g}% utilization "
                "(or its video engines were busy), counted from exporter start.",
            )
            idle.add_metric([], max(0.0, now - self._last_busy_s))
        hint_family = GaugeMetricFamily(
            "gpuwise_hint",
            "1 while a bottleneck hint holds for a GPU (hint: input_bound, throttled, memory_nearly_full, "
            "pcie_below_max, gpu_idle_while_peers_busy, encoder_bound).",
            labels=[*LABELS, "hint", "severity"],
        )
        shown: set[tuple[int, str]] = set()
        for h in self.hints() if self.hints is not None else ():
            gpu_labels = self._known.get(h.gpu) if h.gpu is not None else None
            if gpu_labels is not None and h.gpu in present and (h.gpu, h.id) not in shown:
                shown.add((h.gpu, h.id))
                hint_family.add_metric([*gpu_labels, h.id, h.severity], 1.0)
        probe_up = GaugeMetricFamily(
            "gpuwise_probe_up",
            "1 when the last read of the GPUs succeeded without errors "
            "(0: NVML or nvidia-smi failed, or found no GPU).",
        )
        probe_up.add_metric([], 0.0 if snapshot.errors or not snapshot.samples else 1.0)
        out: list[Metric] = [f for f in families.values() if f.samples]
        out += [up, throttled, proc_mem, nprocs, idle, probe_up, hint_family]
        if self.price_usd_per_hour is not None:
            price = GaugeMetricFamily(
                "gpuwise_price_usd_per_hour", "Configured price of this machine (USD/hour)."
            )
            price.add_metric([], self.price_usd_per_hour)
            cost = CounterMetricFamily(
                "gpuwise_cost_usd",
                "Cost accumulated at the configured price since the exporter started (USD).",
            )
            cost.add_metric([], self.price_usd_per_hour * max(0.0, now - self.started_s) / 3600.0)
            out += [price, cost]
        return out


_COUNTER_FIXES = [
    (f"# {word} {name}_total ".encode(), f"# {word} {name} ".encode())
    for name, kind, *_ in DCGM_METRICS
    if kind == "counter"
    for word in ("HELP", "TYPE")
]


def exposition(registry: CollectorRegistry) -> bytes:
    """The Prometheus text format for ``registry``, with dcgm-exporter's counter names kept exact.

    prometheus-client writes a counter family's HELP/TYPE lines as `<name>_total`; dcgm-exporter's
    counters (`DCGM_FI_DEV_PCIE_REPLAY_COUNTER`, …) have no suffix, so those comment lines are renamed
    back to match their samples.
    """
    body = generate_latest(registry)
    for old, new in _COUNTER_FIXES:
        body = body.replace(old, new)
    return body


def make_registry(collector: Collector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


class _Handler(BaseHTTPRequestHandler):
    server: ExporterServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path not in ("/metrics", "/"):
            self._send(404, b"not found\n", "text/plain; charset=utf-8")
            return
        if path == "/":
            self._send(200, b"gpuwise exporter: metrics at /metrics\n", "text/plain; charset=utf-8")
            return
        if not self.server.authorized(self.headers.get("Authorization")):
            self._send(
                401,
                b"unauthorized: send Authorization: Bearer <token>\n",
                "text/plain; charset=utf-8",
                extra={"WWW-Authenticate": 'Bearer realm="gpuwise"'},
            )
            return
        try:
            body = exposition(self.server.registry)
        except Exception:  # a probe fault must not kill the server; Prometheus marks the scrape failed
            log.exception("scrape failed")
            self._send(500, b"scrape failed; see the exporter log\n", "text/plain; charset=utf-8")
            return
        self._send(200, body, CONTENT_TYPE_LATEST)

    def _send(self, code: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        # Only the request line and status; never headers (they may carry the token).
        log.debug("%s %s", self.address_string(), format % args)


class ExporterServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], registry: CollectorRegistry, token: str | None) -> None:
        self.registry = registry
        self._token = token.encode() if token else None
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.address_family = family
        super().__init__(address, _Handler)

    def authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), self._token)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
