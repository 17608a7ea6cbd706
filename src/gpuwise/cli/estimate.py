"""`gpuwise estimate WORKLOAD --gpu NAME [--count N] [--nodes M] [--network-gbps G] [--calibration FILE]
[--json]`.

docs/json.md.

Thin edge: reads the workload and calibration files, resolves the GPU, calls the pure estimator and
prints. Top-level imports stay cheap (typer and the standard library); pydantic and the estimator are
imported inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.estimate.models import Estimate
    from gpuwise.estimate.serving import Latency


def estimate(  # noqa: PLR0917 - a typer command takes one parameter per option
    workload: Annotated[Path, typer.Argument(help=_("Workload TOML file (see examples/)."))],
    gpu: Annotated[str, typer.Option("--gpu", help=_("GPU name, or NAME:COUNT (e.g. H100:8)."))],
    count: Annotated[
        int | None, typer.Option("--count", help=_("Number of GPUs, 1 or more (default 1)."))
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option("--nodes", help=_("Nodes the GPUs span, 1 or more (default: fewest nodes of 8).")),
    ] = None,
    network_gbps: Annotated[
        float | None,
        typer.Option(
            "--network-gbps",
            help=_(
                "Inter-node bandwidth of one node in Gb/s, all NICs together (default: InfiniBand/EFA for "
                "H100/H200/B200/A100 clusters, else a conservative 25)."
            ),
        ),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(
            "--calibration",
            help=_(
                "A `gpuwise bench --json` result, "
                '{"machine": {"gpu": "H100"}, "results": [{"task": "gemm_bf16", "fraction_of_peak": 0.7}]} '
                "(GEMM, memory_bandwidth, train_step_transformer mfu: they replace the default efficiency "
                "on that GPU, and scale the default of other GPUs of its generation), or a `gpuwise report "
                "--save-calibration` file (actual/planned hours per GPU and task, applied to that GPU only)."
            ),
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help=_("Print one JSON object (fields in docs/json.md)."))
    ] = False,
) -> None:
    """Memory per GPU, fit, throughput and time for a workload on one GPU configuration.

    A configuration that does not fit is still an answer (exit 0, "fits": false
    in --json), followed by what would fit: the largest micro_batch or seq_len
    (concurrency), each change of method, the fewest GPUs, each with its memory
    and time ("remedies" in --json).

    Time comes as a point and a range (hours_low to hours_high) from how far real
    jobs of the same training stack (the train section's framework key) fell from
    their estimates. Uneven layouts (--count 10 --nodes 4) are allowed. A speech
    workload (audio_hours in the inference section) also prints its real-time
    factor (audio seconds per wall second) and RTF.

    Examples:

      gpuwise estimate examples/llama3-8b-lora.toml --gpu L40S --count 2

      gpuwise estimate examples/llama3-8b-pretrain.toml --gpu H100:8 --nodes 2 --json

      gpuwise estimate examples/whisper-large-v3-transcribe.toml --gpu A100-80GB
    """
    from gpuwise.catalog.specs import parse_gpu_request, resolve_gpu
    from gpuwise.cli.output import check_at_least, check_input_file, print_json
    from gpuwise.errors import UsageError
    from gpuwise.estimate import estimate as run_estimate
    from gpuwise.estimate import load_calibration
    from gpuwise.workload import load_workload

    check_at_least(count, 1, "--count", example="--count 8")
    check_at_least(nodes, 1, "--nodes", example="--nodes 2")
    if network_gbps is not None and not (network_gbps > 0 and network_gbps < float("inf")):
        raise UsageError(
            _("--network-gbps must be a positive number of Gb/s, got {value}").format(value=network_gbps),
            fix=_("pass e.g. --network-gbps 100 for 100 Gigabit Ethernet, 3200 for 8×400 Gb/s EFA"),
        )
    check_input_file(
        workload, _("Workload file"), fix=_("give a workload TOML file (examples/ holds some)"), text=True
    )
    if calibration is not None:
        check_input_file(
            calibration,
            _("Calibration file"),
            fix=_("pass a calibration JSON (`gpuwise estimate --help` shows its shape)"),
        )
    name, request_count = parse_gpu_request(gpu)
    if request_count is not None and count is not None and request_count != count:
        raise UsageError(
            _("--gpu {gpu} says {request} GPUs but --count says {count}").format(
                gpu=gpu, request=request_count, count=count
            ),
            fix=_("give the count once: --gpu NAME:COUNT or --gpu NAME --count COUNT"),
        )
    n = count or request_count or 1
    spec = resolve_gpu(name)
    work = load_workload(workload)
    cal = load_calibration(calibration) if calibration is not None else None
    result = run_estimate(work, spec, n, nodes, cal, network_gbps=network_gbps)
    if not result.fits:  # what would fit: a few dozen more estimates, so only here where it is shown
        from dataclasses import replace

        from gpuwise.estimate.remedies import remedies

        found = remedies(work, spec, result, count=n, nodes=nodes, calibration=cal, network_gbps=network_gbps)
        result = replace(result, remedies=found)
    if as_json:
        print_json({**result.to_json(), "model": work.model_summary(), **_speech_json(result)})
        return
    _render(result, str(workload), work.name)


def _speech_json(est: Estimate) -> dict[str, object]:
    """A speech workload's `speech` object: windows, the real-time factor and its inverse (docs/json.md)."""
    d = est.details
    if "realtime_factor" not in d:
        return {}
    keys = ("windows", "window_advance_s", "realtime_factor", "rtf", "output_tokens_per_s")
    return {"speech": {k: d[k] for k in keys}}


def _memory_table(est: Estimate, path: str, name: str) -> Any:
    """The memory table: each part per GPU, the total against the capacity, and the fit verdict."""
    from rich.markup import escape
    from rich.table import Table

    from gpuwise.units import GIB

    m = est.memory
    title = _("{name} on {count}× {gpu}").format(name=escape(name or path), count=est.count, gpu=est.gpu) + (
        _(" ({count} nodes)").format(count=est.nodes) if est.nodes > 1 else ""
    )
    mem = Table(title=_("Memory per GPU — {title}").format(title=title), title_justify="left")
    mem.add_column(_("part"))
    mem.add_column("GiB", justify="right")
    parts = (
        ((_("measured peak (all parts together)"), m.overhead),)
        if est.stack == "measured"
        else (
            (_("weights"), m.weights),
            (_("gradients"), m.gradients),
            (_("optimizer states"), m.optimizer),
            (_("activations"), m.activations),
            (_("KV cache"), m.kv_cache),
            (_("runtime overhead"), m.overhead),
        )
    )
    for label, value in parts:
        mem.add_row(label, f"{value / GIB:,.1f}")
    verdict = {
        "fits": "[green]" + _("fits") + "[/]",
        "tight": "[bold yellow]"
        + _("tight: within the allocator's margin, expect an out-of-memory error")
        + "[/]",
        "does_not_fit": "[bold red]" + _("does not fit") + "[/]",
    }.get(est.fit_verdict, "[yellow]" + _("fit unknown") + "[/]")
    if est.infeasible_reason and est.fit_verdict != "unknown":
        verdict += _(" (memory only)")
    mem.add_row(
        "[bold]" + _("total") + "[/]",
        _("{used} of {capacity} — {verdict}").format(
            used=f"[bold]{m.total / GIB:,.1f}[/]",
            capacity=f"{est.memory_capacity_bytes / GIB:,.1f}",
            verdict=verdict,
        ),
    )
    return mem


def _render(est: Estimate, path: str, name: str) -> None:
    import math

    from rich.markup import escape
    from rich.table import Table

    from gpuwise.cli.output import console
    from gpuwise.units import GIB, format_hours

    mem = _memory_table(est, path, name)
    console.print(mem)
    if est.load_peak_bytes:
        console.print(
            _("Loading peak per GPU: {gib} GiB (before sharding)").format(
                gib=f"{est.load_peak_bytes / GIB:,.1f}"
            )
        )
    if est.host_ram_bytes:
        console.print(_("Host RAM per node: ~{gib} GiB").format(gib=f"{est.host_ram_bytes / GIB:,.0f}"))

    perf = Table(title=_("Speed and time"), title_justify="left", show_header=False)
    perf.add_column("what")
    perf.add_column("value", justify="right")
    if est.infeasible_reason:
        perf.add_row("[bold red]" + _("cannot run") + "[/]", escape(est.infeasible_reason))
    else:
        perf.add_row(_("throughput per GPU"), f"{est.throughput_per_gpu:,.1f} {est.throughput_unit}")
        perf.add_row(_("throughput total"), f"{est.throughput_total:,.1f} {est.throughput_unit}")
        finite = math.isfinite(est.hours)
        perf.add_row(_("wall-clock time"), format_hours(est.hours) if finite else "∞")
        if finite and est.meets_target and est.hours_high <= est.hours_low:  # a rate served for a fixed time
            perf.add_row(
                _("likely range"), _("{hours} (the service's duration)").format(hours=format_hours(est.hours))
            )
        elif finite and math.isfinite(est.hours_low) and math.isfinite(est.hours_high):
            perf.add_row(
                _("likely range"),
                f"{format_hours(est.hours_low)} – {format_hours(est.hours_high)} ({est.stack or 'stack'})",
            )
        perf.add_row(_("GPU-hours"), f"{est.gpu_hours:,.1f}" if finite else "∞")
        if math.isfinite(est.mfu):  # a measured task's FLOPs are unknown
            perf.add_row("MFU", f"{est.mfu:.0%}")
        if "realtime_factor" in est.details:  # speech: audio seconds per wall second, and its inverse
            rtfx = est.details["realtime_factor"]
            perf.add_row(
                _("real-time factor"),
                _("{rtfx}× real time (RTF {rtf})").format(rtfx=f"{rtfx:,.0f}", rtf=f"{1 / rtfx:.4f}"),
            )
        if est.meets_target is not None:
            perf.add_row(_("meets target rate"), _("yes") if est.meets_target else "[red]" + _("no") + "[/]")
        if est.latency is not None:
            _latency_rows(perf, est.latency)
    perf.add_row(_("bottleneck"), _bottleneck_words().get(est.bottleneck, est.bottleneck.replace("_", " ")))
    console.print(perf)
    if est.remedies:
        _render_remedies(est)
    console.print("[bold]" + _("Assumptions") + "[/]")
    for line in est.assumptions:
        console.print(f"  • {line}", soft_wrap=False, markup=False)  # sources quote [brackets] verbatim


def _bottleneck_words() -> dict[str, str]:
    """The bottleneck ids (kept in --json) as shown."""
    return {
        "compute": _("compute"),
        "memory_bandwidth": _("memory bandwidth"),
        "memory_capacity": _("memory capacity"),
        "communication": _("communication"),
    }


def _latency_rows(perf: Any, lat: Latency) -> None:
    """Serving: what one request sees at the workload's concurrency, then alone on the replica."""
    per_token = f"{lat.tpot_s * 1000:,.1f} ms ({lat.tokens_per_s_per_request:,.0f} tokens/s)"
    perf.add_row(
        _("per request at concurrency {count}").format(count=lat.concurrency),
        _("{kind} batching").format(kind=lat.batching),
    )
    perf.add_row(_("  time to first token"), f"{lat.ttft_s * 1000:,.0f} ms")
    perf.add_row(_("  time per output token"), per_token)
    perf.add_row(_("  one request, end to end"), f"{lat.request_s:,.2f} s")
    if lat.max_concurrency_in_memory is not None:
        perf.add_row(
            _("most requests in flight that fit"),
            _("{count} per replica").format(count=f"{lat.max_concurrency_in_memory:,}"),
        )
    if lat.max_concurrency_within_targets is not None:
        within = lat.max_concurrency_within_targets
        perf.add_row(
            _("  and meet the latency targets"),
            _("{count} per replica").format(count=f"{within:,}")
            if within
            else "[red]" + _("none: not even one request alone") + "[/]",
        )
    one = lat.single_stream
    if one is not None and lat.concurrency > 1:
        perf.add_row(_("single stream: first token"), f"{one.ttft_s * 1000:,.0f} ms")
        perf.add_row(_("  per output token"), f"{one.tpot_s * 1000:,.1f} ms")
        perf.add_row(_("  end to end"), f"{one.request_s:,.2f} s")


def _render_remedies(est: Estimate) -> None:
    """The changes that would fit, cheapest in GPU-hours first, and what will not help."""
    import math

    from rich.markup import escape
    from rich.table import Table

    from gpuwise.cli.output import console
    from gpuwise.units import GIB, format_hours

    title = _("What would fit (cheapest in GPU-hours first)")
    if not any(r.fits for r in est.remedies):
        title = _("What would fit: nothing gpuwise can change")
    table = Table(title=title, title_justify="left")
    # fold: Chinese has no spaces to wrap at, and rich cut such a line short with '…', mid-sentence
    table.add_column(_("change"), overflow="fold")
    table.add_column("GiB/GPU", justify="right")
    table.add_column(_("time"), justify="right")
    table.add_column(_("vs now"), justify="right")
    for r in est.remedies:
        if not r.fits:
            table.add_row(f"[yellow]{escape(r.change)}[/]", f"{r.memory_per_gpu_bytes / GIB:,.1f}", "—", "—")
            continue
        finite = math.isfinite(r.hours)
        ratio = f"×{r.time_ratio:.2f}" if math.isfinite(r.time_ratio) else "—"
        table.add_row(
            escape(r.change),
            f"{r.memory_per_gpu_bytes / GIB:,.1f}",
            format_hours(r.hours) if finite else "∞",
            ratio,
        )
    console.print(table)
