"""`gpuwise run` (and, re-exported from cli/checkpoints.py and cli/ledger.py, `gpuwise checkpoints` and
`gpuwise ledger`, which the command table finds here).

Top-level imports stay cheap (typer and the standard library); the run room, fsspec and the GPU probe are
imported inside the commands.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.cli.checkpoints import EndpointOpt, RegionOpt, checkpoints_app
from gpuwise.cli.ledger import ledger, open_ledger
from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.run.ledger import LedgerStore
    from gpuwise.run.planref import PlannedRun
    from gpuwise.run.runner import RunOptions, RunResult, Supervisor

# checkpoints_app and ledger: main.py's command table finds `gpuwise checkpoints` and `gpuwise ledger` here
__all__ = ["checkpoints_app", "ledger", "run"]

PREEMPTION_CHOICES = ("auto", "aws", "gcp", "azure", "off")

SyncOpt = Annotated[
    str | None,
    typer.Option(
        "--sync",
        metavar="URL",
        help=_(
            "Upload complete checkpoints here: file:///mnt/volume/ckpt, s3://bucket/prefix, gs://…, "
            "oss://bucket/prefix (Alibaba OSS), cos://bucket-appid/prefix (Tencent COS)."
        ),
    ),
]


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


def _check_budget(project: str | None, budget_usd: float | None, force: bool) -> None:
    from gpuwise.cli.output import err_console
    from gpuwise.errors import ConfigError
    from gpuwise.run.ledger import budget_state

    if budget_usd is None:
        return
    if project is None:
        raise ConfigError(
            _("--budget-usd needs --project"), fix=_("name the project: --project NAME --budget-usd X")
        )
    if not budget_usd > 0:
        raise ConfigError(
            _("--budget-usd must be more than 0, not {value}").format(value=f"{budget_usd:g}"),
            fix=_("use e.g. --budget-usd 500"),
        )
    store = open_ledger(reading=True)
    try:
        state = budget_state(store.entries(), project, budget_usd)
    finally:
        store.close()
    pct = 100 * state.fraction
    unknown = (
        _(" ({n} run(s) without a known price not counted)").format(n=state.runs_without_cost)
        if state.runs_without_cost
        else ""
    )
    figures = {
        "project": repr(project),
        "spent": f"${state.spent_usd:,.2f}",
        "budget": f"${budget_usd:,.2f}",
        "pct": f"{pct:.0f}",
        "unknown": unknown,
    }
    if state.level == "over" and not force:
        raise ConfigError(
            _("Project {project} has spent {spent} of its {budget} budget ({pct} %){unknown}").format(
                **figures
            ),
            fix=_("raise --budget-usd, or add --force to run anyway"),
        )
    if state.level != "ok":
        err_console.print(
            _(
                "[yellow]Warning:[/] project {project} has spent {spent} of its {budget} budget "
                "({pct} %){unknown}."
            ).format(**figures),
            soft_wrap=True,
        )


def _result_json(r: RunResult) -> dict[str, Any]:
    from gpuwise.cli.output import to_jsonable

    out: dict[str, Any] = to_jsonable(r)
    return out


def _check_run_id(run_id: str | None) -> None:
    """A run id is one folder name under --sync (and part of the pid file's name): `a/b` or `..` would
    put checkpoints, and --keep's deletions, outside the run's own folder."""
    from gpuwise.errors import ConfigError
    from gpuwise.run.manifest import plain_run_id

    if run_id is not None and plain_run_id(run_id) != run_id:
        raise ConfigError(
            _("--run-id {value} is not a plain name").format(value=repr(run_id)),
            why=_(
                "the run id names the run's folder under --sync; `/`, `..` or spaces would lead outside it"
            ),
            fix=_("use letters, digits, `.`, `_`, `=` and `-` (at most 128), e.g. --run-id {example}").format(
                example=plain_run_id(run_id)
            ),
        )


def _check_run_options(command: list[str], preemption: str, grace_s: float, keep: int) -> None:
    """Bad option values are bad input (exit 2) before anything starts."""
    from gpuwise.cli.output import check_at_least
    from gpuwise.errors import ConfigError, NotFoundError

    if preemption not in PREEMPTION_CHOICES:
        raise NotFoundError(
            _("--preemption value"), preemption, PREEMPTION_CHOICES, fix=_("use auto, aws, gcp, azure or off")
        )
    check_at_least(grace_s, 0, "--grace-s", example="--grace-s 30")
    check_at_least(keep, 1, "--keep", example="--keep 3")
    if not command:
        raise ConfigError(
            _("No command to run"), fix=_("put the command after `--`: gpuwise run -- python train.py")
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
    fix = _("give the output of `gpuwise plan WORKLOAD --json > plan.json`")
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
    sup.ledger_row = row  # into the pid file: a killed run's next relaunch closes exactly this row
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


def _close_interrupted(ledger: LedgerStore, sup: Supervisor) -> None:
    """Previous runs of this id whose gpuwise was killed outright left their ledger rows open: close each
    at its last sign of life, so the ledger and report stop counting it as running, and remove its pid
    file."""
    from gpuwise.cli.output import err_console
    from gpuwise.run.runner import interrupted

    for left in interrupted(sup.opts.pid_dir, sup.run_id):
        closed = ledger.close_interrupted(sup.run_id, left.last_alive, left.ledger_row)
        with contextlib.suppress(OSError):
            left.path.unlink()
        if not closed:
            continue
        err_console.print(
            _(
                "[yellow]Warning:[/] the previous run of {run_id} was stopped without gpuwise recording its "
                "end (killed, or the machine went down); the ledger now ends it at {at} UTC, its last sign "
                "of life, exit code unknown."
            ).format(run_id=sup.run_id, at=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(left.last_alive))),
            soft_wrap=True,
            highlight=False,
        )


def _report(result: RunResult, sync: str | None, json_out: bool) -> None:
    """The run's summary: one JSON line on stdout, or a line (and a warning if a checkpoint stayed local)
    on stderr."""
    from gpuwise.cli.output import err_console

    if json_out:
        sys.stdout.write(json.dumps(_result_json(result)) + "\n")
        sys.stdout.flush()
        return
    uploaded = _(", {n} checkpoint(s) uploaded").format(n=result.checkpoints_uploaded) if sync else ""
    err_console.print(
        _("gpuwise run: {run_id} ended with exit code {code} after {seconds} s{uploaded}.").format(
            run_id=result.run_id,
            code=result.exit_code,
            seconds=f"{result.elapsed_s:.0f}",
            uploaded=uploaded,
        ),
        soft_wrap=True,
        highlight=False,
    )
    if sync and not result.flushed:
        err_console.print(
            _("[yellow]Warning:[/] the newest checkpoint is only local: {path}. Last error: {error}").format(
                path=result.newest_local, error=result.upload_error
            ),
            soft_wrap=True,
        )


def run(  # noqa: PLR0917 - typer passes each option as a parameter
    command: Annotated[
        list[str], typer.Argument(help=_("The job, after `--`: gpuwise run -- python train.py --lr 3e-4"))
    ],
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            help=_(
                "Where the job writes checkpoints (passed as $GPUWISE_CHECKPOINT_DIR; default "
                "$GPUWISE_CHECKPOINT_DIR or ./checkpoints)."
            ),
        ),
    ] = None,
    sync: SyncOpt = None,
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help=_(
                "Start from the newest complete checkpoint, local or at --sync (downloaded when needed); "
                "passed as $GPUWISE_RESUME_FROM."
            ),
        ),
    ] = False,
    grace_s: Annotated[
        float,
        typer.Option("--grace-s", help=_("Seconds the job gets after SIGTERM to write a final checkpoint.")),
    ] = 30.0,
    keep: Annotated[
        int,
        typer.Option("--keep", help=_("Keep the newest K checkpoints remotely (and uploaded ones locally).")),
    ] = 3,
    project: Annotated[str | None, typer.Option("--project", help=_("Project name for the ledger."))] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help=_("A tag for the ledger (repeatable)."))
    ] = None,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            help=_("The project's budget: warn at 80 % spent, refuse to start past 100 % (needs --project)."),
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help=_("Run even when the project's budget is spent."))
    ] = False,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            help=_(
                "The run's id, its folder under --sync: letters, digits, . _ = - (default: "
                "$SKYPILOT_TASK_ID, $DSTACK_RUN_NAME or $SLURM_JOB_ID, else a hash of the command and "
                "checkpoint dir), the same across relaunches."
            ),
        ),
    ] = None,
    preemption: Annotated[
        str,
        typer.Option(
            "--preemption",
            help=_(
                "Watch for preemption notices: auto (the cloud whose metadata service answers), aws, gcp, "
                "azure or off."
            ),
        ),
    ] = "auto",
    no_ledger: Annotated[
        bool, typer.Option("--no-ledger", help=_("Do not record this run in the ledger."))
    ] = False,
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            metavar="PLAN.json",
            help=_(
                "The `gpuwise plan --json` output this run follows: its planned hours and cost are kept "
                "with the run, and `gpuwise report` sets them against the actual ones."
            ),
        ),
    ] = None,
    plan_pick: Annotated[
        str,
        typer.Option(
            "--plan-pick",
            help=_("Which option of --plan: balanced, cheapest, fastest or a row number (1 = first)."),
        ),
    ] = "balanced",
    config: Annotated[
        Path | None, typer.Option("--config", help=_("Config file (default: the user config.toml)."))
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option("--json", help=_("After the job, print a one-line JSON summary as stdout's last line.")),
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
    _check_run_id(run_id)
    setup_logging()
    opts = _run_options(
        command, checkpoint_dir, sync, endpoint_url, region, resume, grace_s, keep, run_id, poll_s,
        preemption, metadata_url,
    )  # fmt: skip
    sup = Supervisor(opts)
    resolve_executable(opts.command, sup.env)  # a missing command is bad input before anything is recorded
    sup.open_store()  # and so is a --sync URL gpuwise cannot use
    planned = _read_plan(plan, plan_pick)
    machine = _config_machine(config)
    _check_budget(project, budget_usd, force)
    sup.claim_checkpoint_dir()  # a second run in this directory is refused before the ledger records it
    try:
        ledger_store = None if no_ledger else open_ledger()
        if ledger_store is not None:
            _close_interrupted(ledger_store, sup)
        result = _run_recorded(sup, ledger_store, machine, project, tuple(tag or ()), planned)
    finally:
        sup.release()
    _report(result, sync, json_out)
    raise typer.Exit(result.exit_code)
