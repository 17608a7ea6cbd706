"""`gpuwise idle`: replay a trace through the idle policy, run the auto-stop daemon, install it as a
systemd unit, show its state and the money it saved, and list what each provider's stop does.

The work lives in the idle room behind typed results (replay: `ReplayResult`, status: `IdleStatus`,
install: `UnitInstall`, run: `IdleDaemon.on_this_machine`); these commands parse options, call and render.
Top-level imports stay cheap (typer and the standard library); the policy, daemon and probes are imported
inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import _, ngettext

if TYPE_CHECKING:
    from gpuwise.idle.daemon import IdleDaemon
    from gpuwise.idle.settings import IdleSettings

app = typer.Typer(
    help=_(
        "Stop paying for GPUs nobody uses. The policy counts missing data as busy, waits 60 min "
        "(120 min while GPU memory is held) and says why it decides. Try it on your own logs with "
        "`gpuwise idle replay` before trusting the daemon."
    ),
    no_args_is_help=True,
)

ThresholdOpt = Annotated[
    float | None, typer.Option("--threshold-pct", help=_("GPU util above this is activity (default 5)."))
]
WindowOpt = Annotated[
    float | None,
    typer.Option("--window-min", help=_("Minutes of continuous idleness before a stop (default 60).")),
]
HeldWindowOpt = Annotated[
    float | None,
    typer.Option(
        "--held-window-min", help=_("Window while GPU memory is held or not reported (default 120).")
    ),
]
WarnOpt = Annotated[
    float | None, typer.Option("--warn-min", help=_("Warn this many minutes before a stop (default 10)."))
]
MemChangeOpt = Annotated[
    float | None,
    typer.Option(
        "--mem-change-mib", help=_("A change of GPU memory used this large is activity (default 64).")
    ),
]
BaselineOpt = Annotated[
    float | None,
    typer.Option(
        "--baseline-mem-mib",
        help=_(
            "GPU memory a GPU uses with no job (driver, desktop); above it memory counts as held "
            "(default 512)."
        ),
    ),
]
NoiseOpt = Annotated[
    float | None,
    typer.Option(
        "--noise-floor-pct",
        help=_(
            "On a GPU with no job (no compute process, memory at baseline and at its lowest reading), "
            "util up to this is display "
            "noise, not activity; 0 turns it off (default 35)."
        ),
    ),
]
HeldThresholdOpt = Annotated[
    float | None,
    typer.Option(
        "--held-threshold-pct",
        help=_(
            "On a GPU holding memory (a job's process, memory above baseline or above the GPU's lowest "
            "reading, or memory not reported), util above this is activity (default 0: any kernel time)."
        ),
    ),
]
GapOpt = Annotated[
    float | None,
    typer.Option(
        "--max-gap-s",
        help=_("A longer gap between samples counts as busy (default 4 sampling intervals, at least 120)."),
    ),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help=_("Config file (default: the user config.toml)."))
]
JsonOpt = Annotated[bool, typer.Option("--json", help=_("Print JSON."))]


def _trace_fix() -> str:
    return _("give a file written by nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv -l 1")


def _settings(config: Path | None, **overrides: Any) -> IdleSettings:
    from gpuwise.cli.output import check_input_file
    from gpuwise.config import load_config
    from gpuwise.idle.settings import load_settings

    if config is not None:
        check_input_file(
            config, _("Config file"), fix=_("give a TOML config file, or drop --config"), text=True
        )
    return load_settings(load_config(config).sections).with_cli(**overrides)


@app.command("replay")
def replay(  # noqa: PLR0917 - typer maps options to parameters
    trace: Annotated[
        Path,
        typer.Argument(
            help=_(
                "nvidia-smi --query-gpu=timestamp,… --format=csv output (or a Weights & Biases GPU export)."
            )
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
    from gpuwise.idle.message import text
    from gpuwise.idle.replay import replay_trace
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
    check_input_file(trace, _("Trace"), fix=_trace_fix())
    result = replay_trace(trace, settings.policy, settings.hang)
    gpus = result.gpus
    if json_out:
        print_json(result.to_json())
        return
    span = (result.last_s or 0.0) - (result.first_s or 0.0)
    console.print(
        ngettext(
            "[bold]{name}[/]: {samples} samples, {gpus} GPU, {span} ({first} → {last})",
            "[bold]{name}[/]: {samples} samples, {gpus} GPUs, {span} ({first} → {last})",
            len(gpus),
        ).format(
            name=trace.name,
            samples=result.samples,
            gpus=len(gpus),
            span=format_duration(span),
            first=format_trace_time(result.first_s or 0.0),
            last=format_trace_time(result.last_s or 0.0),
        ),
        soft_wrap=True,
    )
    console.print(_("policy: {policy}").format(policy=text(settings.policy.describe())), soft_wrap=True)
    if result.stop_at_s is not None:
        offset = result.stop_at_s - (result.first_s or 0.0)
        console.print(
            _("[bold red]would stop at {at}[/] (+{offset})").format(
                at=format_trace_time(result.stop_at_s), offset=format_duration(offset)
            )
        )
    else:
        console.print(_("[bold green]would not stop[/]"))
    console.print(text(result.reason), soft_wrap=True)
    if result.stretches:
        console.print(_("idle stretches of 5 min or more:"))
        ended_by = {"stop": _("stop"), "end of trace": _("end of trace")}  # the JSON's two fixed values
        for s in result.stretches[-12:]:
            console.print(
                _("  {start}  {duration:>7}  reached {state:<14} ended by: {ended_by}").format(
                    start=format_trace_time(s.start_s),
                    duration=format_duration(s.duration_s),
                    state=s.peak_state.value,
                    ended_by=ended_by.get(s.ended_by, s.ended_by),
                ),
                soft_wrap=True,
            )
        if len(result.stretches) > 12:
            console.print(_("  (+{n} earlier; --json lists all)").format(n=len(result.stretches) - 12))
    for h in result.hangs:
        console.print(
            _("possible hang from {since}: {reason}").format(
                since=format_trace_time(h.since_s), reason=text(h.reason)
            ),
            soft_wrap=True,
        )


@app.command("run")
def run(  # noqa: PLR0917 - typer maps options to parameters
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help=_("Log what would be done; stop nothing."))
    ] = False,
    replay_path: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            help=_(
                "Read GPUs from a recording (nvidia-smi XML, -q, table or CSV log); only with --dry-run, "
                "as a recording's GPUs are not this machine's."
            ),
        ),
    ] = None,
    config: ConfigOpt = None,
    warn_min: WarnOpt = None,
    action: Annotated[
        str | None,
        typer.Option(
            "--action",
            help=_(
                "auto | a provider (runpod, vast, lambda, paperspace, jarvislabs, nebius, hyperstack, "
                "tencent, huawei, aws, gcp, azure, alibaba) | shutdown | command (default auto). "
                "`gpuwise idle providers` says what each does to the bill and the disk."
            ),
        ),
    ] = None,
    command: Annotated[
        str | None, typer.Option("--command", help=_("The stop command for --action command."))
    ] = None,
    pre_stop_hook: Annotated[
        str | None,
        typer.Option("--pre-stop-hook", help=_("Run this (e.g. a checkpoint sync) before stopping.")),
    ] = None,
    hook_timeout_s: Annotated[
        float | None, typer.Option("--hook-timeout-s", help=_("Kill the hook after this long (default 300)."))
    ] = None,
    hook_blocks: Annotated[
        bool | None,
        typer.Option("--hook-blocks/--no-hook-blocks", help=_("Whether a failing hook cancels the stop.")),
    ] = None,
    webhook: Annotated[str | None, typer.Option("--webhook", help=_("POST JSON notices here."))] = None,
    interval_s: Annotated[
        float | None, typer.Option("--interval-s", help=_("Seconds between observations (default 30)."))
    ] = None,
    threshold_pct: ThresholdOpt = None,
    window_min: WindowOpt = None,
    held_window_min: HeldWindowOpt = None,
    noise_floor_pct: NoiseOpt = None,
    held_threshold_pct: HeldThresholdOpt = None,
    max_gap_s: GapOpt = None,
    no_history: Annotated[
        bool, typer.Option("--no-history", help=_("Do not write samples to the monitor history database."))
    ] = False,
    wait_for_other: Annotated[
        bool,
        typer.Option(
            "--wait-for-other",
            help=_(
                "When another gpuwise idle daemon already runs here, wait for it to exit and then take "
                "over, instead of refusing with exit 2 (the systemd unit from `gpuwise idle install` "
                "does this)."
            ),
        ),
    ] = False,
    max_steps: Annotated[int | None, typer.Option("--max-steps", hidden=True)] = None,
    metadata_url: Annotated[str | None, typer.Option("--metadata-url", hidden=True)] = None,
    api_url: Annotated[str | None, typer.Option("--api-url", hidden=True)] = None,
) -> None:
    """Run the auto-stop daemon: observe every interval, warn, run the hook, stop the machine."""
    from gpuwise import paths
    from gpuwise.cli.output import check_input_file, setup_logging
    from gpuwise.errors import ConfigError
    from gpuwise.gpu.probe import open_probe
    from gpuwise.idle.daemon import IdleDaemon, RetryingProbe
    from gpuwise.idle.lock import daemon_lock, lock_path
    from gpuwise.idle.providers.metadata import MetadataEndpoints

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
        api_url=api_url,
    )
    setup_logging()
    # a recording that cannot be read is bad input (exit 2) now; a live driver that does not answer is
    # retried at every observation and counts as busy meanwhile
    if replay_path is not None:
        check_input_file(replay_path, _("Recording"), fix=_trace_fix())
    probe = open_probe(replay_path) if replay_path is not None else RetryingProbe(open_probe)
    history = None
    try:
        if replay_path is not None and not dry_run:
            # the recording's GPUs are not this machine's: a real stop would act on GPUs nobody looked at
            raise ConfigError(
                _("gpuwise idle run --replay judges a recording, not this machine's GPUs"),
                why=_("a stop would then stop this machine while its own GPUs may be running a job"),
                fix=_(
                    "add --dry-run to rehearse the daemon on a recording, or drop --replay to watch this "
                    "machine's GPUs"
                ),
            )
        # every input is read before the lock is taken: a bad token file leaves no lock file behind
        gatherers = IdleDaemon.inputs(settings, paths.data_dir())
        # one daemon per data directory, taken before the daemon reads or tidies its state file
        with daemon_lock(lock_path(paths.data_dir()), wait=wait_for_other):
            endpoints = MetadataEndpoints.all_at(metadata_url) if metadata_url else MetadataEndpoints()
            if replay_path is None and not no_history:  # a replay's old timestamps stay out of the history
                from gpuwise.monitor.history import HistoryStore

                history = HistoryStore(paths.history_db())
            daemon = IdleDaemon.on_this_machine(
                settings,
                probe,
                paths.data_dir(),
                gatherers,
                dry_run=dry_run,
                endpoints=endpoints,
                history=history,
            )
            _run_until_signal(daemon, max_steps)
    finally:
        probe.close()
        if history is not None:
            history.close()


def _run_until_signal(daemon: IdleDaemon, max_steps: int | None) -> None:
    """Run the daemon until SIGINT/SIGTERM (or `max_steps`), keeping its state file."""
    import logging
    import signal as signal_mod

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


@app.command("install")
def install(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help=_("Print the unit and the commands; write nothing."))
    ] = False,
    unit_dir: Annotated[Path, typer.Option("--unit-dir", help=_("Where to write the unit."))] = Path(
        "/etc/systemd/system"
    ),
    config: ConfigOpt = None,
    systemd_root: Annotated[Path, typer.Option("--systemd-root", hidden=True)] = Path("/run/systemd/system"),
) -> None:
    """Write a systemd unit for `gpuwise idle run` and enable it (or say what to run)."""
    from gpuwise import paths
    from gpuwise.cli.output import console
    from gpuwise.idle.actions import Runner
    from gpuwise.idle.daemon import IdleDaemon
    from gpuwise.idle.install import enable_unit, plan_install, write_unit
    from gpuwise.idle.unit import UNIT_NAME

    # validate the config and what it points at (the Jupyter token file) now, not in a service that would
    # fail at every restart while this said "enabled and started"
    IdleDaemon.inputs(_settings(config), paths.data_dir())
    plan = plan_install(unit_dir, config, paths.config_dir().resolve(), paths.data_dir().resolve())
    if dry_run:
        # plain echo: rich would wrap long lines and corrupt the unit text
        typer.echo(_("# would write {path}:").format(path=plan.target))
        typer.echo(plan.text)
        for c in plan.commands:
            typer.echo(_("# then: {command}").format(command=" ".join(c)))
        return
    write_unit(plan)
    console.print(_("wrote {path}").format(path=plan.target), markup=False)
    if not enable_unit(plan, Runner(), systemd_root):
        console.print(_("systemd is not running here; to enable the service run:"), markup=False)
        for c in plan.commands:
            console.print("  " + " ".join(c), markup=False)
        return
    console.print(
        _("enabled and started {unit} (journalctl -u {unit} shows its log)").format(unit=UNIT_NAME),
        markup=False,
    )


@app.command("status")
def status(json_out: JsonOpt = False, config: ConfigOpt = None) -> None:
    """The daemon's current state (from its state file) and the money its stops saved."""
    import time

    from gpuwise import paths
    from gpuwise.cli.output import console, print_json
    from gpuwise.idle.message import text
    from gpuwise.idle.state import state_path
    from gpuwise.idle.status import read_idle_status
    from gpuwise.units import format_duration, format_money

    st = read_idle_status(state_path(paths.data_dir()), _settings(config), time.time())
    if json_out:
        print_json(st.to_json())
        return
    if not st.found:
        if st.unreadable:
            said = _(
                "the idle daemon state at {path} cannot be read (damaged, or written by another gpuwise "
                "version); a running daemon writes it afresh at its next observation"
            )
        elif st.daemon_running:
            said = _("the idle daemon is running but has not written its state to {path} yet")
        else:
            said = _("no idle daemon state at {path}: `gpuwise idle run` has not run here")
        console.print(said.format(path=st.state_file), markup=False)
        if st.unreadable or st.daemon_running:
            alive = _("running") if st.daemon_running else _("not running")
            console.print(_("daemon {alive}").format(alive=alive), markup=False)
    else:
        age = format_duration(st.age_s) if st.age_s is not None else "?"
        mode = _(" (dry run)") if st.dry_run else ""
        alive = _("running") if st.daemon_running else _("not running? last update {age} ago").format(age=age)
        console.print(
            _("daemon {alive}{mode}; state: {state}").format(alive=alive, mode=mode, state=st.state),
            markup=False,
        )
        console.print(str(st.reason if st.reason is None else text(st.reason)), markup=False, soft_wrap=True)
        for s in st.stops[-3:]:
            kind = _("dry run") if s.get("dry_run") else (_("ok") if s.get("ok") else _("FAILED"))
            console.print(
                _("  stop {at} [{kind}] {action}").format(
                    at=time.strftime("%Y-%m-%d %H:%M", time.localtime(float(s["at"]))),
                    kind=kind,
                    action=s.get("action"),
                ),
                markup=False,
                soft_wrap=True,
            )
    savings = st.savings
    if savings.price_usd_per_hour is None:
        console.print(
            _(
                "money saved: unknown (set price_usd_per_hour under [machine] in config.toml); "
                "{hours:.1f} h off after {stops} stop(s)"
            ).format(hours=savings.hours_off, stops=savings.counted_stops),
            markup=False,
        )
    else:
        console.print(
            _(
                "money saved: {saved} = {hours:.1f} h off after {stops} stop(s) × {price}/h (compute only; "
                "assumes the machine would otherwise have idled until it was next started)"
            ).format(
                saved=format_money(savings.saved_usd or 0.0),
                hours=savings.hours_off,
                stops=savings.counted_stops,
                price=format_money(savings.price_usd_per_hour),
            ),
            markup=False,
            soft_wrap=True,
        )


@app.command("providers")
def providers(
    json_out: JsonOpt = False,
    this_machine: Annotated[
        bool,
        typer.Option(
            "--this-machine",
            help=_(
                "Say which provider this machine is, what the daemon would run to stop it and whether the "
                "credentials are there (asks the metadata services; stops nothing)."
            ),
        ),
    ] = False,
    config: ConfigOpt = None,
    metadata_url: Annotated[str | None, typer.Option("--metadata-url", hidden=True)] = None,
) -> None:
    """What each stop action does to the bill and to the disk, how the instance is found, what it needs."""
    from gpuwise.cli.output import console, print_json
    from gpuwise.idle.providers.table import PROVIDER_ACTIONS

    if this_machine:
        _this_machine(_settings(config), metadata_url, json_out)
        return
    if json_out:
        print_json([p.to_json() for p in PROVIDER_ACTIONS])
        return
    yes_no = {True: _("yes"), False: _("NO"), None: _("depends")}
    for p in PROVIDER_ACTIONS:
        console.print(
            _('{provider} (action = "{config_action}"): {action}').format(
                provider=p.provider, config_action=p.config_action, action=_(p.action)
            ),
            markup=False,
            soft_wrap=True,
        )
        console.print(
            _("  stops billing: {answer}. {bill}").format(answer=yes_no[p.stops_billing], bill=_(p.bill)),
            markup=False,
            soft_wrap=True,
        )
        console.print(
            _("  keeps the disk: {answer}. {disk}").format(answer=yes_no[p.keeps_disk], disk=_(p.disk)),
            markup=False,
            soft_wrap=True,
        )
        console.print(_("  found by: {how}").format(how=_(p.detected_by)), markup=False, soft_wrap=True)
        console.print(_("  needs: {needs}").format(needs=_(p.needs)), markup=False, soft_wrap=True)
    console.print(
        _(
            "auto picks the provider from the machine itself; when its stop call fails, gpuwise says so "
            "(log, wall, webhook) and tries [idle] fallback in order (default in auto: shutdown -h now, "
            "with a warning where that does not end the billing)."
        ),
        markup=False,
        soft_wrap=True,
    )


def _this_machine(settings: IdleSettings, metadata_url: str | None, json_out: bool) -> None:
    from gpuwise.cli.output import console, print_json
    from gpuwise.idle.providers.base import StopContext
    from gpuwise.idle.providers.check import check_machine
    from gpuwise.idle.providers.metadata import MetadataEndpoints
    from gpuwise.idle.providers.plan import STEPS

    ctx = StopContext(
        api_urls=dict.fromkeys(STEPS, settings.api_url) if settings.api_url else {},
        instance_id=settings.instance_id,
        allow_terminate=settings.allow_terminate,
    )
    endpoints = MetadataEndpoints.all_at(metadata_url) if metadata_url else MetadataEndpoints()
    check = check_machine(
        settings.action, command=settings.command, fallback=settings.fallback, ctx=ctx, endpoints=endpoints
    )
    if json_out:
        print_json(check.to_json())
        return
    if check.provider is None:
        console.print(
            _("this machine: no provider identified (action = {action})").format(
                action=repr(settings.action)
            ),
            markup=False,
        )
    else:
        console.print(
            _("this machine: {provider} {ids} (found by {found_by})").format(
                provider=check.provider, ids=check.ids, found_by=check.found_by
            ),
            markup=False,
        )
        console.print(_("credentials: {what}").format(what=check.credentials), markup=False, soft_wrap=True)
    steps = " -> ".join(check.steps) or _("nothing: no provider identified and no fallback")
    console.print(_("a stop would try: {steps}").format(steps=steps), markup=False, soft_wrap=True)
    console.print(_("ready") if check.ready else _("NOT READY: the first stop step would fail"), markup=False)
