"""`gpuwise idle`: replay a trace through the idle policy, run the auto-stop daemon, install it as a
systemd unit, and show its state and the money it saved.

Top-level imports stay cheap (typer and the standard library); the policy, daemon and probes are imported
inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from gpuwise.idle.replay import ReplayResult
    from gpuwise.idle.settings import IdleSettings

app = typer.Typer(
    help=(
        "Stop paying for GPUs nobody uses. The policy counts missing data as busy, waits 60 min "
        "(120 min while GPU memory is held) and says why it decides. Try it on your own logs with "
        "`gpuwise idle replay` before trusting the daemon."
    ),
    no_args_is_help=True,
)

ThresholdOpt = Annotated[
    float | None, typer.Option("--threshold-pct", help="GPU util above this is activity (default 5).")
]
WindowOpt = Annotated[
    float | None,
    typer.Option("--window-min", help="Minutes of continuous idleness before a stop (default 60)."),
]
HeldWindowOpt = Annotated[
    float | None,
    typer.Option("--held-window-min", help="Window while GPU memory is held or not reported (default 120)."),
]
WarnOpt = Annotated[
    float | None, typer.Option("--warn-min", help="Warn this many minutes before a stop (default 10).")
]
MemChangeOpt = Annotated[
    float | None,
    typer.Option("--mem-change-mib", help="A change of GPU memory used this large is activity (default 64)."),
]
BaselineOpt = Annotated[
    float | None,
    typer.Option(
        "--baseline-mem-mib",
        help="GPU memory a GPU uses with no job (driver, desktop); above it memory counts as held "
        "(default 512).",
    ),
]
NoiseOpt = Annotated[
    float | None,
    typer.Option(
        "--noise-floor-pct",
        help="On a GPU with no job (no compute process, memory at baseline and at its lowest reading), "
        "util up to this is display "
        "noise, not activity; 0 turns it off (default 35).",
    ),
]
HeldThresholdOpt = Annotated[
    float | None,
    typer.Option(
        "--held-threshold-pct",
        help="On a GPU holding memory (a job's process, memory above baseline or above the GPU's lowest "
        "reading, or memory not reported), util above this is activity (default 0: any kernel time).",
    ),
]
GapOpt = Annotated[
    float | None,
    typer.Option(
        "--max-gap-s",
        help="A longer gap between samples counts as busy (default 4 sampling intervals, at least 120).",
    ),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="Config file (default: the user config.toml).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


_TRACE_FIX = "give a file written by nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv -l 1"


def _settings(config: Path | None, **overrides: Any) -> IdleSettings:
    from gpuwise.cli.output import check_input_file
    from gpuwise.config import load_config
    from gpuwise.idle.settings import load_settings

    if config is not None:
        check_input_file(config, "Config file", fix="give a TOML config file, or drop --config", text=True)
    return load_settings(load_config(config).sections).with_cli(**overrides)


def _replay_json(result: ReplayResult, gpus: list[int]) -> dict[str, Any]:
    from gpuwise.gpu.smi_csv import format_trace_time

    def at(ts: float | None) -> str | None:
        return None if ts is None else format_trace_time(ts)

    cfg = result.config
    return {
        "stop_at": at(result.stop_at_s),
        "reason": result.reason,
        "samples": result.samples,
        "observations": result.observations,
        "gpus": gpus,
        "first_sample": at(result.first_s),
        "last_sample": at(result.last_s),
        "stop_after_s": (
            None if result.stop_at_s is None or result.first_s is None else result.stop_at_s - result.first_s
        ),
        "max_idle_min": round(result.max_idle_s / 60, 2),
        "options": {
            "threshold_pct": cfg.threshold_pct,
            "window_min": cfg.window_min,
            "held_window_min": cfg.held_window_min,
            "warn_min": cfg.warn_min,
            "mem_change_mib": cfg.mem_change_mib,
            "baseline_mem_mib": cfg.baseline_mem_mib,
            "noise_floor_pct": cfg.noise_floor_pct,
            "held_threshold_pct": cfg.held_threshold_pct,
            "max_gap_s": cfg.gap_limit_s,
        },
        "idle_stretches": [
            {
                "start": at(s.start_s),
                "end": at(s.end_s),
                "minutes": round(s.duration_s / 60, 2),
                "window_min": round(s.window_s / 60, 2),
                "reached": s.peak_state.value,
                "ended_by": s.ended_by,
            }
            for s in result.stretches
        ],
    }


@app.command("replay")
def replay(  # noqa: PLR0917 - typer maps options to parameters
    trace: Annotated[
        Path,
        typer.Argument(
            help="nvidia-smi --query-gpu=timestamp,… --format=csv output (or a Weights & Biases GPU export)."
        ),
    ],
    json_out: JsonOpt = False,
    threshold_pct: ThresholdOpt = None,
    window_min: WindowOpt = None,
    held_window_min: HeldWindowOpt = None,
    warn_min: WarnOpt = None,
    mem_change_mib: MemChangeOpt = None,
    baseline_mem_mib: BaselineOpt = None,
    noise_floor_pct: NoiseOpt = None,
    held_threshold_pct: HeldThresholdOpt = None,
    max_gap_s: GapOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Replay a recorded GPU trace through the idle policy: when would it stop the machine, and why."""
    from gpuwise.cli.output import check_input_file, console, print_json
    from gpuwise.gpu.smi_csv import format_trace_time
    from gpuwise.idle.replay import group_samples
    from gpuwise.idle.replay import replay as run_replay
    from gpuwise.units import format_duration

    settings = _settings(
        config,
        threshold_pct=threshold_pct,
        window_min=window_min,
        held_window_min=held_window_min,
        warn_min=warn_min,
        mem_change_mib=mem_change_mib,
        baseline_mem_mib=baseline_mem_mib,
        noise_floor_pct=noise_floor_pct,
        held_threshold_pct=held_threshold_pct,
        max_gap_s=max_gap_s,
    )
    from gpuwise.gpu.smi_csv import read_query_csv

    check_input_file(trace, "Trace", fix=_TRACE_FIX)
    samples = read_query_csv(trace)
    observations = group_samples(samples)
    result = run_replay(observations, settings.policy, samples=len(samples))
    gpus = sorted({s.index for o in observations for s in o.samples})
    if json_out:
        print_json(_replay_json(result, gpus))
        return
    span = (result.last_s or 0.0) - (result.first_s or 0.0)
    console.print(
        f"[bold]{trace.name}[/]: {result.samples} samples, {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}, "
        f"{format_duration(span)} ({format_trace_time(result.first_s or 0.0)} → "
        f"{format_trace_time(result.last_s or 0.0)})",
        soft_wrap=True,
    )
    console.print(f"policy: {settings.policy.describe()}", soft_wrap=True)
    if result.stop_at_s is not None:
        offset = result.stop_at_s - (result.first_s or 0.0)
        console.print(
            f"[bold red]would stop at {format_trace_time(result.stop_at_s)}[/] (+{format_duration(offset)})"
        )
    else:
        console.print("[bold green]would not stop[/]")
    console.print(result.reason, soft_wrap=True)
    if result.stretches:
        console.print("idle stretches of 5 min or more:")
        for s in result.stretches[-12:]:
            console.print(
                f"  {format_trace_time(s.start_s)}  {format_duration(s.duration_s):>7}  "
                f"reached {s.peak_state.value:<14} ended by: {s.ended_by}",
                soft_wrap=True,
            )
        if len(result.stretches) > 12:
            console.print(f"  (+{len(result.stretches) - 12} earlier; --json lists all)")


def _gatherers(settings: IdleSettings) -> list[Any]:
    from gpuwise import paths
    from gpuwise.errors import ConfigError
    from gpuwise.idle import signals as sig

    out: list[Any] = []
    for name in settings.signals:
        if name == "gpu_processes":
            out.append(sig.GpuProcessActivity(settings.process_cpu_pct, settings.process_io_kib_per_s))
        elif name == "ssh":
            out.append(sig.SshSessions())
        elif name == "jupyter":
            token = None
            if settings.jupyter_token_file:
                try:
                    token = Path(settings.jupyter_token_file).expanduser().read_text(encoding="utf-8").strip()
                except OSError as exc:
                    raise ConfigError(
                        f"cannot read jupyter_token_file {settings.jupyter_token_file}: {exc.strerror}",
                        fix="point jupyter_token_file at a file holding the Jupyter server's token",
                    ) from exc
            assert settings.jupyter_url is not None
            out.append(sig.JupyterKernels(settings.jupyter_url, token))
        elif name == "gpuwise_run":
            out.append(sig.GpuwiseRunJobs(paths.data_dir() / "run"))
        elif name == "keepalive":
            out.append(sig.KeepAliveFile(_keepalive_path(settings)))
    return out


def _keepalive_path(settings: IdleSettings) -> Path:
    from gpuwise import paths

    if settings.keepalive_file:
        return Path(settings.keepalive_file).expanduser()
    return paths.data_dir() / "idle" / "keepalive"


@app.command("run")
def run(  # noqa: PLR0917 - typer maps options to parameters
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Log what would be done; stop nothing.")] = False,
    replay_path: Annotated[
        Path | None,
        typer.Option("--replay", help="Read GPUs from a recording (nvidia-smi XML, -q, table or CSV log)."),
    ] = None,
    config: ConfigOpt = None,
    warn_min: WarnOpt = None,
    action: Annotated[
        str | None,
        typer.Option(
            "--action", help="auto | aws | gcp | azure | alibaba | shutdown | command (default auto)."
        ),
    ] = None,
    command: Annotated[
        str | None, typer.Option("--command", help="The stop command for --action command.")
    ] = None,
    pre_stop_hook: Annotated[
        str | None, typer.Option("--pre-stop-hook", help="Run this (e.g. a checkpoint sync) before stopping.")
    ] = None,
    hook_timeout_s: Annotated[
        float | None, typer.Option("--hook-timeout-s", help="Kill the hook after this long (default 300).")
    ] = None,
    hook_blocks: Annotated[
        bool | None,
        typer.Option("--hook-blocks/--no-hook-blocks", help="Whether a failing hook cancels the stop."),
    ] = None,
    webhook: Annotated[str | None, typer.Option("--webhook", help="POST JSON notices here.")] = None,
    interval_s: Annotated[
        float | None, typer.Option("--interval-s", help="Seconds between observations (default 30).")
    ] = None,
    threshold_pct: ThresholdOpt = None,
    window_min: WindowOpt = None,
    held_window_min: HeldWindowOpt = None,
    noise_floor_pct: NoiseOpt = None,
    held_threshold_pct: HeldThresholdOpt = None,
    max_gap_s: GapOpt = None,
    no_history: Annotated[
        bool, typer.Option("--no-history", help="Do not write samples to the monitor history database.")
    ] = False,
    max_steps: Annotated[int | None, typer.Option("--max-steps", hidden=True)] = None,
    metadata_url: Annotated[str | None, typer.Option("--metadata-url", hidden=True)] = None,
) -> None:
    """Run the auto-stop daemon: observe every interval, warn, run the hook, stop the machine."""
    import logging
    import signal as signal_mod

    from gpuwise import paths
    from gpuwise.cli.output import check_input_file, setup_logging
    from gpuwise.gpu.probe import open_probe
    from gpuwise.idle.actions import MetadataEndpoints
    from gpuwise.idle.daemon import IdleDaemon, RetryingProbe
    from gpuwise.idle.state import state_path

    settings = _settings(
        config,
        warn_min=warn_min,
        action=action,
        command=command,
        pre_stop_hook=pre_stop_hook,
        hook_timeout_s=hook_timeout_s,
        hook_blocks=hook_blocks,
        webhook=webhook,
        interval_s=interval_s,
        threshold_pct=threshold_pct,
        window_min=window_min,
        held_window_min=held_window_min,
        noise_floor_pct=noise_floor_pct,
        held_threshold_pct=held_threshold_pct,
        max_gap_s=max_gap_s,
    )
    setup_logging()
    # a recording that cannot be read is bad input (exit 2) now; a live driver that does not answer is
    # retried at every observation and counts as busy meanwhile
    if replay_path is not None:
        check_input_file(replay_path, "Recording", fix=_TRACE_FIX)
    probe = open_probe(replay_path) if replay_path is not None else RetryingProbe(open_probe)
    endpoints = MetadataEndpoints.all_at(metadata_url) if metadata_url else MetadataEndpoints()
    keepalive = _keepalive_path(settings)
    history = None
    if replay_path is None and not no_history:  # a replay's old timestamps must not enter the history
        from gpuwise.monitor.history import HistoryStore

        history = HistoryStore(paths.history_db())
    daemon = IdleDaemon(
        settings,
        probe,
        _gatherers(settings),
        state_path(paths.data_dir()),
        keepalive_hint=f"touch {keepalive}" if "keepalive" in settings.signals else "log in and use a GPU",
        dry_run=dry_run,
        endpoints=endpoints,
        history=history,
    )

    def _term(signum: int, frame: object) -> None:  # noqa: ARG001 - signal handler signature
        raise KeyboardInterrupt

    previous = signal_mod.signal(signal_mod.SIGTERM, _term)
    try:
        daemon.run(max_steps=max_steps)
    except KeyboardInterrupt:
        logging.getLogger("gpuwise.idle").info(
            "gpuwise idle: stopped by signal; state kept in %s", daemon.state_file
        )
    finally:
        signal_mod.signal(signal_mod.SIGTERM, previous)
        probe.close()
        if history is not None:
            history.close()


@app.command("install")
def install(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the unit and the commands; write nothing.")
    ] = False,
    unit_dir: Annotated[Path, typer.Option("--unit-dir", help="Where to write the unit.")] = Path(
        "/etc/systemd/system"
    ),
    config: ConfigOpt = None,
    systemd_root: Annotated[Path, typer.Option("--systemd-root", hidden=True)] = Path("/run/systemd/system"),
) -> None:
    """Write a systemd unit for `gpuwise idle run` and enable it (or say what to run)."""
    import sys

    from gpuwise import paths
    from gpuwise.cli.output import console
    from gpuwise.errors import StorageError
    from gpuwise.idle.actions import Runner
    from gpuwise.idle.state import write_atomic
    from gpuwise.idle.unit import UNIT_NAME, render_unit

    _settings(config)  # validate the config now, not when the service starts
    script = Path(sys.executable).parent / "gpuwise"
    exec_start = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from gpuwise.cli.main import run; run()"]
    )
    exec_start += ["idle", "run"]
    if config is not None:
        exec_start += ["--config", str(config.resolve())]
    text = render_unit(exec_start, paths.config_dir().resolve(), paths.data_dir().resolve())
    target = unit_dir / UNIT_NAME
    commands = [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", UNIT_NAME]]
    if dry_run:
        # plain echo: rich would wrap long lines and corrupt the unit text
        typer.echo(f"# would write {target}:")
        typer.echo(text)
        for c in commands:
            typer.echo("# then: " + " ".join(c))
        return
    try:
        write_atomic(target, text)
    except StorageError as exc:
        exc.fix = f"run it as root (sudo), or pass --unit-dir DIR; --dry-run prints the unit. {exc.fix}"
        raise
    console.print(f"wrote {target}", markup=False)
    runner = Runner()
    if runner.which("systemctl") is None or not systemd_root.is_dir():
        console.print("systemd is not running here; to enable the service run:", markup=False)
        for c in commands:
            console.print("  " + " ".join(c), markup=False)
        return
    for c in commands:
        res = runner.run(c, timeout_s=60)
        if not res.ok:
            raise StorageError(
                f"{res.description} failed: {res.detail}",
                fix="run it yourself as root, then check journalctl -u " + UNIT_NAME,
            )
    console.print(f"enabled and started {UNIT_NAME} (journalctl -u {UNIT_NAME} shows its log)", markup=False)


@app.command("status")
def status(json_out: JsonOpt = False, config: ConfigOpt = None) -> None:
    """The daemon's current state (from its state file) and the money its stops saved."""
    import time

    from gpuwise import paths
    from gpuwise.cli.output import console, print_json
    from gpuwise.idle.state import compute_savings, load_state, state_path
    from gpuwise.units import format_duration, format_money

    settings = _settings(config)
    path = state_path(paths.data_dir())
    data = load_state(path)
    price = settings.price_usd_per_hour
    if price is None and data is not None and isinstance(data.get("price_usd_per_hour"), int | float):
        price = float(data["price_usd_per_hour"])
    savings = compute_savings(data, price)
    now = time.time()
    decision = (data or {}).get("decision") or {}
    updated = (data or {}).get("updated_at")
    interval = float((data or {}).get("interval_s") or settings.interval_s)
    running = updated is not None and now - float(updated) <= max(3 * interval, 120)
    out = {
        "state_file": str(path),
        "found": data is not None,
        "daemon_running": running,
        "updated_at": updated,
        "dry_run": (data or {}).get("dry_run"),
        "state": decision.get("state"),
        "reason": decision.get("reason"),
        "idle_min": None if "idle_s" not in decision else round(float(decision["idle_s"]) / 60, 1),
        "stop_due_unix": decision.get("stop_due_s"),
        "stops": (data or {}).get("stops", [])[-10:],
        "savings": {
            "stops": savings.stops,
            "counted_stops": savings.counted_stops,
            "hours_off": round(savings.hours_off, 2),
            "saved_usd": savings.saved_usd,
            "price_usd_per_hour": savings.price_usd_per_hour,
            "pending_since_unix": savings.pending_since_s,
            "assumptions": list(savings.assumptions),
        },
    }
    if json_out:
        print_json(out)
        return
    if data is None:
        console.print(f"no idle daemon state at {path}: `gpuwise idle run` has not run here", markup=False)
    else:
        age = format_duration(now - float(updated)) if updated is not None else "?"
        mode = " (dry run)" if out["dry_run"] else ""
        alive = "running" if running else f"not running? last update {age} ago"
        console.print(f"daemon {alive}{mode}; state: {out['state']}", markup=False)
        console.print(str(out["reason"]), markup=False, soft_wrap=True)
        for s in out["stops"][-3:]:
            kind = "dry run" if s.get("dry_run") else ("ok" if s.get("ok") else "FAILED")
            console.print(
                f"  stop {time.strftime('%Y-%m-%d %H:%M', time.localtime(float(s['at'])))} [{kind}] "
                f"{s.get('action')}",
                markup=False,
                soft_wrap=True,
            )
    if price is None:
        console.print(
            f"money saved: unknown (set price_usd_per_hour under [machine] in config.toml); "
            f"{savings.hours_off:.1f} h off after {savings.counted_stops} stop(s)",
            markup=False,
        )
    else:
        console.print(
            f"money saved: {format_money(savings.saved_usd or 0.0)} = {savings.hours_off:.1f} h off after "
            f"{savings.counted_stops} stop(s) × {format_money(price)}/h (compute only; assumes the machine "
            "would otherwise have idled until it was next started)",
            markup=False,
            soft_wrap=True,
        )
