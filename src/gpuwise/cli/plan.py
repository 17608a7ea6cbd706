"""`gpuwise plan WORKLOAD`: rank every offer by the total cost (or time) of the workload, picks first.

Thin edge: reads the workload, calibration and catalog, takes today's date, calls the pure planner,
prints a table / JSON and writes the HTML report atomically. Exit 1 when nothing qualifies.
Top-level imports stay cheap (typer and the standard library); pydantic, the estimator and plotly are
imported inside the command (plotly only for --html).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from gpuwise.catalog.models import Offer
    from gpuwise.catalog.reserved import ReservedRate
    from gpuwise.plan.models import Constraints, Option, PlanResult
    from gpuwise.plan.output import OptionGroup


def plan(  # noqa: PLR0917 - typer passes options positionally
    workload: Annotated[Path, typer.Argument(help="Workload TOML file (see examples/).", show_default=False)],
    objective: Annotated[
        str,
        typer.Option(
            "--objective",
            help="Rank by total 'cost', wall-clock 'time', or 'balanced' (smallest cost × hours).",
        ),
    ] = "cost",
    top: Annotated[int, typer.Option("--top", help="Options to show, 1 or more (cuts --json too).")] = 10,
    phase: Annotated[
        str | None,
        typer.Option(
            "--phase",
            help="'prototype': the cheapest single GPU that runs a short smoke test of the workload.",
        ),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(
            "--calibration",
            help="A JSON file of efficiencies measured on the GPU (fraction of peak per task).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (fields: see README).")
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Also write a self-contained HTML report here (needs plotly: gpuwise[html])."
        ),
    ] = None,
    catalog_dir: Annotated[
        Path | None,
        typer.Option("--catalog-dir", help="User catalog directory (default: the user data dir)."),
    ] = None,
    spot_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--spot-interruptions-per-hour",
            metavar="RATE",
            help="Assumed spot preemptions per hour: RATE for every provider, or PROVIDER=RATE (repeatable).",
        ),
    ] = None,
    exchange_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--exchange-rate",
            metavar="CUR=USD",
            help="USD per unit of another currency, e.g. CNY=0.14 (offers in it are left out without one).",
        ),
    ] = None,
    restart_minutes: Annotated[
        float,
        typer.Option("--restart-minutes", help="Minutes to resume after a spot preemption (0 or more)."),
    ] = 10.0,
    boot_disk_gb: Annotated[
        float, typer.Option("--boot-disk-gb", help="Boot disk GB per node, billed where charged (0 or more).")
    ] = 100.0,
    gpu: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu",
            metavar="GPU[:N]",
            help="Only this GPU, N in total (e.g. A100-80GB:8); repeatable. Replaces the file's gpus.",
        ),
    ] = None,
    provider: Annotated[
        list[str] | None,
        typer.Option(
            "--provider", metavar="ID", help="Only this provider (repeatable). Replaces the file's providers."
        ),
    ] = None,
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region",
            metavar="PATTERN",
            help="Only regions matching this pattern, e.g. 'us-*' (repeatable). Overrides the file.",
        ),
    ] = None,
    spot: Annotated[
        bool, typer.Option("--spot", help="Only spot offers (replaces the file's interruptible).")
    ] = False,
    on_demand: Annotated[
        bool, typer.Option("--on-demand", help="Only on-demand offers (and reservations, when asked for).")
    ] = False,
    pick: Annotated[
        int | None,
        typer.Option("--pick", metavar="N", help="Print option N of the table (1 = first) in full."),
    ] = None,
    utilization: Annotated[
        float | None,
        typer.Option(
            "--utilization",
            metavar="SHARE",
            help=(
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
    """
    from dataclasses import replace

    from gpuwise.catalog.offers import load_catalog
    from gpuwise.catalog.specs import parse_gpu_request, resolve_gpu
    from gpuwise.catalog.validate import check_currencies, check_providers, check_region
    from gpuwise.cli.catalog import check_catalog_dir
    from gpuwise.cli.output import check_at_least, check_input_file, check_output_file, print_json
    from gpuwise.errors import GpuwiseError, NotFoundError, UsageError
    from gpuwise.estimate import load_calibration
    from gpuwise.plan import inputs
    from gpuwise.plan.models import Settings
    from gpuwise.plan.output import groups_with_picks, result_to_dict
    from gpuwise.plan.planner import plan as run_plan
    from gpuwise.workload import load_workload

    if objective not in ("cost", "time", "balanced"):
        raise UsageError(
            f"--objective must be 'cost', 'time' or 'balanced', not {objective!r}",
            fix="use --objective cost",
        )
    if pick is not None:
        check_at_least(pick, 1, "--pick", example="--pick 1")
    if spot and on_demand:
        raise UsageError("--spot and --on-demand exclude each other", fix="give one of them, or neither")
    spot_only = True if spot else (False if on_demand else None)
    if utilization is not None and not (0 < utilization <= 1):
        raise UsageError(
            f"--utilization must be a share above 0 and at most 1, not {utilization:g}",
            fix="write e.g. --utilization 0.8 for a machine busy 80% of the reservation's term",
        )
    if phase is not None and phase != "prototype":
        raise UsageError(
            f"--phase must be 'prototype', not {phase!r}", fix="use --phase prototype or drop it"
        )
    check_at_least(top, 1, "--top", example="--top 10")
    check_at_least(restart_minutes, 0, "--restart-minutes", example="--restart-minutes 10")
    check_at_least(boot_disk_gb, 0, "--boot-disk-gb", example="--boot-disk-gb 100")
    fx = _parse_pairs(exchange_rate or [], "--exchange-rate", upper=True, example="CNY=0.14")
    overrides = _parse_spot(spot_rate or [])
    if html is not None:
        from gpuwise.report.plan_html import require_plotly

        check_output_file(html, "--html", name="plan.html")
        require_plotly()  # before any work: an optional extra
    check_input_file(
        workload, "Workload file", fix="give a workload TOML file (examples/ holds some)", text=True
    )
    if calibration is not None:
        check_input_file(
            calibration,
            "Calibration file",
            fix="pass a calibration JSON (`gpuwise estimate --help` shows its shape)",
        )
    check_catalog_dir(catalog_dir)

    gpu_requests = [parse_gpu_request(g) for g in gpu or []]
    gpu_counts = tuple((resolve_gpu(name).name, n) for name, n in gpu_requests)
    work = load_workload(workload)
    cal = load_calibration(calibration) if calibration is not None else None
    constraints = inputs.constraints_from(work, canonical_gpu=lambda g: resolve_gpu(g).name)
    constraints = _apply_flags(
        constraints, gpu_counts=gpu_counts, providers=provider, regions=region, spot_only=spot_only
    )
    prototype = phase == "prototype"
    notes: list[str] = []
    target = work
    if prototype:
        target, definition = inputs.smoke_workload(work)
        notes.append(f"Prototype phase: {definition}. Shown: the cheapest single GPU that runs it.")
    data = inputs.data_needs_from(work, smoke=prototype)
    model_gb, upload_gb, transfer_why = inputs.transfers_from(target, data)
    data = replace(
        data,
        model_download_gb=model_gb,
        final_upload_gb=upload_gb,
        assumptions=(*data.assumptions, f"start-up transfers: {transfer_why}"),
    )
    catalog = load_catalog(catalog_dir)
    check_currencies(catalog, fx)
    check_providers(catalog, [p for p in overrides if p != "*"], option="--spot-interruptions-per-hour")
    known = set(catalog.sources)
    where = "--provider" if provider else f"[constraints] providers in {workload}"
    for name in constraints.providers or ():
        if name not in known:
            raise NotFoundError(
                "provider",
                name,
                sorted(known),
                why=f"{where} names a provider the catalog does not have",
                fix="use the ids `gpuwise catalog offers` lists: " + ", ".join(sorted(known)),
            )
    if region:
        for pattern in region:
            check_region(catalog, pattern)
    commitment = getattr(work.constraints, "commitment_months", None)
    settings = Settings(
        today=date.today(),
        objective=objective,
        spot_rate_overrides=overrides,
        restart_hours=restart_minutes / 60.0,
        exchange_rates=fx,
        boot_disk_gb=boot_disk_gb,
        single_gpu_only=prototype,
        service_hours=None if prototype else inputs.service_hours_from(work),
        commitment_months=None if prototype else commitment,
        utilization=None if prototype else utilization,
        units=inputs.units_from(target),
    )
    reserved_lookup = None
    if settings.commitment_months is not None or settings.utilization is not None:
        from gpuwise.catalog.reserved import load_reserved_rates

        table = load_reserved_rates()

        def reserved_lookup(offer: Offer) -> ReservedRate | None:
            return table.get((offer.provider, offer.instance_type, offer.region))

    estimator = inputs.make_estimator(target, cal)
    result = run_plan(
        catalog.offers,
        estimator,
        constraints=constraints,
        data=data,
        settings=settings,
        spot_lookup=inputs.aws_spot_advisor_lookup,
        sources=dict(catalog.sources),
        runnable=inputs.make_runnable(target),
        reserved_lookup=reserved_lookup,
        network_lookup=inputs.network_gbps,
    )
    groups, _ = groups_with_picks(result, top)
    if pick is not None and pick > len(groups):
        raise UsageError(
            f"--pick {pick} is past the {len(groups)} options shown",
            fix=f"give --pick between 1 and {len(groups)}, or raise --top"
            if groups
            else "relax the plan first",
        )
    if html is not None:
        from gpuwise.report.plan_html import render_plan_html

        title = f"gpuwise plan: {work.name or workload.name}" + (" (prototype)" if prototype else "")
        page = render_plan_html(
            result, title=title, top=top, notes=notes, generated=f"Generated {settings.today.isoformat()}."
        )
        _write_atomic(html, page)
    if as_json:
        extra: dict[str, Any] = {"phase": phase}
        if notes:
            extra["notes"] = notes
        doc = result_to_dict(result, work.model_dump(mode="json"), top=top, extra=extra)
        if pick is not None:
            doc["pick"] = doc["options"][pick - 1]
        print_json(doc)
    elif pick is not None:
        _render_pick(groups, pick)
    else:
        _render(result, top=top, notes=notes, name=work.name or str(workload), html=html)
    if not result.options:
        raise GpuwiseError(_nothing_message(result, estimator.why, constraints), fix=_nothing_fix(result))


def _apply_flags(
    constraints: Constraints,
    *,
    gpu_counts: tuple[tuple[str, int | None], ...],
    providers: list[str] | None,
    regions: list[str] | None,
    spot_only: bool | None,
) -> Constraints:
    """The command-line flags over the file's [constraints]: each flag given replaces its key."""
    from dataclasses import replace

    changes: dict[str, Any] = {}
    if gpu_counts:
        changes["gpus"] = tuple(sorted({name for name, _ in gpu_counts}))
        changes["gpu_counts"] = gpu_counts
        # a count larger than one instance holds needs several nodes: allow as many as the count could need
        largest = max((n or 1) for _, n in gpu_counts)
        changes["max_nodes"] = max(constraints.max_nodes, largest)
        if constraints.max_gpus is not None:
            changes["max_gpus"] = max(constraints.max_gpus, largest)
    if providers:
        changes["providers"] = tuple(p.strip().lower() for p in providers)
    if regions:
        changes["regions"] = tuple(regions)
    if spot_only is True:
        changes["pricings"] = ("spot",)
        changes["interruptible"] = True
    elif spot_only is False:
        changes["pricings"] = ("on_demand", "reserved")
    return replace(constraints, **changes) if changes else constraints


def _parse_pairs(values: list[str], option: str, *, upper: bool, example: str) -> dict[str, float]:
    from gpuwise.errors import UsageError

    out: dict[str, float] = {}
    for value in values:
        key, sep, number = value.partition("=")
        try:
            rate = float(number)
        except ValueError:
            rate = -1.0
        if not sep or not key.strip() or not (rate > 0) or rate == float("inf"):
            raise UsageError(
                f"{option} {value!r} is not NAME=NUMBER with a positive number",
                fix=f"write e.g. {option} {example}",
            )
        out[key.strip().upper() if upper else key.strip().lower()] = rate
    return out


def _parse_spot(values: list[str]) -> dict[str, float]:
    from gpuwise.errors import UsageError

    out: dict[str, float] = {}
    for value in values:
        if "=" in value:
            out.update(
                _parse_pairs([value], "--spot-interruptions-per-hour", upper=False, example="gcp=0.05")
            )
            continue
        try:
            rate = float(value)
        except ValueError:
            rate = -1.0
        if not (0 <= rate < float("inf")):
            raise UsageError(
                f"--spot-interruptions-per-hour {value!r} is not a rate (preemptions per hour, 0 or more)",
                fix="write e.g. --spot-interruptions-per-hour 0.05 or --spot-interruptions-per-hour gcp=0.05",
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
            f"Cannot write the HTML report to {path}: {exc.strerror}",
            fix="check that the folder exists and is writable",
        ) from exc


def _nothing_message(result: PlanResult, no_estimate_why: dict[str, str], constraints: Constraints) -> str:
    """What removed the options: first the facts that removed what the constraints allowed (a GPU with no
    estimate, a dtype it cannot run, a currency without a rate, no shared fabric), then the constraints."""
    from gpuwise.plan.models import RELAXABLE
    from gpuwise.plan.relax import CONSTRAINT_KEYS

    if not result.rejected:
        return "No offer qualifies: the catalog has no offers"
    text = f"No offer qualifies ({result.considered} configurations considered)"
    facts = _blocked_text(result, no_estimate_why)
    if facts:
        asked = f" of the GPUs asked for ({', '.join(constraints.gpus)})" if constraints.gpus else ""
        text += f". The configurations{asked} your constraints allowed were removed by: " + "; ".join(facts)
    constraint_counts = {r: n for r, n in result.rejected.items() if r in RELAXABLE}
    if constraint_counts:
        reason, n = max(constraint_counts.items(), key=lambda kv: kv[1])
        text += f". Of the constraints, {CONSTRAINT_KEYS[reason]} removed the most ({n}, reason '{reason}')"
    others = {r: n for r, n in result.rejected.items() if r not in RELAXABLE}
    if others:
        text += "; besides: " + ", ".join(
            f"{r} {n}" for r, n in sorted(others.items(), key=lambda kv: -kv[1])
        )
    return text


def _blocked_text(result: PlanResult, no_estimate_why: dict[str, str]) -> list[str]:
    by_reason: dict[str, list[tuple[str, int]]] = {}
    for (reason, gpu), n in sorted(result.blocked.items(), key=lambda kv: -kv[1]):
        by_reason.setdefault(reason, []).append((gpu, n))
    out: list[str] = []
    for reason, items in by_reason.items():
        for gpu, n in items[:3]:
            plural = "configuration" if n == 1 else "configurations"
            if reason == "no_estimate":
                why = no_estimate_why.get(gpu, "the estimator cannot model it")
                out.append(f"{gpu}: no estimate ({n} {plural}): {why}")
            elif reason == "dtype":
                out.append(f"{gpu}: {result.dtype_why.get(gpu, 'cannot run the dtype')} ({n} {plural})")
            elif reason == "currency":
                out.append(f"{gpu}: priced in another currency with no --exchange-rate given ({n} {plural})")
            elif reason == "no_fabric":
                out.append(f"{gpu}: multi-node without a shared fabric ({n} {plural})")
            elif reason == "does_not_fit":
                out.append(f"{gpu}: the workload does not fit in its memory ({n} {plural})")
            elif reason == "below_target_rate":
                out.append(f"{gpu}: too slow for the target rate ({n} {plural})")
            else:
                out.append(f"{gpu}: {reason} ({n} {plural})")
    return out


def _nothing_fix(result: PlanResult) -> str:
    if result.relaxations:
        return "; ".join(r.suggestion for r in result.relaxations[:3])
    if result.blocked:
        return (
            "ask for a GPU that has an estimate and runs the workload's dtype (`gpuwise catalog gpus`), "
            "or change the workload (precision, model size)"
        )
    return "loosen the [constraints] of the workload, or plan a smaller configuration (the model may not fit)"


_SHORT_BOTTLENECK = {"memory_bandwidth": "bandwidth", "memory_capacity": "memory", "communication": "comm."}


def _split(o: Option) -> str:
    parts = o.cost_breakdown_usd
    total = o.cost_usd or 1.0
    labels = (
        ("compute", "c"),
        ("startup", "u"),
        ("storage", "s"),
        ("egress", "e"),
        ("interruption_overhead", "i"),
    )
    shares = ((short, parts.get(k, 0.0) / total * 100) for k, short in labels)
    return " ".join(f"{short}{pct:.0f}" for short, pct in shares if pct >= 0.5) or "–"


def _render_pick(groups: list[OptionGroup], n: int) -> None:
    from rich.markup import escape

    from gpuwise.cli.output import console
    from gpuwise.plan.output import option_full_text

    group = groups[n - 1]
    for line in option_full_text(group.option, group.regions, n):
        console.print(escape(line), soft_wrap=True)


def _span(low: str, high: str) -> str:
    """'4.44–14.9 h', '$0.48–1.82': a range short enough for a table cell (the unit said once)."""
    for unit in (" h", " min", " s"):
        if low.endswith(unit) and high.endswith(unit) and "(" not in high:
            return f"{low.removesuffix(unit)}–{high}"
    if low.startswith("$") and high.startswith("$"):
        return f"{low}–{high[1:]}"
    return f"{low}–{high}"


def _render(result: PlanResult, *, top: int, notes: list[str], name: str, html: Path | None) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from gpuwise.cli.output import console
    from gpuwise.plan.output import break_even_lines, groups_with_picks, pick_lines, short_unit_cost
    from gpuwise.plan.picks import RULE_TEXT
    from gpuwise.units import format_run_hours as hours_text
    from gpuwise.units import format_usd as money

    for note in notes:
        console.print(escape(note), soft_wrap=True)
    shown, picks = groups_with_picks(result, top)
    if shown:
        console.print(f"[bold]{escape(name)}[/]: {len(result.options)} options qualify", soft_wrap=True)
        for line in pick_lines(result, shown, picks):
            console.print(escape(line), soft_wrap=True)
        for line in break_even_lines(shown):
            console.print(escape(line), soft_wrap=True)
        marks: dict[int, str] = {}
        for pick_name in ("cheapest", "balanced", "fastest"):
            if pick_name in picks:
                marks[picks[pick_name]] = marks.get(picks[pick_name], "") + pick_name[0].upper()
        table = Table(
            title=f"top {min(top, len(shown))} choices by {result.objective}"
            + (" (+ picks beyond them)" if len(shown) > top else ""),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("offer", min_width=14, ratio=1, overflow="fold")
        table.add_column("pricing", no_wrap=True)
        # numbers never wrap or truncate at 80 columns: the offer's name folds instead (STYLE)
        table.add_column("hours", justify="right", no_wrap=True)
        table.add_column("total", justify="right", no_wrap=True)
        table.add_column("free\nbound", justify="right", no_wrap=True)
        for i, group in enumerate(shown, 1):
            o = group.option
            gpus = o.gpus_per_node * o.nodes
            nodes = f" on {o.nodes} nodes" if o.nodes > 1 else ""
            day = o.price_as_of.isoformat()
            flag = ("" if o.price_date_exact else "?") + ("!" if o.price_over_limit else "")
            if flag:
                day = f"[yellow]{day}{flag}[/]"
            unknown = " [yellow]+?[/]" if o.unknown_costs else ""
            extra = ""
            if o.dtype_fallback:
                extra += f"\n[yellow]as {o.dtype_fallback}[/]"
            if o.pricing == "reserved" and o.commitment_months:
                extra += f"\n[dim]whole {o.commitment_months:g}-month commitment[/]"
            hours = hours_text(o.hours)
            if o.hours_low is not None and o.hours_high is not None and o.hours_high > o.hours_low:
                hours += f"\n[dim]{_span(hours_text(o.hours_low), hours_text(o.hours_high))}[/]"
            total = f"[bold]{money(o.cost_usd)}[/]"
            if (
                o.cost_usd_low is not None
                and o.cost_usd_high is not None
                and o.cost_usd_high > o.cost_usd_low
            ):
                total += f"\n[dim]{_span(money(o.cost_usd_low), money(o.cost_usd_high))}[/]"
            total += f"\n[dim]{_split(o)}[/]{unknown}"
            unit = short_unit_cost(o)
            if unit:
                total += f"\n[dim]{escape(unit)}[/]"
            table.add_row(
                f"{i}{'*' if o.pareto else ''}{marks.get(i - 1, '')}",
                f"{escape(o.provider)} {escape(o.instance_type)}\n"
                f"[dim]{gpus}× {o.gpu}{nodes} · {escape(group.regions_text())}[/]{extra}",
                f"{o.pricing.replace('_', '-')}\n{money(o.price_usd_per_hour)}/h\n{day}",
                hours,
                total,
                f"{o.memory_capacity_gib - o.memory_per_gpu_gib:,.0f}\u00a0GiB\n"
                f"[dim]{_SHORT_BOTTLENECK.get(o.bottleneck, o.bottleneck)}[/]",
            )
        console.print(table)
        console.print(
            "[dim]* on the Pareto front (nothing both cheaper and faster); C, F, B: the cheapest, fastest "
            f"and balanced picks ({escape(RULE_TEXT)}). hours and total: expected, then the range the "
            "estimate gives. split: c compute, u start-up (boot, set-up, downloads, final upload), "
            "s storage, e egress, i spot interruptions. +?: some cost parts unknown, counted as $0 "
            "(see --pick N or --json). "
            f"A date ending in ?: the source gives none (collection date shown); !: over "
            f"{result.stale_after_days} days old (by the collection date when undated). free: GPU memory "
            "left per GPU; bound: the bottleneck. N regions: the same offer, price and total in several "
            "regions, shown once. --pick N prints row N in full.[/]",
            soft_wrap=True,
        )
    rejected = ", ".join(f"{r} {n}" for r, n in sorted(result.rejected.items(), key=lambda kv: -kv[1]))
    console.print(
        f"Considered {result.considered} configurations: {len(result.options)} qualify"
        + (f"; rejected: {rejected}" if rejected else ""),
        soft_wrap=True,
    )
    today = result.today

    def stale_mark(day: date) -> str:
        return "!" if today is not None and (today - day).days > result.stale_after_days else ""

    dated = [
        f"{p} {d.isoformat()}{stale_mark(d)}"
        for p, d in result.sources.items()
        if p not in result.undated_sources
    ]
    undated: dict[str, list[str]] = {}
    for p in sorted(result.undated_sources):
        undated.setdefault(result.sources[p].isoformat(), []).append(p)
    parts = [", ".join(dated)] if dated else []
    parts += [
        f"date unknown (collected {day}{stale_mark(date.fromisoformat(day))}): {', '.join(ps)}"
        for day, ps in sorted(undated.items())
    ]
    dates = "; ".join(parts)
    console.print(
        f"[dim]Prices as of: {dates} (!: over {result.stale_after_days} days old)[/]", soft_wrap=True
    )
    for a in result.assumptions:
        console.print(f"[dim]- {escape(a)}[/]", soft_wrap=True)
    if html is not None:
        console.print(f"HTML report: {escape(str(html))}", soft_wrap=True)
