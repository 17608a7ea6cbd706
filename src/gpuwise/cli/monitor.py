"""`gpuwise monitor`: the live GPU view, one snapshot (`--once`), recording, and history (`--since`).

Top-level imports stay cheap (typer/rich/stdlib); the monitor room and psutil load inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.cli.output import console, err_console, print_json, setup_logging, to_jsonable
from gpuwise.errors import ConfigError
from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.monitor.sampler import Sampler


def monitor(  # noqa: PLR0917 - typer maps options to parameters
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            help=_("Read a recording (nvidia-smi XML, -q text, table or CSV log) instead of live GPUs."),
        ),
    ] = None,
    once: Annotated[
        bool, typer.Option("--once", help=_("Print one snapshot (with hints) and exit."))
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help=_("Print JSON (implies --once unless --since is given)."))
    ] = False,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record", help=_("Append samples to FILE as nvidia-smi --query-gpu CSV (replayable).")
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help=_("Summarise the stored history of the last DURATION (2h, 1h30m, 1d).")),
    ] = None,
    interval: Annotated[
        float | None,
        typer.Option(
            "--interval",
            "--interval-s",
            help=_("Seconds between refreshes (default 1, or monitor.interval_s in the config)."),
        ),
    ] = None,
    history: Annotated[
        bool | None,
        typer.Option(
            "--history/--no-history",
            help=_(
                "Write samples, hints and alerts to the history database (default: on live, off on replay)."
            ),
        ),
    ] = None,
    count: Annotated[
        int | None, typer.Option("--count", help=_("Stop the live view after N refreshes (1 or more)."))
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help=_(
                "Config file (default: the user config). One that holds an alert command must be writable "
                "only by you or root."
            ),
        ),
    ] = None,
) -> None:
    """Watch the GPUs live: utilization and memory bars, recent-utilization sparklines, power, temperature,
    clocks, throttle reasons, processes, host CPU/RAM/I-O, and bottleneck hints.

    --once prints one snapshot; --since 2h summarises what happened while you were away (from the history
    that monitor, exporter and idle write). Alerts come from the alerts section of config.toml.
    JSON readings that have no value are null with a "<field>_status" of "not supported" or "failed: why".

    Examples:

      gpuwise monitor

      gpuwise monitor --once --json --replay gpu.xml

      gpuwise monitor --record run.csv

      gpuwise monitor --since 2h
    """
    from gpuwise import paths
    from gpuwise.cli.output import check_at_least, check_input_file, check_output_file
    from gpuwise.config import load_config
    from gpuwise.monitor.settings import MonitorSettings, section

    check_at_least(count, 1, "--count", example="--count 10")
    if since is not None and (replay is not None or record is not None):
        raise ConfigError(
            _("--since summarises the stored history; it cannot be combined with --replay or --record"),
            fix=_("run gpuwise monitor --since 2h on its own"),
        )
    if replay is not None:
        check_input_file(
            replay, _("Recording"), fix=_("give a recording file, e.g. nvidia-smi -q -x > gpu.xml")
        )
    if config is not None:
        check_input_file(
            config, _("Config file"), fix=_("give a TOML config file, or drop --config"), text=True
        )
    if record is not None:
        check_output_file(record, "--record", name="gpu.csv")
        _check_recording_target(record)
    cfg = load_config(config)
    settings = section(cfg, "monitor", MonitorSettings)
    interval_s = interval if interval is not None else settings.interval_s
    if not 0 < interval_s < float("inf"):  # also refuses NaN
        raise ConfigError(
            _("--interval must be positive (got {value})").format(value=interval_s),
            fix=_("use e.g. --interval 1"),
        )
    retention_s = settings.history_retention_days * 86400

    if since is not None:
        _show_since(since, json_out, paths.history_db(), retention_s)
        return

    from gpuwise.monitor.alerts import AlertDelivery, AlertEngine, alerts_config
    from gpuwise.monitor.hints import HintThresholds
    from gpuwise.monitor.history import HistoryStore
    from gpuwise.monitor.host import HostReader
    from gpuwise.monitor.sampler import Sampler
    from gpuwise.monitor.source import open_source

    alerts_cfg = alerts_config(cfg.section("alerts"), str(cfg.path or "config"))
    once = once or json_out
    write_history = history if history is not None else (settings.history and replay is None and not once)
    probe = open_source(replay)
    store = HistoryStore(paths.history_db(), retention_s=retention_s) if write_history else None
    recorder = _open_recorder(record) if record is not None else None
    try:
        sampler = Sampler(
            probe,
            host_reader=HostReader(),
            thresholds=HintThresholds(min_samples=1) if once else HintThresholds(),
            alerts=AlertEngine.from_config(alerts_cfg) if alerts_cfg.enabled else None,
            delivery=AlertDelivery(alerts_cfg) if alerts_cfg.enabled else None,
            history=store,
            history_every_s=settings.history_interval_s,
            recorder=recorder,
        )
        if once:
            _once(sampler, json_out)
        else:
            setup_logging()
            _live(sampler, interval_s, count)
    finally:
        probe.close()
        if store is not None:
            store.close()
        if recorder is not None:
            recorder.close()


def _check_recording_target(path: Path) -> None:
    """--record appends, so a file that holds anything but a gpuwise recording (a workload given by
    mistake, an nvidia-smi log with other columns) would be corrupted: refuse it before writing a byte."""
    from gpuwise.monitor.record import header

    if not path.is_file():
        return  # missing (a new recording), or a pipe or device, which must not be opened here to be read
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            first = fh.readline().rstrip("\r\n")
    except OSError:
        return  # unreadable: the recorder reports it
    if not first:
        return
    if [cell.strip() for cell in first.split(",")] != header(with_host=True):
        raise ConfigError(
            _("--record {path} already holds something else (its first line is {line})").format(
                path=path, line=repr(first[:60])
            ),
            why=_("--record appends rows, and only to a recording it started itself"),
            fix=_("give a new file name, e.g. --record gpu-$(date +%F).csv"),
        )


def _open_recorder(path: Path) -> Any:
    from gpuwise.monitor.record import Recorder

    try:
        return Recorder(path)
    except OSError as exc:
        raise ConfigError(
            _("Cannot write the recording {path}: {reason}").format(path=path, reason=exc.strerror),
            fix=_("choose a writable path for --record"),
        ) from exc


def _once(sampler: Sampler, json_out: bool) -> None:
    from gpuwise.gpu.jsonview import snapshot_to_json
    from gpuwise.monitor.view import dashboard

    tick = sampler.tick()
    if sampler.record_error is not None:  # the one snapshot asked for was not recorded
        raise sampler.record_error
    if json_out:
        out = snapshot_to_json(tick.snapshot)
        out["host"] = to_jsonable(tick.host)
        out["hints"] = to_jsonable(tick.hints)
        out["alerts"] = to_jsonable(tick.events)
        print_json(out)
    else:
        console.print(
            dashboard(tick.snapshot, util_history=tick.util_history, host=tick.host, hints=tick.hints)
        )


def _live(sampler: Sampler, interval_s: float, count: int | None) -> None:
    from rich.live import Live

    from gpuwise.monitor.sampler import Tick, run_loop
    from gpuwise.monitor.view import dashboard

    if not console.is_terminal:
        # Redirected or piped (`gpuwise monitor > log`, ssh without a tty): the alternate screen would
        # show nothing at all, so print one snapshot per refresh, like `nvidia-smi -l`.
        err_console.print(
            _(
                "stdout is not a terminal: printing one snapshot per refresh "
                "(--once or --json print one; --record FILE writes a replayable log)"
            ),
            markup=False,
        )

        def print_tick(tick: Tick) -> None:
            console.print(
                dashboard(tick.snapshot, util_history=tick.util_history, host=tick.host, hints=tick.hints)
            )

        try:
            run_loop(sampler, interval_s=interval_s, on_tick=print_tick, max_ticks=count)
        except KeyboardInterrupt:
            err_console.print(_("stopped"))
        return

    # The alternate screen (like top and nvitop): each refresh redraws in place, and quitting restores
    # the terminal instead of leaving frames in the scrollback.
    with Live(console=console, auto_refresh=False, screen=True, transient=False) as live:

        def show(tick: Tick) -> None:
            alerts = [_("{rule} firing on GPU {gpu}").format(rule=rule, gpu=gpu) for rule, gpu in tick.firing]
            if sampler.record_error is not None:  # the alternate screen hides the log line
                alerts.append(_("recording paused: {why}").format(why=sampler.record_error.message))
            live.update(
                dashboard(
                    tick.snapshot,
                    util_history=tick.util_history,
                    host=tick.host,
                    hints=tick.hints,
                    alerts=alerts,
                    title=_("gpuwise monitor (Ctrl-C to quit)"),
                ),
                refresh=True,
            )

        try:
            run_loop(sampler, interval_s=interval_s, on_tick=show, max_ticks=count)
        except KeyboardInterrupt:
            err_console.print(_("stopped"))


def _show_since(since: str, json_out: bool, db: Path, retention_s: float) -> None:
    import time

    from gpuwise.monitor.history import HistoryStore, summarize
    from gpuwise.monitor.view import history_view
    from gpuwise.units import parse_duration_s

    try:
        seconds = parse_duration_s(since, default_unit="h")
    except ValueError as exc:
        raise ConfigError(
            _("--since {value} is not a duration").format(value=repr(since)),
            fix=_("use e.g. --since 2h, 30m or 1d"),
        ) from exc
    if not 0 < seconds < float("inf"):
        raise ConfigError(
            _("--since {value} is not a positive duration").format(value=repr(since)),
            fix=_("use e.g. --since 2h, 30m or 1d"),
        )
    now = time.time()
    start = now - seconds
    if not db.exists():
        from gpuwise.monitor.history import HistorySummary

        summary = HistorySummary(start, now, [], [])
    else:
        store = HistoryStore(db, retention_s=retention_s)
        try:
            summary = summarize(store.samples(start, now), store.events(start, now), start, now)
        finally:
            store.close()
    if json_out:
        print_json(summary)
    else:
        console.print(history_view(summary))
