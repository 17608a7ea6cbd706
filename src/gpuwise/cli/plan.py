"""`gpuwise plan WORKLOAD`: rank every offer by the total cost (or time) of the workload (CONTRACTS §3).

Thin edge: reads the workload, calibration and catalog, takes today's date, calls the pure planner,
prints a table / JSON and writes the HTML report atomically. Exit 1 when nothing qualifies.
Top-level imports stay cheap (typer and the standard library); pydantic, the estimator and plotly are
imported inside the command (plotly only for --html).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from gpuwise.plan.models import Option, PlanResult


def plan(  # noqa: PLR0917 - typer passes options positionally
    workload: Annotated[Path, typer.Argument(help="Workload TOML file (see examples/).", show_default=False)],
    objective: Annotated[
        str, typer.Option("--objective", help="Rank by total 'cost' or wall-clock 'time'.")
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
        Path | None, typer.Option("--calibration", help="A `gpuwise bench` result JSON.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (CONTRACTS §3).")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report here.")
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
) -> None:
    """Rank every offer by the total cost of the workload: compute, storage, egress and spot interruptions.

    Exits 1 when no offer qualifies, saying which constraint removed the most and what relaxing it gives.

    Examples:

      gpuwise plan examples/llama3-8b-lora.toml --top 5

      gpuwise plan examples/llama3-8b-lora.toml --objective time --html plan.html

      gpuwise plan examples/llama3-8b-lora.toml --phase prototype --json
    """
    from datetime import date

    from gpuwise.catalog.offers import load_catalog
    from gpuwise.catalog.specs import resolve_gpu
    from gpuwise.catalog.validate import check_currencies, check_providers
    from gpuwise.cli.catalog import check_catalog_dir
    from gpuwise.cli.output import check_at_least, check_input_file, check_output_file, print_json
    from gpuwise.errors import GpuwiseError, NotFoundError, UsageError
    from gpuwise.estimate import load_calibration
    from gpuwise.plan import inputs
    from gpuwise.plan.models import Settings
    from gpuwise.plan.output import result_to_dict
    from gpuwise.plan.planner import plan as run_plan
    from gpuwise.workload import load_workload

    if objective not in ("cost", "time"):
        raise UsageError(
            f"--objective must be 'cost' or 'time', not {objective!r}", fix="use --objective cost"
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
        check_output_file(html, "--html", name="plan.html")
    check_input_file(
        workload, "Workload file", fix="give a workload TOML file (examples/ holds some)", text=True
    )
    if calibration is not None:
        check_input_file(
            calibration, "Calibration file", fix="pass the file `gpuwise bench --json --out FILE` wrote"
        )
    check_catalog_dir(catalog_dir)

    work = load_workload(workload)
    cal = load_calibration(calibration) if calibration is not None else None
    constraints = inputs.constraints_from(work, canonical_gpu=lambda g: resolve_gpu(g).name)
    prototype = phase == "prototype"
    notes: list[str] = []
    target = work
    if prototype:
        target, definition = inputs.smoke_workload(work)
        notes.append(f"Prototype phase: {definition}. Shown: the cheapest single GPU that runs it.")
    data = inputs.data_needs_from(work, smoke=prototype)
    catalog = load_catalog(catalog_dir)
    check_currencies(catalog, fx)
    check_providers(catalog, [p for p in overrides if p != "*"], option="--spot-interruptions-per-hour")
    known = set(catalog.sources)
    for provider in constraints.providers or ():
        if provider not in known:
            raise NotFoundError(
                "provider",
                provider,
                sorted(known),
                why=f"[constraints] providers in {workload} names a provider the catalog does not have",
                fix="use the ids `gpuwise catalog offers` lists: " + ", ".join(sorted(known)),
            )
    settings = Settings(
        today=date.today(),
        objective=objective,
        spot_rate_overrides=overrides,
        restart_hours=restart_minutes / 60.0,
        exchange_rates=fx,
        boot_disk_gb=boot_disk_gb,
        single_gpu_only=prototype,
        service_hours=None if prototype else inputs.service_hours_from(work),
    )
    result = run_plan(
        catalog.offers,
        inputs.make_estimator(target, cal),
        constraints=constraints,
        data=data,
        settings=settings,
        spot_lookup=inputs.aws_spot_advisor_lookup,
        sources=dict(catalog.sources),
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
        print_json(result_to_dict(result, work.model_dump(mode="json"), top=top, extra=extra))
    else:
        _render(result, top=top, notes=notes, name=work.name or str(workload), html=html)
    if not result.options:
        raise GpuwiseError(_nothing_message(result), fix=_nothing_fix(result))


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


def _nothing_message(result: PlanResult) -> str:
    from gpuwise.plan.models import RELAXABLE
    from gpuwise.plan.planner import CONSTRAINT_KEYS

    if not result.rejected:
        return "No offer qualifies: the catalog has no offers"
    text = f"No offer qualifies ({result.considered} configurations considered)"
    constraint_counts = {r: n for r, n in result.rejected.items() if r in RELAXABLE}
    if constraint_counts:
        reason, n = max(constraint_counts.items(), key=lambda kv: kv[1])
        text += f": of the constraints, {CONSTRAINT_KEYS[reason]} removed the most ({n}, reason '{reason}')"
    others = {r: n for r, n in result.rejected.items() if r not in RELAXABLE}
    if others:
        text += "; besides: " + ", ".join(
            f"{r} {n}" for r, n in sorted(others.items(), key=lambda kv: -kv[1])
        )
    return text


def _nothing_fix(result: PlanResult) -> str:
    if result.relaxations:
        return "; ".join(r.suggestion for r in result.relaxations[:3])
    return "loosen the [constraints] of the workload, or plan a smaller configuration (the model may not fit)"


def _money(x: float) -> str:
    from gpuwise.units import format_money

    return format_money(x)


_SHORT_BOTTLENECK = {"memory_bandwidth": "bandwidth", "memory_capacity": "memory", "communication": "comm."}


def _split(o: Option) -> str:
    parts = o.cost_breakdown_usd
    total = o.cost_usd or 1.0
    labels = (("compute", "c"), ("storage", "s"), ("egress", "e"), ("interruption_overhead", "i"))
    shares = ((short, parts[k] / total * 100) for k, short in labels)
    return " ".join(f"{short}{pct:.0f}" for short, pct in shares if pct >= 0.5) or "–"


def _render(result: PlanResult, *, top: int, notes: list[str], name: str, html: Path | None) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from gpuwise.cli.output import console
    from gpuwise.plan.output import group_options, why_this_one

    for note in notes:
        console.print(escape(note), soft_wrap=True)
    shown = group_options(result.options, top)
    if shown:
        table = Table(
            title=(
                f"{escape(name)}: top {len(shown)} choices of {len(result.options)} options "
                f"by {result.objective}"
            ),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("offer", min_width=18, ratio=1, overflow="fold")
        table.add_column("pricing", min_width=11)
        table.add_column("hours", justify="right")
        table.add_column("total", justify="right")
        table.add_column("free", justify="right")
        table.add_column("bottleneck", no_wrap=True, min_width=10)
        for i, group in enumerate(shown, 1):
            o = group.option
            gpus = o.gpus_per_node * o.nodes
            nodes = f" on {o.nodes} nodes" if o.nodes > 1 else ""
            day = o.price_as_of.isoformat()
            if not o.price_date_exact:
                day = f"[yellow]{day}?[/]"
            elif o.price_stale:
                day = f"[yellow]{day}![/]"
            unknown = " [yellow]+?[/]" if o.unknown_costs else ""
            table.add_row(
                f"{i}{'*' if o.pareto else ''}",
                f"{escape(o.provider)} {escape(o.instance_type)}\n"
                f"[dim]{gpus}× {o.gpu}{nodes} · {escape(group.regions_text())}[/]",
                f"{o.pricing.replace('_', '-')}\n{_money(o.price_usd_per_hour)}/h\n{day}",
                f"{o.hours:,.1f}",
                f"[bold]{_money(o.cost_usd)}[/]\n[dim]{_split(o)}[/]{unknown}",
                f"{o.memory_capacity_gib - o.memory_per_gpu_gib:,.0f}\u00a0GiB",
                _SHORT_BOTTLENECK.get(o.bottleneck, o.bottleneck),
            )
        console.print(table)
        console.print(escape(why_this_one(result)), soft_wrap=True)
        console.print(
            "[dim]* on the Pareto front (nothing both cheaper and faster). split: c compute, s storage, "
            "e egress, i spot interruptions. +?: some cost parts unknown, counted as $0 (see --json). "
            "A date ending in ?: the source gives none (collection date shown); !: over 90 days old. "
            "free: GPU memory left per GPU (headroom). N regions: the same offer, price and total in "
            "several regions, shown once (--json lists them in `regions`).[/]",
            soft_wrap=True,
        )
    rejected = ", ".join(f"{r} {n}" for r, n in sorted(result.rejected.items(), key=lambda kv: -kv[1]))
    console.print(
        f"Considered {result.considered} configurations: {len(result.options)} qualify"
        + (f"; rejected: {rejected}" if rejected else ""),
        soft_wrap=True,
    )
    dated = [f"{p} {d.isoformat()}" for p, d in result.sources.items() if p not in result.undated_sources]
    undated: dict[str, list[str]] = {}
    for p in sorted(result.undated_sources):
        undated.setdefault(result.sources[p].isoformat(), []).append(p)
    parts = [", ".join(dated)] if dated else []
    parts += [f"date unknown (collected {day}): {', '.join(ps)}" for day, ps in sorted(undated.items())]
    dates = "; ".join(parts)
    console.print(f"[dim]Prices as of: {dates}[/]", soft_wrap=True)
    for a in result.assumptions:
        console.print(f"[dim]- {escape(a)}[/]", soft_wrap=True)
    if html is not None:
        console.print(f"HTML report: {escape(str(html))}", soft_wrap=True)
