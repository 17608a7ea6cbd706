"""`gpuwise run`, `gpuwise checkpoints list|verify|pull` and `gpuwise ledger`.

Top-level imports stay cheap (typer and the standard library); the run room, fsspec and the GPU probe are
imported inside the commands.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from gpuwise.run.ledger import LedgerStore
    from gpuwise.run.manifest import Manifest
    from gpuwise.run.planref import PlannedRun
    from gpuwise.run.runner import RunOptions, RunResult, Supervisor

PREEMPTION_CHOICES = ("auto", "aws", "gcp", "azure", "off")

SyncOpt = Annotated[
    str | None,
    typer.Option(
        "--sync",
        metavar="URL",
        help="Upload complete checkpoints here: file:///mnt/volume/ckpt, s3://bucket/prefix, gs://…, "
        "oss://bucket/prefix (Alibaba OSS), cos://bucket-appid/prefix (Tencent COS).",
    ),
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint-url",
        help="S3-compatible endpoint (MinIO, R2, OSS, COS); default $AWS_ENDPOINT_URL or AWS itself; for "
        "oss:// and cos:// the one of --region.",
    ),
]
RegionOpt = Annotated[
    str | None,
    typer.Option(
        "--region",
        help="The bucket's region: oss:// uses s3.oss-REGION.aliyuncs.com, cos:// cos.REGION.myqcloud.com "
        "(default $OSS_REGION / $COS_REGION).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _config_machine(config: Path | None) -> dict[str, Any]:
    from gpuwise.config import load_config

    return load_config(config).section("machine")


def _gpus() -> tuple[str | None, int | None]:
    """The GPU model and count of this machine for the ledger; (None, None) when none can be read."""
    try:
        from gpuwise.gpu.probe import open_probe
        from gpuwise.gpu.sample import value_or_none

        probe = open_probe()
        try:
            snap = probe.read()
        finally:
            probe.close()
    except Exception:  # no GPU, no driver: the ledger says unknown
        return None, None
    names = [value_or_none(s.name) for s in snap.samples]
    if not names:
        return None, None
    return (str(names[0]) if names[0] else None), len(names)


def _ledger() -> LedgerStore:
    from gpuwise import paths
    from gpuwise.run.ledger import LedgerStore

    return LedgerStore(paths.history_db())


def _check_budget(project: str | None, budget_usd: float | None, force: bool) -> None:
    from gpuwise.cli.output import err_console
    from gpuwise.errors import ConfigError
    from gpuwise.run.ledger import budget_state

    if budget_usd is None:
        return
    if project is None:
        raise ConfigError(
            "--budget-usd needs --project", fix="name the project: --project NAME --budget-usd X"
        )
    if not budget_usd > 0:
        raise ConfigError(
            f"--budget-usd must be more than 0, not {budget_usd:g}", fix="use e.g. --budget-usd 500"
        )
    store = _ledger()
    try:
        state = budget_state(store.entries(), project, budget_usd)
    finally:
        store.close()
    pct = 100 * state.fraction
    unknown = (
        f" ({state.runs_without_cost} run(s) without a known price not counted)"
        if state.runs_without_cost
        else ""
    )
    if state.level == "over" and not force:
        raise ConfigError(
            f"Project {project!r} has spent ${state.spent_usd:,.2f} of its ${budget_usd:,.2f} budget "
            f"({pct:.0f} %){unknown}",
            fix="raise --budget-usd, or add --force to run anyway",
        )
    if state.level != "ok":
        err_console.print(
            f"[yellow]Warning:[/] project {project!r} has spent ${state.spent_usd:,.2f} of its "
            f"${budget_usd:,.2f} budget ({pct:.0f} %){unknown}.",
            soft_wrap=True,
        )


def _result_json(r: RunResult) -> dict[str, Any]:
    from gpuwise.cli.output import to_jsonable

    out: dict[str, Any] = to_jsonable(r)
    return out


def _check_run_options(command: list[str], preemption: str, grace_s: float, keep: int) -> None:
    """Bad option values are bad input (exit 2) before anything starts."""
    from gpuwise.cli.output import check_at_least
    from gpuwise.errors import ConfigError, NotFoundError

    if preemption not in PREEMPTION_CHOICES:
        raise NotFoundError(
            "--preemption value", preemption, PREEMPTION_CHOICES, fix="use auto, aws, gcp, azure or off"
        )
    check_at_least(grace_s, 0, "--grace-s", example="--grace-s 30")
    check_at_least(keep, 1, "--keep", example="--keep 3")
    if not command:
        raise ConfigError(
            "No command to run", fix="put the command after `--`: gpuwise run -- python train.py"
        )


def _run_options(  # noqa: PLR0917 - one value per `run` option
    command: list[str],
    checkpoint_dir: Path | None,
    sync: str | None,
    endpoint_url: str | None,
    region: str | None,
    resume: bool,
    grace_s: float,
    keep: int,
    run_id: str | None,
    poll_s: float,
    preemption: str,
    metadata_url: str | None,
) -> RunOptions:
    """The supervisor's options from the command line (defaults from the environment filled in)."""
    from gpuwise import paths
    from gpuwise.idle.providers.metadata import MetadataEndpoints
    from gpuwise.run.runner import RunOptions

    ckpt_dir = checkpoint_dir or Path(os.environ.get("GPUWISE_CHECKPOINT_DIR") or "checkpoints")
    endpoints = MetadataEndpoints.all_at(metadata_url) if metadata_url else MetadataEndpoints()
    return RunOptions(
        command=tuple(command),
        checkpoint_dir=ckpt_dir,
        pid_dir=paths.data_dir() / "run",
        sync_url=sync,
        endpoint_url=endpoint_url,
        region=region,
        resume=resume,
        grace_s=grace_s,
        keep=keep,
        run_id=run_id,
        poll_s=poll_s,
        preemption=preemption,
        endpoints=endpoints,
    )


def _ledger_row(
    ledger: LedgerStore, sup: Supervisor, machine: dict[str, Any], project: str | None, tags: tuple[str, ...]
) -> int:
    """Record the run's start (GPU from the probe, price and provider from config.toml [machine])."""
    from gpuwise.run.ledger import RunStart

    gpu, gpus = _gpus()
    price = machine.get("price_usd_per_hour")
    price = float(price) if isinstance(price, int | float) and not isinstance(price, bool) else None
    return ledger.start(
        RunStart(
            run_id=sup.run_id,
            project=project,
            tags=tags,
            command=sup.opts.command,
            started_at=time.time(),
            gpu=gpu,
            gpus=gpus,
            provider=machine.get("provider"),
            instance_type=machine.get("instance_type"),
            price_usd_per_hour=price,
            price_source="config.toml [machine]" if price is not None else None,
        )
    )


def _read_plan(plan: Path | None, pick: str) -> PlannedRun | None:
    """The plan the run comes from (`--plan`), read and checked before anything starts (bad file: exit 2)."""
    from gpuwise.cli.output import check_input_file
    from gpuwise.errors import ConfigError
    from gpuwise.run.planref import planned_from_plan
    from gpuwise.safe_read import parse_json

    if plan is None:
        return None
    fix = "give the output of `gpuwise plan WORKLOAD --json > plan.json`"
    check_input_file(plan, "--plan", fix=fix, text=True)
    try:
        text = plan.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--plan {plan}: {exc.strerror or exc}", fix=fix) from exc
    return planned_from_plan(parse_json(text, f"--plan {plan}", fix=fix), pick, plan.name)


def _run_recorded(  # noqa: PLR0917 - one value per recorded part of the run
    sup: Supervisor,
    ledger: LedgerStore | None,
    machine: dict[str, Any],
    project: str | None,
    tags: tuple[str, ...],
    planned: PlannedRun | None = None,
) -> RunResult:
    """Run the job under the supervisor with its ledger row opened before and closed after (exit code 2
    when gpuwise itself failed)."""
    row = None if ledger is None else _ledger_row(ledger, sup, machine, project, tags)
    if ledger is not None and row is not None and planned is not None:
        ledger.record_plan(row, planned)
    try:
        result = sup.run()
    except BaseException:
        if ledger is not None and row is not None:
            ledger.finish(row, time.time(), 2, 0, 0, 0)
            ledger.close()
        raise
    if ledger is not None and row is not None:
        try:
            ledger.finish(
                row,
                time.time(),
                result.exit_code,
                result.preemptions,
                result.checkpoints_uploaded,
                result.bytes_uploaded,
            )
        finally:
            ledger.close()
    return result


def _report(result: RunResult, sync: str | None, json_out: bool) -> None:
    """The run's summary: one JSON line on stdout, or a line (and a warning if a checkpoint stayed local)
    on stderr."""
    from gpuwise.cli.output import err_console

    if json_out:
        sys.stdout.write(json.dumps(_result_json(result)) + "\n")
        sys.stdout.flush()
        return
    uploaded = f", {result.checkpoints_uploaded} checkpoint(s) uploaded" if sync else ""
    err_console.print(
        f"gpuwise run: {result.run_id} ended with exit code {result.exit_code} after "
        f"{result.elapsed_s:.0f} s{uploaded}.",
        soft_wrap=True,
        highlight=False,
    )
    if sync and not result.flushed:
        err_console.print(
            f"[yellow]Warning:[/] the newest checkpoint is only local: {result.newest_local}. "
            f"Last error: {result.upload_error}",
            soft_wrap=True,
        )


def run(  # noqa: PLR0917 - typer passes each option as a parameter
    command: Annotated[
        list[str], typer.Argument(help="The job, after `--`: gpuwise run -- python train.py --lr 3e-4")
    ],
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            help="Where the job writes checkpoints (passed as $GPUWISE_CHECKPOINT_DIR; default "
            "$GPUWISE_CHECKPOINT_DIR or ./checkpoints).",
        ),
    ] = None,
    sync: SyncOpt = None,
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Start from the newest complete checkpoint, local or at --sync (downloaded when needed); "
            "passed as $GPUWISE_RESUME_FROM.",
        ),
    ] = False,
    grace_s: Annotated[
        float,
        typer.Option("--grace-s", help="Seconds the job gets after SIGTERM to write a final checkpoint."),
    ] = 30.0,
    keep: Annotated[
        int,
        typer.Option("--keep", help="Keep the newest K checkpoints remotely (and uploaded ones locally)."),
    ] = 3,
    project: Annotated[str | None, typer.Option("--project", help="Project name for the ledger.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag for the ledger (repeatable).")] = None,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            help="The project's budget: warn at 80 % spent, refuse to start past 100 % (needs --project).",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run even when the project's budget is spent.")
    ] = False,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            help="The run's id (default: $SKYPILOT_TASK_ID, $DSTACK_RUN_NAME or $SLURM_JOB_ID, else a hash "
            "of the command and checkpoint dir), the same across relaunches.",
        ),
    ] = None,
    preemption: Annotated[
        str,
        typer.Option(
            "--preemption",
            help="Watch for preemption notices: auto (the cloud whose metadata service answers), aws, gcp, "
            "azure or off.",
        ),
    ] = "auto",
    no_ledger: Annotated[
        bool, typer.Option("--no-ledger", help="Do not record this run in the ledger.")
    ] = False,
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            metavar="PLAN.json",
            help="The `gpuwise plan --json` output this run follows: its planned hours and cost are kept "
            "with the run, and `gpuwise report` sets them against the actual ones.",
        ),
    ] = None,
    plan_pick: Annotated[
        str,
        typer.Option(
            "--plan-pick",
            help="Which option of --plan: balanced, cheapest, fastest or a row number (1 = first).",
        ),
    ] = "balanced",
    config: Annotated[
        Path | None, typer.Option("--config", help="Config file (default: the user config.toml).")
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="After the job, print a one-line JSON summary as stdout's last line."),
    ] = False,
    metadata_url: Annotated[str | None, typer.Option("--metadata-url", hidden=True)] = None,
    poll_s: Annotated[float, typer.Option("--poll-s", hidden=True)] = 2.0,
) -> None:
    """Run a job whose checkpoints survive preemption, and record what it cost.

    The job runs in its own process group with its output streamed; signals are forwarded; gpuwise exits
    with the job's exit code. Complete checkpoints (a COMPLETE file written last, a Hugging Face
    checkpoint-N with trainer_state.json, a DCP folder with .metadata, a Lightning .ckpt) are uploaded to
    --sync in the background and verified. On SIGTERM or a spot/preemption notice (AWS, GCP, Azure) the job
    gets SIGTERM and --grace-s seconds, then the newest complete checkpoint is uploaded before exit.
    """
    from gpuwise.cli.output import setup_logging
    from gpuwise.run.runner import Supervisor, resolve_executable

    _check_run_options(command, preemption, grace_s, keep)
    setup_logging()
    opts = _run_options(
        command, checkpoint_dir, sync, endpoint_url, region, resume, grace_s, keep, run_id, poll_s,
        preemption, metadata_url,
    )  # fmt: skip
    sup = Supervisor(opts)
    resolve_executable(opts.command, sup.env)  # a missing command is bad input before anything is recorded
    planned = _read_plan(plan, plan_pick)
    machine = _config_machine(config)
    _check_budget(project, budget_usd, force)
    ledger_store = None if no_ledger else _ledger()
    result = _run_recorded(sup, ledger_store, machine, project, tuple(tag or ()), planned)
    _report(result, sync, json_out)
    raise typer.Exit(result.exit_code)


# ------------------------------------------------------------------------------------------ checkpoints

checkpoints_app = typer.Typer(
    help="List, verify and download the checkpoints `gpuwise run --sync` uploaded.", no_args_is_help=True
)


def _store(url: str, endpoint_url: str | None, region: str | None) -> Any:
    from gpuwise.run.store import CheckpointStore

    return CheckpointStore(url, endpoint_url=endpoint_url, region=region)


def _pick(manifests: list[Manifest], run_id: str | None, name: str | None, url: str) -> list[Manifest]:
    from gpuwise.errors import NotFoundError, StorageError

    if run_id is not None:
        manifests = [m for m in manifests if m.run_id == run_id]
    if name is not None:
        chosen = [m for m in manifests if m.name == name]
        if not chosen:
            raise NotFoundError(
                "checkpoint", name, [m.name for m in manifests], fix=f"see `gpuwise checkpoints list {url}`"
            )
        return chosen
    if not manifests:
        raise StorageError(
            f"No complete checkpoint at {url}" + (f" for run {run_id}" if run_id else ""),
            fix="check the URL and --run-id (an upload that did not finish is never listed)",
        )
    return manifests


@checkpoints_app.command("list")
def checkpoints_list(
    url: Annotated[str, typer.Argument(help="The --sync URL.")],
    run_id: Annotated[str | None, typer.Option("--run-id", help="Only this run.")] = None,
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List the complete checkpoints at URL (oldest first); half-finished uploads are never listed."""
    from gpuwise.cli.output import console, print_json
    from gpuwise.run.manifest import format_for_listing
    from gpuwise.units import format_bytes

    manifests = _store(url, endpoint_url, region).checkpoints(run_id)
    if json_out:
        print_json({"url": url, "checkpoints": [format_for_listing(m) for m in manifests]})
        return
    if not manifests:
        console.print(f"No complete checkpoint at {url}.")
        return
    for m in manifests:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(m.created_at))
        console.print(
            f"{m.run_id}  {m.name}  step {m.step if m.step is not None else '-'}  {m.kind}  "
            f"{len(m.files)} files  {format_bytes(m.total_bytes)}  {when} UTC",
            soft_wrap=True,
        )


@checkpoints_app.command("verify")
def checkpoints_verify(  # noqa: PLR0917 - typer passes each option as a parameter
    url: Annotated[str, typer.Argument(help="The --sync URL.")],
    run_id: Annotated[str | None, typer.Option("--run-id", help="Only this run.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Only this checkpoint.")] = None,
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Read every file back and compare its SHA-256 with the manifest. Exit 1 when any differs."""
    from gpuwise.cli.output import console, print_json

    store = _store(url, endpoint_url, region)
    chosen = _pick(store.checkpoints(run_id), run_id, name, url)
    results = [{"run_id": m.run_id, "name": m.name, "problems": store.verify(m)} for m in chosen]
    bad = [r for r in results if r["problems"]]
    if json_out:
        print_json({"url": url, "checkpoints": results, "ok": not bad})
    else:
        for r in results:
            status = "ok" if not r["problems"] else "BAD: " + "; ".join(r["problems"])
            console.print(f"{r['run_id']}  {r['name']}  {status}", soft_wrap=True)
    if bad:
        raise typer.Exit(1)


@checkpoints_app.command("pull")
def checkpoints_pull(  # noqa: PLR0917 - typer passes each option as a parameter
    url: Annotated[str, typer.Argument(help="The --sync URL.")],
    run_id: Annotated[str | None, typer.Option("--run-id", help="Only this run.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="This checkpoint (default: the newest).")] = None,
    to: Annotated[Path, typer.Option("--to", help="Download into this folder.")] = Path("checkpoints"),
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Download a complete checkpoint (the newest by default), verified file by file."""
    from gpuwise.cli.output import console, print_json

    store = _store(url, endpoint_url, region)
    m = _pick(store.checkpoints(run_id), run_id, name, url)[-1]
    path = store.download(m, to)
    if json_out:
        print_json({"run_id": m.run_id, "name": m.name, "path": str(path), "bytes": m.total_bytes})
    else:
        console.print(f"Downloaded {m.run_id}/{m.name} to {path}.", soft_wrap=True)


# ---------------------------------------------------------------------------------------------- ledger


def ledger(
    since: Annotated[
        str | None, typer.Option("--since", help="Only runs started in the last DURATION (7d, 2w).")
    ] = None,
    by: Annotated[
        str | None, typer.Option("--by", help="Group totals by project, tag, month or gpu.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """What each `gpuwise run` cost: GPU-hours, utilisation, preemptions, checkpoints and dollars."""
    from gpuwise.cli.output import console, print_json
    from gpuwise.errors import ConfigError, NotFoundError
    from gpuwise.run.ledger import BY_CHOICES, summarize
    from gpuwise.units import format_money, parse_duration_s

    if by is not None and by not in BY_CHOICES:
        raise NotFoundError("--by value", by, BY_CHOICES, fix="use project, tag, month or gpu")
    since_ts = None
    if since is not None:
        try:
            since_ts = time.time() - parse_duration_s(since)
        except ValueError as exc:
            raise ConfigError(f"--since {since!r}: {exc}", fix="use e.g. --since 7d or --since 12h") from exc
    store = _ledger()
    try:
        entries = store.entries(since_ts)
    finally:
        store.close()
    data = summarize(entries, by)
    if json_out:
        print_json(data)
        return
    if not entries:
        console.print("No runs recorded" + (f" in the last {since}" if since else "") + ".")
        return

    def money(x: float | None) -> str:
        return "unknown" if x is None else format_money(x)

    def hours(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    if by is None:
        for r in data["runs"]:
            console.print(
                f"{r['started_at']}  {r['project'] or '-'}  {r['run_id']}  exit {r['exit_code']}  "
                f"GPU-h {hours(r['gpu_hours'])}  {money(r['cost_usd'])}  {r['command']}",
                soft_wrap=True,
                highlight=False,
            )
    else:
        for g in data["groups"]:
            console.print(
                f"{g['key']}: {g['runs']} run(s), GPU-h {hours(g['gpu_hours'])}, {money(g['cost_usd'])}",
                soft_wrap=True,
                highlight=False,
            )
    t = data["totals"]
    console.print(
        f"Total: {t['runs']} run(s), GPU-h {hours(t['gpu_hours'])}, {money(t['cost_usd'])}"
        + (f" ({t['runs_without_cost']} without a known price)" if t["runs_without_cost"] else ""),
        highlight=False,
    )
