"""The plan room's one entry point: `run(PlanRequest) -> PlanOutcome` (also `gpuwise.plan.run`).

It loads what a plan needs (the workload, the calibration, the catalog, the reservation table), checks the
request against the catalog (currencies, providers, regions), builds the planner's inputs and plans. The
CLI parses and checks its options, calls this, and renders the outcome; `today` comes in with the request,
so this module reads no clock. Errors are gpuwise's own (exit 2 for bad input), raised before planning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.catalog.models import Catalog, Offer
    from gpuwise.catalog.reserved import ReservedRate
    from gpuwise.plan.models import Constraints, DataNeeds, PlanResult, Settings
    from gpuwise.plan.planner import ReservedLookup


_NONE: Mapping[str, float] = MappingProxyType({})
_NO_RATES: Mapping[str, tuple[float, str]] = MappingProxyType({})


# NamedTuples rather than dataclasses: a dataclass costs about 1 ms to create at import, on every command.
class PlanRequest(NamedTuple):
    """What `gpuwise plan` was asked, its options already parsed and range-checked."""

    workload: Path
    today: date
    objective: str = "cost"
    prototype: bool = False  # --phase prototype
    calibration: Path | None = None
    catalog_dir: Path | None = None
    spot_rates: Mapping[str, float] = _NONE  # provider (or "*") -> preemptions per hour
    exchange_rates: Mapping[str, float] = _NONE  # currency -> USD per unit
    # --currency: bundled rates (currency -> (USD per unit, note)) for currencies with no --exchange-rate
    bundled_rates: Mapping[str, tuple[float, str]] = _NO_RATES
    restart_minutes: float = 10.0
    boot_disk_gb: float = 100.0
    gpus: tuple[str, ...] = ()  # --gpu GPU[:N], as typed
    providers: tuple[str, ...] = ()  # --provider
    regions: tuple[str, ...] = ()  # --region patterns
    spot_only: bool | None = None  # --spot: True, --on-demand: False
    utilization: float | None = None


class PlanOutcome(NamedTuple):
    """The plan and what rendering it needs: the workload (its name, its JSON echo), the constraints
    planned under, notes for the header, and why GPUs had no estimate."""

    result: PlanResult
    workload: Any  # gpuwise.workload.Workload (a pydantic model, imported lazily)
    constraints: Constraints
    notes: tuple[str, ...]
    no_estimate_why: dict[str, str]


def run(request: PlanRequest) -> PlanOutcome:
    """Load, check and plan (see the module docstring)."""
    from gpuwise.catalog.offers import load_catalog
    from gpuwise.catalog.specs import parse_gpu_request, resolve_gpu
    from gpuwise.estimate import load_calibration
    from gpuwise.plan import inputs
    from gpuwise.plan.planner import plan
    from gpuwise.workload import load_workload

    gpu_requests = [parse_gpu_request(g) for g in request.gpus]
    gpu_counts = tuple((resolve_gpu(name).name, n) for name, n in gpu_requests)
    work = load_workload(request.workload)
    cal = load_calibration(request.calibration) if request.calibration is not None else None
    constraints = inputs.constraints_from(work, canonical_gpu=lambda g: resolve_gpu(g).name)
    constraints = apply_flags(
        constraints,
        gpu_counts=gpu_counts,
        providers=request.providers,
        regions=request.regions,
        spot_only=request.spot_only,
    )
    notes: list[str] = []
    target = work
    if request.prototype:
        target, definition = inputs.smoke_workload(work)
        notes.append(
            _("Prototype phase: {definition}. Shown: the cheapest single GPU that runs it.").format(
                definition=definition
            )
        )
        if constraints.max_latency_s is not None or constraints.max_ttft_s is not None:
            # the smoke test runs one request at a time on one GPU: the service's targets are not its own
            constraints = replace(constraints, max_latency_s=None, max_ttft_s=None)
            notes.append(_("The latency targets apply to the service, not to the prototype's smoke test."))
    data = _data_needs(work, target, smoke=request.prototype)
    catalog = load_catalog(request.catalog_dir)
    _check_against_catalog(request, catalog, constraints)
    settings = _settings(request, work, target)
    estimator = inputs.make_estimator(target, cal)
    result = plan(
        catalog.offers,
        estimator,
        constraints=constraints,
        data=data,
        settings=settings,
        spot_lookup=inputs.aws_spot_advisor_lookup,
        sources=dict(catalog.sources),
        runnable=inputs.make_runnable(target),
        reserved_lookup=_reserved_lookup(settings),
        network_lookup=inputs.network_gbps,
    )
    return PlanOutcome(result, work, constraints, tuple(notes), estimator.why)


def apply_flags(
    constraints: Constraints,
    *,
    gpu_counts: tuple[tuple[str, int | None], ...],
    providers: tuple[str, ...],
    regions: tuple[str, ...],
    spot_only: bool | None,
) -> Constraints:
    """The command-line flags over the file's [constraints]: each flag given replaces its key."""
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


def _data_needs(work: Any, target: Any, *, smoke: bool) -> DataNeeds:
    """What the run stores and sends, with the start-up transfers of the workload planned (`target`)."""
    from gpuwise.plan import inputs

    data = inputs.data_needs_from(work, smoke=smoke)
    model_gb, upload_gb, transfer_why = inputs.transfers_from(target, data)
    return replace(
        data,
        model_download_gb=model_gb,
        final_upload_gb=upload_gb,
        assumptions=(*data.assumptions, _("start-up transfers: {why}").format(why=transfer_why)),
    )


def _check_against_catalog(request: PlanRequest, catalog: Catalog, constraints: Constraints) -> None:
    """Currencies, providers and exact regions the request names must exist in the catalog."""
    from gpuwise.catalog.validate import check_currencies, check_providers, check_region
    from gpuwise.errors import NotFoundError

    check_currencies(catalog, request.exchange_rates)
    check_providers(
        catalog, [p for p in request.spot_rates if p != "*"], option="--spot-interruptions-per-hour"
    )
    known = set(catalog.sources)
    where = (
        "--provider"
        if request.providers
        else _("[constraints] providers in {path}").format(path=request.workload)
    )
    for name in constraints.providers or ():
        if name not in known:
            raise NotFoundError(
                _("provider"),
                name,
                sorted(known),
                why=_("{where} names a provider the catalog does not have").format(where=where),
                fix=_("use the ids `gpuwise catalog offers` lists: {ids}").format(
                    ids=", ".join(sorted(known))
                ),
            )
    for pattern in request.regions:
        check_region(catalog, pattern)


def _settings(request: PlanRequest, work: Any, target: Any) -> Settings:
    from gpuwise.plan import inputs
    from gpuwise.plan.models import Settings

    prototype = request.prototype
    commitment = getattr(work.constraints, "commitment_months", None)
    return Settings(
        today=request.today,
        objective=request.objective,
        spot_rate_overrides=dict(request.spot_rates),
        restart_hours=request.restart_minutes / 60.0,
        exchange_rates={**{c: r for c, (r, _) in request.bundled_rates.items()}, **request.exchange_rates},
        exchange_rate_notes={
            c: n for c, (_, n) in request.bundled_rates.items() if c not in request.exchange_rates
        },
        boot_disk_gb=request.boot_disk_gb,
        single_gpu_only=prototype,
        service_hours=None if prototype else inputs.service_hours_from(work),
        commitment_months=None if prototype else commitment,
        utilization=None if prototype else request.utilization,
        # the smoke test is not an epoch (nor 1M tokens) of the job: "$0.38 per epoch" misstated the job's
        units=() if prototype else inputs.units_from(target),
    )


def _reserved_lookup(settings: Settings) -> ReservedLookup | None:
    """AWS reservation rates by offer, loaded only when a commitment or utilization is given."""
    if settings.commitment_months is None and settings.utilization is None:
        return None
    from gpuwise.catalog.reserved import load_reserved_rates

    table = load_reserved_rates()

    def lookup(offer: Offer) -> ReservedRate | None:
        return table.get((offer.provider, offer.instance_type, offer.region))

    return lookup
