"""`gpuwise export KIND`: write a SkyPilot task, a Kubernetes manifest, torchrun lines or a Dockerfile for a
plan option (`--plan plan.json --pick N`) or for flags (`--gpu H100:8 --nodes 2 --spot`).

Thin edge: checks the options, reads the plan (a file or stdin) and the workload, calls the export room's
renderers and writes the whole text at once (stdout, or --out atomically). Top-level imports stay cheap.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import N_, _

if TYPE_CHECKING:
    from gpuwise.export.target import Job, Target

KIND_NAMES = ("dockerfile", "k8s", "skypilot", "torchrun")
_PLAN_FIX = N_(
    "write it with `gpuwise plan WORKLOAD --json > plan.json` and pass --plan plan.json (or - for stdin)"
)


def export(  # noqa: PLR0917 - typer passes options positionally
    kind: Annotated[
        str, typer.Argument(help="skypilot | k8s | torchrun | dockerfile", show_default=False, metavar="KIND")
    ],
    script: Annotated[
        list[str] | None,
        typer.Argument(
            help=_("The training script and its arguments, after `--` (default: train.py)."),
            metavar="[-- SCRIPT ARGS…]",
        ),
    ] = None,
    plan: Annotated[
        str | None,
        typer.Option(
            "--plan", metavar="PLAN.json", help=_("Output of `gpuwise plan --json` ('-' reads stdin).")
        ),
    ] = None,
    pick: Annotated[
        int | None, typer.Option("--pick", metavar="N", help=_("Option N of the plan (default 1)."))
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", metavar="GPU[:N]", help=_("Without a plan: N GPUs in total, e.g. H100:16.")),
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option("--nodes", help=_("Without a plan: nodes (default: nodes of at most 8 GPUs).")),
    ] = None,
    spot: Annotated[
        bool, typer.Option("--spot", help=_("Without a plan: spot/preemptible machines."))
    ] = False,
    provider: Annotated[
        str | None,
        typer.Option("--provider", metavar="ID", help=_("Without a plan: the provider (gcp, aws, …).")),
    ] = None,
    region: Annotated[str | None, typer.Option("--region", help=_("Without a plan: the region."))] = None,
    workload: Annotated[
        Path | None,
        typer.Option(
            "--workload", metavar="W.toml", help=_("Workload file: the job's name and dataset size (disk).")
        ),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help=_("Job name (default: the workload's)."))] = None,
    sync: Annotated[
        str | None,
        typer.Option("--sync", metavar="URL", help=_("Checkpoint sync URL for `gpuwise run --sync`.")),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option("--image", help=_("k8s: the container image (build it from `export dockerfile`).")),
    ] = None,
    driver: Annotated[
        str | None,
        typer.Option("--driver", help=_("dockerfile: the NVIDIA driver it must run on, e.g. 550.54.15.")),
    ] = None,
    torch: Annotated[
        str | None,
        typer.Option(
            "--torch", help=_("dockerfile, skypilot: the PyTorch version (default: newest that fits).")
        ),
    ] = None,
    disk_gb: Annotated[
        int | None, typer.Option("--disk-gb", help=_("skypilot: disk per node (default 100 + the dataset)."))
    ] = None,
    idle_min: Annotated[
        int, typer.Option("--idle-min", help=_("skypilot: minutes of idle GPUs before a stop."))
    ] = 60,
    out: Annotated[Path | None, typer.Option("--out", help=_("Write here (default: stdout)."))] = None,
) -> None:
    """Write the file an engine takes to run a plan option: a SkyPilot task YAML, a Kubernetes Job (a
    JobSet for several nodes), one torchrun line per node, or a Dockerfile.

    gpuwise is wired in: `gpuwise run --sync` for checkpoints, the idle stopper (SkyPilot, with its
    autostop as fallback), the exporter as a native sidecar with Prometheus annotations (k8s). The
    Dockerfile's CUDA base image is one the --driver supports, with the matching PyTorch wheel.

    Examples:

      gpuwise plan job.toml --json > plan.json && gpuwise export skypilot --plan plan.json --pick 2

      gpuwise plan job.toml --json | gpuwise export k8s --plan - --image ghcr.io/me/job:1 -- train.py --lr 3

      gpuwise export torchrun --gpu H100:16 --nodes 2

      gpuwise export dockerfile --gpu B200:8 --driver 570.124.06 --out Dockerfile
    """
    from gpuwise.export import render

    _check_options(kind, plan=plan, pick=pick, gpu=gpu, flags=(nodes, spot, provider, region), out=out)
    from gpuwise.cli.output import check_at_least

    check_at_least(disk_gb, 1, "--disk-gb", example="--disk-gb 200")
    check_at_least(idle_min, 1, "--idle-min", example="--idle-min 60")
    target, plan_name, dataset_gb = _target(
        plan, pick, gpu, nodes=nodes, spot=spot, provider=provider, region=region
    )
    job = _job(
        script or [],
        workload=workload,
        plan_name=plan_name,
        dataset_gb=dataset_gb,
        options={"name": name, "sync_url": sync, "image": image, "driver": driver, "torch": torch},
        disk_gb=disk_gb,
        idle_min=idle_min,
    )
    text = render(kind, target, job)  # whole before anything is written
    if out is None:
        sys.stdout.write(text)
    else:
        _write(out, text)
    _warn_placeholder(kind, job)


def _check_options(
    kind: str,
    *,
    plan: str | None,
    pick: int | None,
    gpu: str | None,
    flags: tuple[int | None, bool, str | None, str | None],
    out: Path | None,
) -> None:
    from gpuwise.cli.output import check_at_least, check_output_file
    from gpuwise.errors import NotFoundError, UsageError

    if kind not in KIND_NAMES:
        raise NotFoundError(
            _("export kind"),
            kind,
            KIND_NAMES,
            fix=_("give one of: {kinds}").format(kinds=", ".join(KIND_NAMES)),
        )
    if plan is None and gpu is None:
        raise UsageError(
            _("Nothing to export: give a plan option or the machines"),
            fix=_("pass --plan plan.json [--pick N] (from `gpuwise plan WORKLOAD --json`), or --gpu H100:8"),
        )
    if plan is not None and gpu is not None:
        raise UsageError(
            _("--plan and --gpu exclude each other"),
            why=_("the plan option names its own GPU"),
            fix=_("give one of them"),
        )
    nodes, spot, provider, region = flags
    if plan is not None and (nodes is not None or spot or provider or region):
        raise UsageError(
            _("--nodes, --spot, --provider and --region describe machines without a plan"),
            why=_("the plan option names its own"),
            fix=_("drop them, or pick another option with --pick N"),
        )
    if pick is not None and plan is None:
        raise UsageError(_("--pick needs --plan"), fix=_("pass --plan plan.json --pick N"))
    check_at_least(pick, 1, "--pick", example="--pick 1")
    check_at_least(nodes, 1, "--nodes", example="--nodes 2")
    if out is not None:
        check_output_file(out, "--out", name=f"{kind}.txt")


def _read_plan(plan: str) -> Any:
    from gpuwise.cli.output import check_input_file
    from gpuwise.safe_read import load_json, parse_json

    if plan == "-":
        return parse_json(sys.stdin.read(), _("the plan on stdin"), fix=_(_PLAN_FIX))
    path = Path(plan)
    check_input_file(path, _("Plan file"), fix=_(_PLAN_FIX))
    return load_json(path, what=_("Plan file"), fix=_(_PLAN_FIX))


def _target(
    plan: str | None,
    pick: int | None,
    gpu: str | None,
    *,
    nodes: int | None,
    spot: bool,
    provider: str | None,
    region: str | None,
) -> tuple[Target, str | None, float]:
    """(the target, the workload name the plan recorded, its dataset GB)."""
    from gpuwise.export.target import plan_workload, target_from_flags, target_from_plan

    if plan is not None:
        doc = _read_plan(plan)
        plan_name, dataset_gb = plan_workload(doc)
        return target_from_plan(doc, pick or 1), plan_name, dataset_gb
    assert gpu is not None  # _check_options
    return target_from_flags(gpu, nodes=nodes, spot=spot, provider=provider, region=region), None, 0.0


def _job(
    script: list[str],
    *,
    workload: Path | None,
    plan_name: str | None,
    dataset_gb: float,
    options: dict[str, str | None],
    disk_gb: int | None,
    idle_min: int,
) -> Job:
    from gpuwise.export.target import Job, disk_gb_for, job_name

    work_name = plan_name
    if workload is not None:
        from gpuwise.cli.output import check_input_file
        from gpuwise.workload.loading import load_workload

        check_input_file(workload, _("Workload file"), fix=_("give a workload TOML file"), text=True)
        work = load_workload(workload)
        work_name, dataset_gb = work.name or workload.stem, work.data.dataset_gb
    defaults = Job()
    return Job(
        name=job_name(options["name"] or work_name or defaults.name),
        command=tuple(script) or defaults.command,
        sync_url=options["sync_url"],
        disk_gb=disk_gb if disk_gb is not None else disk_gb_for(dataset_gb),
        image=options["image"] or defaults.image,
        idle_minutes=idle_min,
        driver=options["driver"],
        torch=options["torch"],
    )


def check_plan_export(kind: str | None, out: Path | None, *, as_json: bool, html: Path | None) -> None:
    """`plan --export KIND [--out FILE]`: the options, checked before the plan is computed."""
    from gpuwise.cli.output import check_output_file
    from gpuwise.errors import NotFoundError, UsageError

    if kind is None:
        raise UsageError(_("--out goes with --export"), fix=_("add --export KIND, or drop --out"))
    if kind not in KIND_NAMES:
        raise NotFoundError(
            _("export kind"),
            kind,
            KIND_NAMES,
            fix=_("give one of: {kinds}").format(kinds=", ".join(KIND_NAMES)),
        )
    if as_json:
        raise UsageError(
            _("--export and --json both print to stdout"),
            fix=_("drop one, or write the plan with --json and run `gpuwise export KIND --plan -` on it"),
        )
    if html is not None:
        raise UsageError(
            _("--export writes the option's file instead of the plan's report, so --html would be skipped"),
            fix=_("run the plan once with --html and once with --pick N --export KIND"),
        )
    if out is not None:
        check_output_file(out, "--out", name=f"{kind}.txt")


def export_plan_option(kind: str, doc: dict[str, Any], pick: int, out: Path | None) -> None:
    """`plan … --pick N --export KIND`: the same file `gpuwise export KIND --plan` writes for that plan."""
    from gpuwise.export import render
    from gpuwise.export.target import Job, disk_gb_for, job_name, plan_workload, target_from_plan

    name, dataset_gb = plan_workload(doc)
    job = Job(name=job_name(name or Job().name), disk_gb=disk_gb_for(dataset_gb))
    text = render(kind, target_from_plan(doc, pick), job)
    if out is None:
        sys.stdout.write(text)
    else:
        _write(out, text)
    _warn_placeholder(kind, job)


def _warn_placeholder(kind: str, job: Job) -> None:
    """k8s without --image: the Job names an image no registry serves, and its pods would not start."""
    from gpuwise.cli.output import err_console

    if kind == "k8s" and job.placeholder_image:
        err_console.print(
            _(
                "[yellow]Warning:[/] the Job's image {image} is a placeholder: its pods cannot start until "
                "you build an image (`gpuwise export dockerfile`), push it and export again with --image."
            ).format(image=job.image),
            soft_wrap=True,
            highlight=False,
        )


def _write(path: Path, text: str) -> None:
    from gpuwise.errors import StorageError
    from gpuwise.files import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise StorageError(
            _("Cannot write {path}: {error}").format(path=path, error=exc.strerror),
            fix=_("check that the folder exists and is writable"),
        ) from exc
