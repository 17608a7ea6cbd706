"""`gpuwise plan WORKLOAD`: rank every offer by the total cost (or time) of the workload, picks first.

Thin edge: parses and checks the options, takes today's date, calls the plan room's one entry point
(`gpuwise.plan.run`, which loads the workload, calibration and catalog and plans), then prints a table
(cli/plan_table.py) / JSON / one option, and writes the HTML report atomically. Exit 1 when nothing
qualifies. Top-level imports stay cheap (typer and the standard library); pydantic, the estimator and
plotly are imported inside the command (plotly only for --html).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.cli.options import exchange_rates, parse_pairs
from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.plan.request import PlanOutcome, PlanRequest


def plan(  # noqa: PLR0917 - typer passes options positionally
    workload: Annotated[
        Path, typer.Argument(help=_("Workload TOML file (see examples/)."), show_default=False)
    ],
    objective: Annotated[
        str,
        typer.Option(
            "--objective",
            help=_("Rank by total 'cost', wall-clock 'time', or 'balanced' (smallest cost × hours)."),
        ),
    ] = "cost",
    top: Annotated[int, typer.Option("--top", help=_("Options to show, 1 or more (cuts --json too)."))] = 10,
    phase: Annotated[
        str | None,
        typer.Option(
            "--phase",
            help=_("'prototype': the cheapest single GPU that runs a short smoke test of the workload."),
        ),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(
            "--calibration",
            help=_(
                "A `gpuwise bench --json` result (measured efficiencies: that GPU, and the ratio for its "
                "generation) or a `gpuwise report --save-calibration` file (actual/planned hours per GPU and "
                "task). Every use is stated in the assumptions."
            ),
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help=_("Print one JSON object (fields: see README)."))
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help=_("Also write a self-contained HTML report here (needs plotly, the html extra).")
        ),
    ] = None,
    catalog_dir: Annotated[
        Path | None,
        typer.Option("--catalog-dir", help=_("User catalog directory (default: the user data dir).")),
    ] = None,
    spot_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--spot-interruptions-per-hour",
            metavar="RATE",
            help=_(
                "Assumed spot preemptions per hour: RATE for every provider, or PROVIDER=RATE (repeatable)."
            ),
        ),
    ] = None,
    exchange_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--exchange-rate",
            metavar="CUR=USD",
            help=_(
                "USD per unit of another currency, e.g. CNY=0.14 (offers in it are left out without one)."
            ),
        ),
    ] = None,
    currency: Annotated[
        str | None,
        typer.Option(
            "--currency",
            metavar="CUR",
            help=_(
                "Show every price and total in USD or CNY, printing the rate used, its date and source "
                "(bundled table unless --exchange-rate gives one); offers in the other currency are then "
                "ranked with the rest at that rate."
            ),
        ),
    ] = None,
    restart_minutes: Annotated[
        float,
        typer.Option("--restart-minutes", help=_("Minutes to resume after a spot preemption (0 or more).")),
    ] = 10.0,
    boot_disk_gb: Annotated[
        float,
        typer.Option("--boot-disk-gb", help=_("Boot disk GB per node, billed where charged (0 or more).")),
    ] = 100.0,
    gpu: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu",
            metavar="GPU[:N]",
            help=_("Only this GPU, N in total (e.g. A100-80GB:8); repeatable. Replaces the file's gpus."),
        ),
    ] = None,
    provider: Annotated[
        list[str] | None,
        typer.Option(
            "--provider",
            metavar="ID",
            help=_("Only this provider (repeatable). Replaces the file's providers."),
        ),
    ] = None,
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region",
            metavar="PATTERN",
            help=_("Only regions matching this pattern, e.g. 'us-*' (repeatable). Overrides the file."),
        ),
    ] = None,
    spot: Annotated[
        bool, typer.Option("--spot", help=_("Only spot offers (replaces the file's interruptible)."))
    ] = False,
    on_demand: Annotated[
        bool, typer.Option("--on-demand", help=_("Only on-demand offers (and reservations, when asked for)."))
    ] = False,
    pick: Annotated[
        int | None,
        typer.Option("--pick", metavar="N", help=_("Print option N of the table (1 = first) in full.")),
    ] = None,
    export_kind: Annotated[
        str | None,
        typer.Option(
            "--export",
            metavar="KIND",
            help=_(
                "Write option --pick N (default 1) for skypilot, k8s, torchrun or dockerfile (see export)."
            ),
        ),
    ] = None,
    export_out: Annotated[
        Path | None, typer.Option("--out", help=_("With --export: write the file here (default: stdout)."))
    ] = None,
    utilization: Annotated[
        float | None,
        typer.Option(
            "--utilization",
            metavar="SHARE",
            help=_(
                "Share (0-1] of a reservation's term the machine is busy: shows reserved prices "
                "(whole commitment) and their break-even. See also the constraint commitment_months."
            ),
        ),
    ] = None,
) -> None:
    """Rank every offer by the total cost of the workload: compute, start-up, storage, egress and spot
    interruptions.

    The answer leads with three picks (cheapest, fastest, balanced = the Pareto option with the smallest
    cost × hours), none more than 5× slower than another option costing at most 1.5× as much; then the
    table. Only options that can run the workload's dtype, and multi-node options only on a shared fabric.
    Exits 1 when no offer qualifies, naming what removed the options asked for and what relaxing gives.

    Examples:

      gpuwise plan examples/llama3-8b-lora.toml --top 5

      gpuwise plan examples/llama3-8b-lora.toml --gpu A100-80GB:8 --on-demand --pick 1

      gpuwise plan examples/llama3-8b-lora.toml --objective time --html plan.html

      gpuwise plan examples/llama3-8b-lora.toml --phase prototype --json

      gpuwise plan examples/llama3-8b-lora.toml --pick 2 --export skypilot --out task.yaml

      gpuwise plan examples/llama3-8b-lora.toml --currency CNY --region "cn-*"
    """
    from gpuwise.plan import run as run_plan
    from gpuwise.plan.request import PlanRequest

    _check_options(
        objective=objective,
        pick=pick,
        spot=spot,
        on_demand=on_demand,
        utilization=utilization,
        phase=phase,
        top=top,
        restart_minutes=restart_minutes,
        boot_disk_gb=boot_disk_gb,
    )
    if export_kind is not None or export_out is not None:
        from gpuwise.cli.export import check_plan_export

        check_plan_export(export_kind, export_out, as_json=as_json, html=html)
    fx = exchange_rates(exchange_rate or [])
    display, bundled = _money(currency, fx)
    overrides = _parse_spot(spot_rate or [])
    _check_files(workload, html=html, calibration=calibration, catalog_dir=catalog_dir)
    request = PlanRequest(
        workload=workload,
        today=date.today(),
        objective=objective,
        prototype=phase == "prototype",
        calibration=calibration,
        catalog_dir=catalog_dir,
        spot_rates=overrides,
        exchange_rates=fx,
        bundled_rates=bundled,
        restart_minutes=restart_minutes,
        boot_disk_gb=boot_disk_gb,
        gpus=tuple(gpu or ()),
        providers=tuple(provider or ()),
        regions=tuple(region or ()),
        spot_only=True if spot else (False if on_demand else None),
        utilization=utilization,
    )
    outcome = run_plan(request)
    if export_kind is not None and outcome.result.options:
        from gpuwise.cli.export import export_plan_option
        from gpuwise.plan.output import result_to_dict

        doc = result_to_dict(outcome.result, outcome.workload.model_dump(mode="json"), top=top)
        export_plan_option(export_kind, doc, pick or 1, export_out)
        return
    from gpuwise.plan.currency import showing

    with showing(display):
        _show(outcome, request, top=top, pick=pick, as_json=as_json, html=html, phase=phase)


def _check_options(
    *,
    objective: str,
    pick: int | None,
    spot: bool,
    on_demand: bool,
    utilization: float | None,
    phase: str | None,
    top: int,
    restart_minutes: float,
    boot_disk_gb: float,
) -> None:
    """The options' values, each against its own range, before anything is read."""
    from gpuwise.cli.output import check_at_least
    from gpuwise.errors import UsageError

    if objective not in ("cost", "time", "balanced"):
        raise UsageError(
            _("--objective must be 'cost', 'time' or 'balanced', not {value}").format(value=repr(objective)),
            fix=_("use --objective cost"),
        )
    if pick is not None:
        check_at_least(pick, 1, "--pick", example="--pick 1")
    if spot and on_demand:
        raise UsageError(
            _("--spot and --on-demand exclude each other"), fix=_("give one of them, or neither")
        )
    if utilization is not None and not (0 < utilization <= 1):
        raise UsageError(
            _("--utilization must be a share above 0 and at most 1, not {value}").format(
                value=f"{utilization:g}"
            ),
            fix=_("write e.g. --utilization 0.8 for a machine busy 80% of the reservation's term"),
        )
    if phase is not None and phase != "prototype":
        raise UsageError(
            _("--phase must be 'prototype', not {value}").format(value=repr(phase)),
            fix=_("use --phase prototype or drop it"),
        )
    check_at_least(top, 1, "--top", example="--top 10")
    check_at_least(restart_minutes, 0, "--restart-minutes", example="--restart-minutes 10")
    check_at_least(boot_disk_gb, 0, "--boot-disk-gb", example="--boot-disk-gb 100")


def _check_files(
    workload: Path, *, html: Path | None, calibration: Path | None, catalog_dir: Path | None
) -> None:
    """The paths: the report's target (and plotly, its optional extra), the inputs, the catalog dir."""
    from gpuwise.cli.catalog import check_catalog_dir
    from gpuwise.cli.output import check_input_file, check_output_file

    if html is not None:
        from gpuwise.report.plan_html import require_plotly

        check_output_file(html, "--html", name="plan.html")
        require_plotly()  # before any work: an optional extra
    check_input_file(
        workload, _("Workload file"), fix=_("give a workload TOML file (examples/ holds some)"), text=True
    )
    if calibration is not None:
        check_input_file(
            calibration,
            _("Calibration file"),
            fix=_("pass a calibration JSON (`gpuwise estimate --help` shows its shape)"),
        )
    check_catalog_dir(catalog_dir)


def _show(
    outcome: PlanOutcome,
    request: PlanRequest,
    *,
    top: int,
    pick: int | None,
    as_json: bool,
    html: Path | None,
    phase: str | None,
) -> None:
    """Print the plan (JSON, one option, or the table), write the HTML report; exit 1 if nothing qualifies."""
    from gpuwise.cli.output import print_json
    from gpuwise.errors import GpuwiseError, UsageError
    from gpuwise.plan.currency import current
    from gpuwise.plan.nothing import nothing_fix, nothing_message
    from gpuwise.plan.output import groups_with_picks, result_to_dict

    result, work, notes = outcome.result, outcome.workload, list(outcome.notes)
    from gpuwise.plan.currency import ranking_lines

    notes[:0] = ranking_lines(request.bundled_rates, current())
    if current().rate is not None:
        notes.insert(0, current().rate_line(request.today))
    groups, _picks = groups_with_picks(result, top)
    if pick is not None and pick > len(groups):
        raise UsageError(
            _("--pick {pick} is past the {count} options shown").format(pick=pick, count=len(groups)),
            fix=_("give --pick between 1 and {count}, or raise --top").format(count=len(groups))
            if groups
            else _("relax the plan first"),
        )
    if html is not None:
        from gpuwise.report.plan_html import render_plan_html

        title = f"gpuwise plan: {work.name or request.workload.name}" + (
            _(" (prototype)") if request.prototype else ""
        )
        generated = _("Generated {day}.").format(day=request.today.isoformat())
        page = render_plan_html(result, title=title, top=top, notes=notes, generated=generated)
        _write_atomic(html, page)
    if as_json:
        extra: dict[str, Any] = {"phase": phase}
        if notes:
            extra["notes"] = notes
        doc = result_to_dict(result, work.model_dump(mode="json"), top=top, extra=extra)
        if request.bundled_rates or current().rate is not None:
            from gpuwise.plan.currency import annotate_plan_json

            annotate_plan_json(doc, current(), request.bundled_rates)
        if pick is not None:
            doc["pick"] = doc["options"][pick - 1]
        print_json(doc)
    elif pick is not None:
        from gpuwise.cli.plan_table import render_pick

        render_pick(groups, pick)
    else:
        from gpuwise.cli.plan_table import render_table  # rich's tables: not needed for --json

        render_table(result, top=top, notes=notes, name=work.name or str(request.workload), html=html)
    if not result.options:
        message = nothing_message(result, outcome.no_estimate_why, outcome.constraints)
        raise GpuwiseError(message, fix=nothing_fix(result) + _remedy_hint(outcome))


def _remedy_hint(outcome: PlanOutcome) -> str:
    """When memory ruled offers out: the first remedy on the largest such GPU, on the count asked for it
    (`--gpu NAME:N`, else max_gpus), a node of up to 8 of them when none was asked."""
    from gpuwise.catalog.specs import resolve_gpu
    from gpuwise.estimate.remedies import first_remedy_text
    from gpuwise.plan.nothing import facts_matter

    names = {gpu for reason, gpu in outcome.result.blocked if reason == "does_not_fit"}
    if (
        not names
        or outcome.workload.task == "measured"
        or not facts_matter(outcome.result, outcome.constraints)
    ):
        return ""
    spec = max((resolve_gpu(n) for n in names), key=lambda g: (g.memory_gib, g.name))
    asked = dict(outcome.constraints.gpu_counts or ()).get(spec.name)
    count = asked or min(outcome.constraints.max_gpus or 8, 8)
    text = first_remedy_text(outcome.workload, spec, count)
    return _("; ") + text if text else ""


def _money(currency: str | None, fx: dict[str, float]) -> tuple[Any, dict[str, tuple[float, str]]]:
    """--currency: the Money the plan is shown in, and the bundled rates for ranking (none without it)."""
    from gpuwise.plan.currency import Money, bundled_for_ranking, check_currency, display

    if currency is None:
        return Money(), {}
    return display(check_currency(currency), fx), bundled_for_ranking(fx, date.today())


def _parse_spot(values: list[str]) -> dict[str, float]:
    from gpuwise.errors import UsageError

    out: dict[str, float] = {}
    for value in values:
        if "=" in value:
            out.update(parse_pairs([value], "--spot-interruptions-per-hour", upper=False, example="gcp=0.05"))
            continue
        try:
            rate = float(value)
        except ValueError:
            rate = -1.0
        if not (0 <= rate < float("inf")):
            raise UsageError(
                _(
                    "--spot-interruptions-per-hour {value} is not a rate (preemptions per hour, 0 or more)"
                ).format(value=repr(value)),
                fix=_(
                    "write e.g. --spot-interruptions-per-hour 0.05 or --spot-interruptions-per-hour gcp=0.05"
                ),
            )
        out["*"] = rate
    return out


def _write_atomic(path: Path, text: str) -> None:
    """Write beside the target and rename, so a reader never sees half a report."""
    from gpuwise.errors import StorageError
    from gpuwise.files import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise StorageError(
            _("Cannot write the HTML report to {path}: {reason}").format(path=path, reason=exc.strerror),
            fix=_("check that the folder exists and is writable"),
        ) from exc
