"""`gpuwise exporter`: a dcgm-exporter-compatible Prometheus endpoint (docs/metrics.md) plus gpuwise metrics.

Top-level imports stay cheap (typer/stdlib); prometheus-client and the monitor room load inside.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuwise.cli.output import setup_logging
from gpuwise.errors import ConfigError
from gpuwise.locale import _

log = logging.getLogger("gpuwise.exporter")

TOKEN_ENV = "GPUWISE_EXPORTER_TOKEN"


def read_token(token_file: Path | None) -> str | None:
    """The bearer token from the file (first line, stripped), else from $GPUWISE_EXPORTER_TOKEN."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(
                _("Cannot read the token file {path}: {reason}").format(path=token_file, reason=exc.strerror),
                fix=_("check the path given to --token-file and its permissions"),
            ) from exc
        if not token:
            raise ConfigError(
                _("The token file {path} is empty").format(path=token_file),
                fix=_("write the token on its first line"),
            )
        if token_file.stat().st_mode & 0o077:
            log.warning("token file %s is readable by other users; chmod 600 it", token_file)
        return token
    env = os.environ.get(TOKEN_ENV, "").strip()
    return env or None


def exporter(  # noqa: PLR0917 - typer maps options to parameters
    bind: Annotated[
        str | None, typer.Option("--bind", help=_("Address to listen on (default 127.0.0.1, loopback only)."))
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help=_("TCP port, 0 to 65535 (default 9400; 0 picks a free one)."))
    ] = None,
    replay: Annotated[
        Path | None, typer.Option("--replay", help=_("Serve a recording (looped) instead of live GPUs."))
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help=_("Require 'Authorization: Bearer <token>' (or set ${env}).").format(env=TOKEN_ENV),
        ),
    ] = None,
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help=_("Allow a non-loopback --bind without a token (not recommended).")),
    ] = False,
    price_usd_per_hour: Annotated[
        float | None,
        typer.Option(
            "--price-usd-per-hour",
            help=_(
                "Machine price in USD per hour, 0 or more (default: price_usd_per_hour in the machine "
                "section of the config)."
            ),
        ),
    ] = None,
    history: Annotated[
        bool | None,
        typer.Option("--history/--no-history", help=_("Write history (default: on live, off on --replay).")),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help=_("Config file (default: the user config)."))
    ] = None,
) -> None:
    """Serve /metrics for Prometheus with NVIDIA dcgm-exporter's metric names and labels, plus gpuwise's
    idle, price, cost and health metrics.

    Beside dcgm-exporter's metrics (energy in mJ, reserved memory and the DCGM_FI_DRIVER_VERSION label
    where the GPUs report them): gpuwise_idle_seconds, gpuwise_price_usd_per_hour, gpuwise_cost_usd_total,
    per-process GPU memory, gpuwise_gpu_up, and gpuwise_up / gpuwise_sampler_errors_total /
    gpuwise_last_sample_age_seconds (0, counted and growing when background sampling, alerts or history
    fail).

    Binds 127.0.0.1 unless --bind says otherwise. On a non-loopback address a bearer token is required
    (--token-file or $GPUWISE_EXPORTER_TOKEN) unless --no-auth is given; it is checked before any work.
    Serves the Prometheus text format or OpenMetrics, gzip and HEAD. A request header must arrive within
    10 s; at most 512 connections stay open, the longest-waiting idle one closed to admit a new one. Runs
    until SIGINT/SIGTERM; logs to stderr.

    Examples:

      gpuwise exporter

      gpuwise exporter --port 9401 --replay gpu.xml

      gpuwise exporter --bind 0.0.0.0 --token-file ~/.config/gpuwise/exporter.token
    """
    from gpuwise import paths
    from gpuwise.config import load_config
    from gpuwise.idle.settings import load_settings
    from gpuwise.monitor.alerts import alerts_config
    from gpuwise.monitor.exporter import is_loopback
    from gpuwise.monitor.serve import ExporterSetup, serve_exporter
    from gpuwise.monitor.settings import ExporterSettings, MachineSettings, MonitorSettings, section

    _check_options(port, price_usd_per_hour, replay, config, token_file)
    cfg = load_config(config)
    ex = section(cfg, "exporter", ExporterSettings)
    mon = section(cfg, "monitor", MonitorSettings)
    machine = section(cfg, "machine", MachineSettings)
    alerts_cfg = alerts_config(cfg.section("alerts"), str(cfg.path or "config"))
    host = bind if bind is not None else ex.bind
    token = read_token(token_file if token_file is not None else ex.token_file)
    if not is_loopback(host) and token is None and not no_auth:
        raise ConfigError(
            _("Refusing to serve GPU metrics on {host} without a token").format(host=host),
            why=_("any host that can reach this address could read them"),
            fix=_("pass --token-file FILE (or set ${env}), or --no-auth to serve openly on purpose").format(
                env=TOKEN_ENV
            ),
        )
    price = price_usd_per_hour if price_usd_per_hour is not None else machine.price_usd_per_hour
    write_history = history if history is not None else (mon.history and replay is None)
    setup = ExporterSetup(
        host=host,
        port=port if port is not None else ex.port,
        token=token,
        replay=replay,
        price_usd_per_hour=price,
        history_db=paths.history_db() if write_history else None,
        exporter=ex,
        monitor=mon,
        alerts=alerts_cfg,
        # gpuwise_idle_seconds follows the same idle policy (and [idle] thresholds) as `gpuwise idle`.
        idle_policy=load_settings(cfg.sections).policy,
    )
    setup_logging()
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        log.info("signal %d: shutting down", signum)
        stop.set()

    previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        serve_exporter(setup, stop)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _check_options(
    port: int | None,
    price_usd_per_hour: float | None,
    replay: Path | None,
    config: Path | None,
    token_file: Path | None,
) -> None:
    from gpuwise.cli.output import check_at_least, check_input_file

    check_at_least(port, 0, "--port", example="--port 9400")
    if port is not None and port > 65535:  # the largest TCP port
        raise ConfigError(
            _("--port must be 65535 or less, not {port}").format(port=port), fix=_("use e.g. --port 9400")
        )
    check_at_least(price_usd_per_hour, 0, "--price-usd-per-hour", example="--price-usd-per-hour 2.49")
    if replay is not None:
        check_input_file(
            replay, _("Recording"), fix=_("give a recording file, e.g. nvidia-smi -q -x > gpu.xml")
        )
    if config is not None:
        check_input_file(
            config, _("Config file"), fix=_("give a TOML config file, or drop --config"), text=True
        )
    if token_file is not None:
        check_input_file(
            token_file, _("Token file"), fix=_("write the token on the first line of a file"), text=True
        )
