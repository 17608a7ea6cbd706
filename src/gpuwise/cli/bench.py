"""`gpuwise bench` (the standard suite), `gpuwise bench task -- CMD` and `gpuwise bench compare`.

Top-level imports stay cheap (typer and the standard library): torch, the bench room and the probe are
imported inside the commands. `bench task` and `compare` never import torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuwise.locale import _

app = typer.Typer(
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonOpt = Annotated[bool, typer.Option("--json", help=_("Print the results as one JSON document."))]
OutOpt = Annotated[Path | None, typer.Option("--out", help=_("Also write the results JSON to this file."))]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help=_("Config file (default: the user config.toml)."))
]
NoMetadataOpt = Annotated[
    bool,
    typer.Option(
        "--no-metadata",
        help=_(
            "Do not ask the cloud's metadata service for the provider and instance type (the config's "
            "machine section still counts)."
        ),
    ),
]
MetadataUrlOpt = Annotated[str | None, typer.Option("--metadata-url", hidden=True)]


def _machine(
    snapshot: Any, config: Path | None, no_metadata: bool, metadata_url: str | None
) -> dict[str, Any]:
    from gpuwise.bench.cpu import read_cpu
    from gpuwise.bench.machine import cloud_instance, machine_object
    from gpuwise.config import load_config

    section = load_config(config).section("machine")
    ask = not no_metadata and not (section.get("provider") and section.get("instance_type"))
    cloud = cloud_instance(metadata_url) if ask else None
    return machine_object(snapshot, read_cpu(), section, cloud)


def _write_out(document: dict[str, Any], out: Path | None) -> None:
    """--out, after the results are shown: a write that fails (a full disk, a read-only folder) at the end
    of a run that took minutes is an error that says so, the results already on the screen, where it was
    a traceback before anything was shown and the run was lost."""
    from gpuwise.cli.output import to_jsonable
    from gpuwise.errors import StorageError
    from gpuwise.files import write_atomic

    if out is None:
        return
    text = json.dumps(to_jsonable(document), indent=2, ensure_ascii=False, allow_nan=False)
    try:
        write_atomic(out, text + "\n")
    except OSError as exc:
        raise StorageError(
            _("Cannot write the results to {path}: {reason}").format(path=out, reason=exc.strerror or exc),
            why=_("the results are shown above (with --json: the document on stdout)"),
            fix=_("choose another --out, or save the --json output: gpuwise bench … --json > bench.json"),
        ) from exc


@app.callback()
def bench(  # noqa: PLR0917 - typer passes each option as a parameter
    ctx: typer.Context,
    suite: Annotated[
        str,
        typer.Option("--suite", help=_("quick (under 2 min on a CPU, 3 on a GPU) or standard (under 10).")),
    ] = "quick",
    device: Annotated[
        str | None, typer.Option("--device", help=_("cuda or cpu (default: cuda when torch sees a GPU)."))
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help=_("Run only this task (repeatable), e.g. --only gemm_bf16.")),
    ] = None,
    path: Annotated[
        Path | None, typer.Option("--path", help=_("Folder for the disk test (default: the temp folder)."))
    ] = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    config: ConfigOpt = None,
    no_metadata: NoMetadataOpt = False,
    metadata_url: MetadataUrlOpt = None,
) -> None:
    """Measure what this machine delivers against its datasheet; `task` times your own command,
    `compare` puts results side by side with their cost.

    Without a sub-command, run the standard tasks: GEMM per dtype, memory and host↔device bandwidth,
    all-reduce, disk, data loading, training steps of a small GPT and a ResNet-50-layout CNN (fp32 and
    AMP) and LLM decode.

    Each result is a value against its ceiling (the GPU's datasheet; on a CPU, cores × clock × vector
    width and an assumed DDR5 ceiling), with the fraction reached. A task that cannot run here is a
    result with value null and its reason. Tasks: gemm_fp32, gemm_tf32, gemm_bf16, gemm_fp16, gemm_fp8,
    memory_bandwidth (copy), memory_bandwidth_triad, h2d_bandwidth, d2h_bandwidth (pinned; _pageable
    too), allreduce_bus_bandwidth, disk_write, disk_read, data_loader, train_step_transformer (and _fp32),
    train_step_cnn (and _fp32), llm_decode.

    Example: gpuwise bench --suite quick --json --out bench.json
    """
    if ctx.invoked_subcommand is not None:
        return
    from gpuwise.bench import prepare
    from gpuwise.bench import suite as suite_mod
    from gpuwise.bench.machine import read_snapshot
    from gpuwise.cli.bench_output import SuiteProgress, print_suite
    from gpuwise.cli.output import check_output_file, err_console, print_json

    if out is not None:
        check_output_file(out, "--out", name="bench.json")
    suite_mod.sizes_for(suite, "cpu")  # an unknown suite is bad input before anything starts
    tasks = suite_mod.select_tasks(only)
    disk = prepare.check_disk_path(path)
    torch = prepare.import_torch()
    chosen = prepare.choose_device(torch, device)
    if device is None and chosen == "cpu":
        err_console.print(prepare.cpu_fallback_note(torch), style="yellow", markup=False, highlight=False)
    snapshot = read_snapshot() if chosen == "cuda" else None
    machine = _machine(snapshot, config, no_metadata, metadata_url)
    machine.update(suite_mod.framework(torch))
    pcie = _pcie_gen(snapshot)
    context = prepare.make_context(torch, suite, chosen, disk, pcie)
    started = prepare.now_iso()
    with SuiteProgress(err_console, len(tasks)) as progress:
        results = suite_mod.run_tasks(context, tasks, on_start=progress.start, on_done=progress.done)
    document = prepare.results_document(machine, results, started_at=started, suite=suite, device=chosen)
    if as_json:
        print_json(document)
    else:
        print_suite(document)
    _write_out(document, out)


def _pcie_gen(snapshot: Any) -> int | None:
    from gpuwise.gpu.sample import value_or_none

    if snapshot is None or not snapshot.samples:
        return None
    gen = value_or_none(snapshot.samples[0].pcie_gen_max)
    return int(gen) if gen else None


@app.command("task", context_settings={"allow_interspersed_args": False})
def task(  # noqa: PLR0917 - typer passes each option as a parameter
    command: Annotated[
        list[str], typer.Argument(help=_("Your task, after `--`: gpuwise bench task -- ./render.sh"))
    ],
    units: Annotated[
        float | None,
        typer.Option(
            "--units", help=_('Units of work the whole run does (else summed {"gpuwise_units": K} lines).')
        ),
    ] = None,
    unit: Annotated[
        str, typer.Option("--unit", help=_("The unit's name: frames, samples, steps, …."))
    ] = "units",
    max_seconds: Annotated[
        float,
        typer.Option("--max-seconds", help=_("Stop the task (its whole process group) after this long.")),
    ] = 3600.0,
    interval: Annotated[float, typer.Option("--interval", help=_("Seconds between GPU readings."))] = 1.0,
    replay: Annotated[
        Path | None,
        typer.Option("--replay", help=_("Read the GPUs from this recording instead of the driver.")),
    ] = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    config: ConfigOpt = None,
    no_metadata: NoMetadataOpt = False,
    metadata_url: MetadataUrlOpt = None,
) -> None:
    """Run your own task package, bounded, and record seconds per unit of work, peak GPU memory, GPU
    utilization, power and clocks, and whether it looked compute- or memory-bound.

    The result feeds a workload with task = "measured" in estimate and plan. Exit 1 when the command
    fails or no units were counted (the result is still written), 2 on bad input.

    Example: gpuwise bench task --unit frames --out render.json -- blender -b scene.blend -a
    """
    from gpuwise.bench.usertask import check_command
    from gpuwise.cli.output import check_output_file
    from gpuwise.errors import ConfigError

    _check_positive(units, "--units", "--units 128")
    _check_positive(max_seconds, "--max-seconds", "--max-seconds 600")
    _check_positive(interval, "--interval", "--interval 1")
    if not unit.strip() or len(unit) > 40 or not unit.isprintable():
        raise ConfigError(
            _("--unit {unit} is not a unit name").format(unit=repr(unit)),
            fix=_("use a short word: --unit frames"),
        )
    if out is not None:
        check_output_file(out, "--out", name="bench-task.json")
    check_command(command)
    _run_task(
        command, units, unit, max_seconds, interval, replay, as_json, out, config, no_metadata, metadata_url
    )


def _check_positive(value: float | None, option: str, example: str) -> None:
    """More than 0 and finite (0 seconds would stop the task before it starts); None means not given."""
    from gpuwise.errors import ConfigError

    if value is not None and not 0 < value < float("inf"):
        raise ConfigError(
            _("{option} must be more than 0, not {value}").format(option=option, value=f"{value:g}"),
            fix=_("use e.g. {example}").format(example=example),
        )


def _run_task(  # noqa: PLR0917 - one value per `bench task` option
    command: list[str],
    units: float | None,
    unit: str,
    max_seconds: float,
    interval: float,
    replay: Path | None,
    as_json: bool,
    out: Path | None,
    config: Path | None,
    no_metadata: bool,
    metadata_url: str | None,
) -> None:
    from gpuwise import __version__
    from gpuwise.bench.prepare import now_iso
    from gpuwise.bench.usertask import run_command, task_section
    from gpuwise.cli.bench_output import print_task
    from gpuwise.cli.output import err_console, print_error, print_json, sanitize_terminal_text
    from gpuwise.errors import GpuwiseError
    from gpuwise.gpu.probe import open_probe

    probe: Any = None
    unread = ""  # why no GPU could be read: said before the run, or a broken driver passes for "no GPU"
    try:
        probe = open_probe(replay)
    except GpuwiseError as exc:
        if replay is not None:
            raise
        unread = exc.message
    try:
        snapshot = probe.read() if probe is not None else None
        if snapshot is not None and not snapshot.samples and snapshot.errors:
            unread = "; ".join(snapshot.errors)
        if unread:
            note = _(
                "Note: no GPU could be read ({why}), so the result records no GPU (gpuwise doctor says why)."
            )
            err_console.print(note.format(why=unread), style="yellow", markup=False, highlight=False)
        machine = _machine(snapshot, config, no_metadata, metadata_url)
        started = now_iso()
        run = run_command(
            command,
            max_seconds=max_seconds,
            probe=probe,
            interval_s=interval,
            echo=lambda line: err_console.print(sanitize_terminal_text(line), markup=False, highlight=False),
        )
    finally:
        if probe is not None:
            probe.close()
    section, problems = task_section(run, units=units, unit=unit)
    document = {
        "kind": "gpuwise-bench-task",
        "machine": machine,
        "task": section,
        "started_at": started,
        "gpuwise_version": __version__,
    }
    if as_json:
        print_json(document)
    else:
        print_task(document)
    _write_out(document, out)
    if problems:
        saved = ""
        if out or as_json:
            recorded = _(" The result is recorded in {path}.") if out else _(" The result is recorded.")
            saved = recorded.format(path=out)
        print_error(f"{'; '.join(problems)}.{saved}")
        raise typer.Exit(1)


@app.command("compare")
def compare(
    files: Annotated[
        list[Path], typer.Argument(help=_("Results files from gpuwise bench or gpuwise bench task."))
    ],
    price: Annotated[
        list[float] | None,
        typer.Option("--price", help=_("Price in $/hour: one for all files, or one per file in order.")),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Results side by side, with $ per 1M training tokens, per 1k images and per unit of your task.

    The price is --price, else the one recorded with the run (the config's machine price_usd_per_hour), else
    the catalog's lowest on-demand price for the recorded provider and instance type.

    Example: gpuwise bench compare h100.json l40s.json --price 2.99 --price 1.10
    """
    from gpuwise.bench.compare import compare as compare_columns
    from gpuwise.bench.compare import load_result
    from gpuwise.cli.bench_output import print_compare
    from gpuwise.cli.output import check_at_least, check_input_file, print_json

    for value in price or []:
        check_at_least(value, 0, "--price", example="--price 2.49")
    loaded = []
    for file in files:
        check_input_file(file, _("Results file"), fix=_("give a results JSON file"), text=True)
        loaded.append(load_result(file))
    columns = compare_columns(loaded, price or [])
    if as_json:
        print_json({"columns": columns})
    else:
        print_compare(columns)
