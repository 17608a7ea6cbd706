"""`serve_exporter()`: what `gpuwise exporter` runs, as one call.

It wires the pieces and runs them until `stop` is set: one probe shared (under a lock) by scrapes and
the background sampler; the collector behind the bounded HTTP server; the sampler thread (hints,
alerts, history, the idle tracker behind `gpuwise_idle_seconds`) watched by `SamplerHealth`; then an
orderly shutdown. The CLI parses and validates the options and the config, reads the token and installs
the signal handlers that set `stop`. Logs, never prints.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from gpuwise.errors import ConfigError
from gpuwise.gpu.sample import Snapshot
from gpuwise.idle.policy import IdlePolicy, PolicyConfig
from gpuwise.idle.tracker import IdleTracker
from gpuwise.locale import _
from gpuwise.monitor.alerts import AlertDelivery, AlertEngine, AlertsConfig
from gpuwise.monitor.exporter import ExporterServer, GpuCollector, make_registry
from gpuwise.monitor.health import SamplerHealth, run_watched
from gpuwise.monitor.history import HistoryStore
from gpuwise.monitor.sampler import Sampler
from gpuwise.monitor.settings import ExporterSettings, MonitorSettings
from gpuwise.monitor.source import Probe, open_source

__all__ = ["ExporterSetup", "serve_exporter"]

log = logging.getLogger("gpuwise.exporter")


@dataclass(frozen=True)
class ExporterSetup:
    """Everything `serve_exporter` needs, already validated by the caller."""

    host: str
    port: int
    token: str | None
    replay: Path | None  # a recording to loop instead of the live GPUs
    price_usd_per_hour: float | None
    history_db: Path | None  # where history goes; None: none is written
    exporter: ExporterSettings
    monitor: MonitorSettings
    alerts: AlertsConfig
    idle_policy: PolicyConfig


def serve_exporter(setup: ExporterSetup, stop: threading.Event) -> None:
    """Serve /metrics until `stop` is set. Raises ConfigError (before serving) when the address cannot
    be bound."""
    probe = _LockedProbe(open_source(setup.replay, loop=True))
    idle = IdleTracker(IdlePolicy(setup.idle_policy))
    health = SamplerHealth()
    collector = GpuCollector(
        probe,
        price_usd_per_hour=setup.price_usd_per_hour,
        idle_threshold_pct=setup.exporter.idle_threshold_pct,
        idle_seconds=idle.seconds,
        hints=lambda: sampler.last_hints,
        health=health,
    )
    try:
        server = _bind(setup, collector)
    except ConfigError:
        probe.close()
        raise
    store = (
        HistoryStore(setup.history_db, retention_s=setup.monitor.history_retention_days * 86400)
        if setup.history_db is not None
        else None
    )
    alerts_on = setup.alerts.enabled
    sampler = Sampler(
        probe,
        window=max(3, int(60 / setup.exporter.interval_s)),
        alerts=AlertEngine.from_config(setup.alerts) if alerts_on else None,
        delivery=AlertDelivery(setup.alerts) if alerts_on else None,
        history=store,
        history_every_s=setup.monitor.history_interval_s,
        observers=[idle.observe],
    )
    try:
        _run(setup, server, sampler, health, stop)
    finally:
        probe.close()
        if store is not None:
            store.close()
        log.info("stopped")


def _bind(setup: ExporterSetup, collector: GpuCollector) -> ExporterServer:
    try:
        return ExporterServer((setup.host, setup.port), make_registry(collector), setup.token)
    except OSError as exc:
        where = f"{setup.host}:{setup.port}"
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            # the address, not the port, is wrong: a typo or an address of another machine
            raise ConfigError(
                _("Cannot listen on {where}: {reason}").format(where=where, reason=exc.strerror),
                why=_("{host} is not an address of this machine").format(host=setup.host),
                fix=_(
                    "use --bind 127.0.0.1 (default), 0.0.0.0 (every interface) or an address `ip addr` lists"
                ),
            ) from exc
        raise ConfigError(
            _("Cannot listen on {where}: {reason}").format(where=where, reason=exc.strerror),
            fix=_("choose another --port, or stop the program using it"),
        ) from exc


def _run(
    setup: ExporterSetup,
    server: ExporterServer,
    sampler: Sampler,
    health: SamplerHealth,
    stop: threading.Event,
) -> None:
    """The server and the watched sampler in their threads until `stop`; then both stop."""
    background = threading.Thread(
        target=run_watched,
        args=(sampler, health),
        kwargs={"interval_s": setup.exporter.interval_s, "stop": stop},
        daemon=True,
        name="gpuwise-sampler",
    )
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    bound_host, bound_port = server.server_address[:2]
    log.info(
        "serving http://%s:%s/metrics (%s, auth %s%s)",
        bound_host,
        bound_port,
        f"replaying {setup.replay}" if setup.replay else "live GPUs",
        "bearer token" if setup.token else "off",
        f", price ${setup.price_usd_per_hour}/h" if setup.price_usd_per_hour is not None else "",
    )
    serving.start()
    background.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        server.server_close()
        background.join(timeout=10)


class _LockedProbe:
    """One probe shared by scrapes (the collector thread) and the background sampler."""

    def __init__(self, probe: Probe) -> None:
        self._probe = probe
        self._lock = threading.Lock()

    def read(self) -> Snapshot:
        with self._lock:
            return self._probe.read()

    def close(self) -> None:
        with self._lock:
            self._probe.close()
