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
    from gpuwise.idle.policy import ReplayResult
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
    float | None, typer.Option("--threshold-pct", help="GPU util above this is activity [default: 5].")
]
WindowOpt = Annotated[
    float | None,
    typer.Option("--window-min", help="Minutes of continuous idleness before a stop [default: 60]."),
]
HeldWindowOpt = Annotated[
    float | None,
    typer.Option("--held-window-min", help="Window while GPU memory is held or not reported [default: 120]."),
]
WarnOpt = Annotated[
    float | None, typer.Option("--warn-min", help="Warn this many minutes before a stop [default: 10].")
]
MemChangeOpt = Annotated[
    float | None,
    typer.Option(
        "--mem-change-mib", help="A change of GPU memory used this large is activity [default: 64]."
    ),
]
BaselineOpt = Annotated[
    float | None,
    typer.Option(
        "--baseline-mem-mib",
        help="GPU memory a GPU uses with no job (driver, desktop); above it memory counts as held "
        "[default: 1024].",
    ),
]
NoiseOpt = Annotated[
    float | None,
    typer.Option(
        "--noise-floor-pct",
        help="On a GPU with no job (no compute process, memory at baseline), util up to this is display "
        "noise, not activity; 0 turns it off [default: 35].",
    ),
]
GapOpt = Annotated[
    float | None,
    typer.Option("--max-gap-s", help="A longer gap between samples counts as busy [default: 120]."),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="Config file (default: the user config.toml).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _settings(config: Path | None, **overrides: Any) -> IdleSettings:
    from gpuwise.config import load_config
    from gpuwise.idle.settings import load_settings

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
            "max_gap_s": cfg.max_gap_s,
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
    trace: Annotated[Path, typer.Argument(help="nvidia-smi --query-gpu=timestamp,… --format=csv output.")],
    json_out: JsonOpt = False,
    threshold_pct: ThresholdOpt = None,
    window_min: WindowOpt = None,
    held_window_min: HeldWindowOpt = None,
    warn_min: WarnOpt = None,
    mem_change_mib: MemChangeOpt = None,
    baseline_mem_mib: BaselineOpt = None,
    noise_floor_pct: NoiseOpt = None,
    max_gap_s: GapOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Replay a recorded GPU trace through the idle policy: when would it stop the machine, and why."""
    from gpuwise.cli.output import console, print_json
    from gpuwise.gpu.smi_csv import format_trace_time, read_query_csv
    from gpuwise.idle.policy import group_samples
    from gpuwise.idle.policy import replay as run_replay
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
        max_gap_s=max_gap_s,
    )
    samples = read_query_csv(trace)
    observations = group_samples(samples)
    result = run_replay(observations, settings.policy, samples=len(samples))
    gpus = sorted({s.index for s in samples})
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
