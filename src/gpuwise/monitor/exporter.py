"""The Prometheus exporter (docs/metrics.md): a custom collector and its server.

`GpuCollector.collect()` reads the probe afresh on every scrape and yields new metric families, so a
process that ended or a GPU that vanished leaves no stale series. GPU metrics use NVIDIA
dcgm-exporter's names, units and labels (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`,
`hostname`, and `DCGM_FI_DRIVER_VERSION` when the driver version is known); a reading that is not
supported or failed is simply absent for that GPU (never a sentinel). gpuwise's own metrics start
with `gpuwise_`; `gpuwise_up` and friends report the background sampler's health (`monitor.health`).
The collector is registered in an injected `CollectorRegistry`, never in prometheus-client's global
default one.

`ExporterServer` serves it: `monitor.scrape.ExporterApp` (the bearer token checked before any work,
coalesced collections, text format or OpenMetrics, gzip, HEAD) on the bounded server of
`monitor.httpserver` (one I/O thread, timeouts, a connection cap that idle clients cannot exhaust).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gpuwise.errors import GpuwiseError
from gpuwise.gpu.sample import Sample, Snapshot, value_or_none
from gpuwise.monitor.dcgm import DCGM_METRICS, DRIVER_LABEL, LABELS, num
from gpuwise.monitor.exposition import render_text
from gpuwise.monitor.health import SamplerHealth
from gpuwise.monitor.hints import Hint
from gpuwise.monitor.httpserver import BoundedHTTPServer, Limits
from gpuwise.monitor.scrape import COUNTERS, ExporterApp
from gpuwise.monitor.source import Probe

__all__ = [  # LABELS and DRIVER_LABEL live in monitor.dcgm; served from here for callers and tests
    "DRIVER_LABEL",
    "LABELS",
    "ExporterServer",
    "GpuCollector",
    "exposition",
    "is_loopback",
    "make_registry",
    "served_metric_names",
]

log = logging.getLogger("gpuwise.monitor.exporter")

SWITCH_INTERVAL_S = 1e-4  # the GIL switch interval while serving (see ExporterServer.serve_forever)

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
    "gpuwise_up",
    "gpuwise_sampler_errors_total",
    "gpuwise_last_sample_age_seconds",
]


def served_metric_names() -> set[str]:
    """Every metric name the exporter can serve (the Grafana dashboard test checks against it)."""
    return {name for name, *_ in DCGM_METRICS} | set(GPUWISE_METRICS)


def _family(name: str, kind: str, doc: str, labels: list[str]) -> Metric:
    if kind == "counter":
        # dcgm-exporter serves counters without the `_total` suffix prometheus-client would add to a
        # CounterMetricFamily; an `unknown` Metric keeps the exact name (see monitor.scrape.COUNTERS).
        return Metric(name, doc, "unknown")
    return GaugeMetricFamily(name, doc, labels=labels)


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
        health: SamplerHealth | None = None,
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
        self.health = health  # the background sampler's health, served as gpuwise_up & co.
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
        if self.health is not None:
            yield from _health_families(self.health)
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
        # dcgm-exporter puts the driver version on every GPU series; unknown -> no such label at all
        driver = value_or_none(snapshot.driver_version)
        names, tail = ([*LABELS, DRIVER_LABEL], [driver]) if driver else (LABELS, [])
        series = _GpuSeries(names)
        present: set[int] = set()
        busy = False
        for s in snapshot.samples:
            present.add(s.index)
            self._known[s.index] = self._labels(s)
            series.add(s, self._known[s.index] + tail)
            busy = busy or (not s.lost and self._is_busy(s))
        for index, known in self._known.items():
            if index not in present:
                series.up.add_metric(known + tail, 0.0)
        if busy:
            self._last_busy_s = now
        out = series.families()
        out += [self._idle_family(now), _probe_up_family(snapshot), self._hint_family(names, tail, present)]
        if self.price_usd_per_hour is not None:
            out += _price_families(self.price_usd_per_hour, max(0.0, now - self.started_s))
        return out

    def _is_busy(self, s: Sample) -> bool:
        util = num(s.util_gpu_pct)
        enc = max(num(s.util_encoder_pct) or 0.0, num(s.util_decoder_pct) or 0.0)
        return (util is not None and util > self.idle_threshold_pct) or enc > self.idle_threshold_pct

    def _idle_family(self, now: float) -> Metric:
        policy_idle = self.idle_seconds() if self.idle_seconds is not None else None
        if policy_idle is not None:
            idle = GaugeMetricFamily(
                "gpuwise_idle_seconds",
                "Seconds the machine has been idle by gpuwise's idle policy (GPU util, memory, processes"
                " and signals), counted from exporter start.",
            )
            idle.add_metric([], max(0.0, policy_idle))
            return idle
        idle = GaugeMetricFamily(
            "gpuwise_idle_seconds",
            f"Seconds since any GPU was last above {self.idle_threshold_pct:g}% utilization "
            "(or its video engines were busy), counted from exporter start.",
        )
        idle.add_metric([], max(0.0, now - self._last_busy_s))
        return idle

    def _hint_family(self, names: list[str], tail: list[str], present: set[int]) -> Metric:
        family = GaugeMetricFamily(
            "gpuwise_hint",
            "1 while a bottleneck hint holds for a GPU (hint: input_bound, throttled, memory_nearly_full, "
            "pcie_below_max, gpu_idle_while_peers_busy, encoder_bound).",
            labels=[*names, "hint", "severity"],
        )
        shown: set[tuple[int, str]] = set()
        for h in self.hints() if self.hints is not None else ():
            gpu_labels = self._known.get(h.gpu) if h.gpu is not None else None
            if gpu_labels is not None and h.gpu in present and (h.gpu, h.id) not in shown:
                shown.add((h.gpu, h.id))
                family.add_metric([*gpu_labels, *tail, h.id, h.severity], 1.0)
        return family


class _GpuSeries:
    """The per-GPU families of one scrape: dcgm-exporter's metrics, up, throttle reasons, processes."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.dcgm = {name: _family(name, kind, doc, names) for name, kind, doc, _ in DCGM_METRICS}
        self.up = GaugeMetricFamily(
            "gpuwise_gpu_up", "1 when the GPU answered this scrape, 0 when lost.", labels=names
        )
        self.throttled = GaugeMetricFamily(
            "gpuwise_throttled",
            "1 while a clock-event (throttle) reason is active, per reason.",
            labels=[*names, "reason"],
        )
        self.proc_mem = GaugeMetricFamily(
            "gpuwise_process_gpu_memory_bytes",
            "GPU memory used by a process (bytes).",
            labels=[*names, "pid", "name"],
        )
        self.nprocs = GaugeMetricFamily("gpuwise_gpu_processes", "Processes using the GPU.", labels=names)

    def add(self, s: Sample, labels: list[str]) -> None:
        self.up.add_metric(labels, 0.0 if s.lost else 1.0)
        if s.lost:
            return
        for name, kind, _, getter in DCGM_METRICS:
            value = getter(s)
            if value is None:
                continue
            fam = self.dcgm[name]
            if kind == "counter":
                fam.add_sample(name, dict(zip(self.names, labels, strict=True)), value)
            else:
                fam.add_metric(labels, value)  # type: ignore[attr-defined]  # a GaugeMetricFamily
        reasons = value_or_none(s.throttle_reasons)
        if reasons is not None:
            for r in reasons:
                self.throttled.add_metric([*labels, r], 1.0)
        procs = value_or_none(s.processes)
        if procs is not None:
            self.nprocs.add_metric(labels, float(len(procs)))
            for p in procs:
                mem = value_or_none(p.used_memory_bytes)
                if mem is not None:
                    self.proc_mem.add_metric([*labels, str(p.pid), p.name], float(mem))

    def families(self) -> list[Metric]:
        """In the order served: the dcgm families that have samples, then gpuwise's per-GPU ones."""
        out: list[Metric] = [f for f in self.dcgm.values() if f.samples]
        return [*out, self.up, self.throttled, self.proc_mem, self.nprocs]


def _probe_up_family(snapshot: Snapshot) -> Metric:
    probe_up = GaugeMetricFamily(
        "gpuwise_probe_up",
        "1 when the last read of the GPUs succeeded without errors "
        "(0: NVML or nvidia-smi failed, or found no GPU).",
    )
    probe_up.add_metric([], 0.0 if snapshot.errors or not snapshot.samples else 1.0)
    return probe_up


def _price_families(price_usd_per_hour: float, running_s: float) -> list[Metric]:
    price = GaugeMetricFamily("gpuwise_price_usd_per_hour", "Configured price of this machine (USD/hour).")
    price.add_metric([], price_usd_per_hour)
    cost = CounterMetricFamily(
        "gpuwise_cost_usd",
        "Cost accumulated at the configured price since the exporter started (USD).",
    )
    cost.add_metric([], price_usd_per_hour * running_s / 3600.0)
    return [price, cost]


def _health_families(health: SamplerHealth) -> list[Metric]:
    view = health.view()
    out: list[Metric] = []
    if view.up is not None:
        up = GaugeMetricFamily(
            "gpuwise_up",
            "1 when the background sampler's last tick (GPU read, alerts, history) succeeded, "
            "0 when it failed.",
        )
        up.add_metric([], 1.0 if view.up else 0.0)
        out.append(up)
    errors = CounterMetricFamily(
        "gpuwise_sampler_errors",
        "Background sampler ticks that failed (a GPU read, an alert delivery or a history write).",
    )
    errors.add_metric([], float(view.errors_total))
    age = GaugeMetricFamily(
        "gpuwise_last_sample_age_seconds",
        "Seconds since the background sampler last completed a tick without error "
        "(since the exporter started, when none has yet).",
    )
    age.add_metric([], view.last_good_age_s)
    return [*out, errors, age]


def exposition(registry: CollectorRegistry) -> bytes:
    """The Prometheus text format for ``registry``, as served: dcgm-exporter's counters typed `counter`
    under their exact names."""
    return render_text(registry.collect(), COUNTERS)


def make_registry(collector: Collector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


class ExporterServer(BoundedHTTPServer):
    """The exporter's HTTP server: `ExporterApp` on the bounded server (see `monitor.httpserver`)."""

    def __init__(
        self,
        address: tuple[str, int],
        registry: CollectorRegistry,
        token: str | None,
        limits: Limits | None = None,
    ) -> None:
        self.exporter_app = ExporterApp(registry, token)
        super().__init__(address, self.exporter_app, limits)

    def authorized(self, header: str | None) -> bool:
        return self.exporter_app.authorized(header)

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve with a short GIL switch interval, restored on return.

        Why: the loop thread makes many short calls that release the GIL (recv, send, epoll) while the
        collector thread renders for milliseconds at a time. With CPython's default 5 ms interval, each
        time the loop thread wants the GIL back it waits out the renderer (the "convoy effect"); on an
        idle 2-core machine 50 keep-alive clients then got ~1,000 scrapes/s and p99 ~125 ms. At 0.1 ms,
        ~4,500 scrapes/s and p99 ~16 ms (benchmarks/monitor_overhead.py). The setting is process-wide,
        which is why it lasts only while the exporter serves.
        """
        previous = sys.getswitchinterval()
        sys.setswitchinterval(min(previous, SWITCH_INTERVAL_S))
        try:
            super().serve_forever(poll_interval)
        finally:
            sys.setswitchinterval(previous)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
