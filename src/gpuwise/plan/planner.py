"""The planner: every offer × node count × pricing model, costed, filtered, ranked, Pareto-marked.

`plan()` takes data in and returns data out: the offers, an estimator callable (cached here by
(gpu, count, nodes): estimates do not depend on the provider), the constraints, the run's data needs and
settings (including "today", for stale prices). It never reads files, the clock or the environment.

Every configuration looked at is either an option or rejected for exactly one reason (the first that
fails, in `models.REASONS` order), so ``len(options) + sum(rejected.values()) == considered``. For the
"nothing qualifies" answer, configurations that break exactly one relaxable constraint are tallied per
constraint, with the budget or deadline that would admit them.

Every option pays for its start-up (plan/startup.py) and must run the workload's dtype (plan/runnable.py:
rejected as `dtype`, or costed with a stated fp16 fallback); several nodes only on a shared fabric
(`no_fabric` otherwise). Reservations join only when the settings carry a commitment, costed as the whole
commitment. The three headline picks (plan/picks.py) are chosen over every qualifying option.

The inner loop works on plain floats and tuples; `Option` objects are built only for what qualifies.
Must not import pydantic, plotly or anything that does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import date
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, NamedTuple, overload

from gpuwise.catalog.models import Offer
from gpuwise.estimate.models import Estimate
from gpuwise.plan import runnable as run_rules
from gpuwise.plan.interruption import (
    MODEL_NOTE,
    InterruptionRate,
    assumed_rate,
    interruption_cost,
)
from gpuwise.plan.models import (
    FACTS,
    REASONS,
    RELAXABLE,
    Constraints,
    DataNeeds,
    Option,
    PlanResult,
    Relaxation,
    Settings,
)
from gpuwise.plan.picks import choose_picks, pareto_flags, worth_renting
from gpuwise.plan.rates import (
    HOURS_PER_MONTH,
    ProviderRates,
    rates_for,
    region_has_list_rates,
    unknown_text,
)
from gpuwise.plan.startup import Startup, startup_hours, startup_rates
from gpuwise.units import GIB

if TYPE_CHECKING:
    from gpuwise.catalog.reserved import ReservedRate

Estimator = Callable[[str, int, int], Estimate | None]
# (provider, instance_type) -> one node's network bandwidth in Gb/s, where the catalog knows it. With it, a
# multi-node option's estimate is called with that bandwidth as a fourth argument.
NetworkLookup = Callable[[str, str], float | None]
SpotLookup = Callable[[Offer], InterruptionRate | None]
Runnable = Callable[[str], run_rules.Verdict]  # canonical GPU -> can it run the workload's dtype
ReservedLookup = Callable[[Offer], "ReservedRate | None"]

_RELAXABLE = frozenset(RELAXABLE)
CONSTRAINT_KEYS = {  # rejection reason -> the workload key (or option) that sets it
    "currency": "--exchange-rate",
    "provider": "providers",
    "region": "regions",
    "gpu": "gpus",
    "gpu_count": "--gpu NAME:N",
    "max_gpus": "max_gpus",
    "pricing": "--spot/--on-demand",
    "spot_not_allowed": "interruptible",
    "over_commitment": "commitment_months",
    "over_deadline": "deadline_hours",
    "over_budget": "budget_usd",
}
_FACTS = frozenset(FACTS)
AVAILABILITY_NOTE = (
    "Availability is not known: a listed offer may have no capacity (or no quota for you) when you launch."
)
RESERVED_NOTE = (
    "Reserved/committed prices are shown only with [constraints] commitment_months or --utilization "
    "(AWS 1-year no-upfront reservations; no other provider's commitment price could be verified)."
)


def billed_hours(hours: float, rates: ProviderRates) -> float:
    """Hours the provider bills for a run of `hours`: rounded up to its increment, at least its minimum."""
    if rates.billing_increment_s is None:
        return hours
    seconds = hours * 3600.0
    step = rates.billing_increment_s
    billed = math.ceil(seconds / step - 1e-9) * step
    return max(billed, rates.minimum_charge_s or 0.0) / 3600.0


class _Costed(NamedTuple):
    """The numbers of one configuration (no strings: built for every configuration; a NamedTuple because
    it is built tens of thousands of times on a large catalog)."""

    price_per_hour: float  # USD, all nodes
    hours: float  # wall clock: start-up + run + spot losses
    compute: float
    startup: float
    storage: float
    egress: float
    interruption: float
    interruptions: float
    unknown: tuple[str, ...]
    total: float  # the parts added up


def _cost(
    price_per_hour: float,
    *,
    nodes: int,
    run_hours: float,
    start_hours: float,
    rates: ProviderRates,
    list_rates: bool,
    spot_rate: float | None,
    data: DataNeeds,
    settings: Settings,
    gpu_only_price: bool,
    commitment_usd: float | None = None,
) -> _Costed:
    """Cost parts. With `commitment_usd` (a reservation) compute + startup = the whole commitment."""
    lost_hours = 0.0
    interruptions = 0.0
    if spot_rate is not None:
        ic = interruption_cost(run_hours, spot_rate, data.checkpoint_every_hours, settings.restart_hours)
        lost_hours, interruptions = ic.lost_hours, ic.expected_preemptions
    hours = start_hours + run_hours + lost_hours
    startup = price_per_hour * start_hours
    if commitment_usd is not None:
        startup = min(startup, commitment_usd)
        compute = commitment_usd - startup
    else:
        # the instance is billed from boot to shutdown: round the whole stay, then split off start-up
        compute = price_per_hour * billed_hours(start_hours + run_hours, rates) - startup
    interruption = price_per_hour * lost_hours
    unknown: list[str] = []
    stored_gb = data.dataset_gb + data.checkpoint_gb * data.checkpoints_kept
    months = hours / HOURS_PER_MONTH
    storage = 0.0
    storage_rate = rates.storage_usd_per_gb_month if list_rates else None
    if stored_gb > 0:
        if storage_rate is None:
            unknown.append("storage")
        else:
            storage += stored_gb * storage_rate * months
    boot_rate = rates.boot_disk_usd_per_gb_month if list_rates else None
    if settings.boot_disk_gb > 0:
        if boot_rate is None:
            unknown.append("boot_disk")
        else:
            storage += settings.boot_disk_gb * nodes * boot_rate * months
    egress = 0.0
    egress_rate = rates.egress_usd_per_gb if list_rates else None
    if data.egress_gb > 0:
        if egress_rate is None:
            unknown.append("egress")
        else:
            egress = data.egress_gb * egress_rate
    if gpu_only_price:
        unknown.append("host_vm")
    return _Costed(
        price_per_hour=price_per_hour,
        hours=hours,
        compute=compute,
        startup=startup,
        storage=storage,
        egress=egress,
        interruption=interruption,
        interruptions=interruptions,
        unknown=tuple(unknown),
        total=compute + startup + storage + egress + interruption,
    )


class _Relax:
    """Tally of configurations that break exactly one relaxable constraint."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.min_cost: dict[str, float] = {}
        self.max_cost: dict[str, float] = {}
        self.min_hours: dict[str, float] = {}
        self.max_hours: dict[str, float] = {}

    def add(self, reason: str, cost: float | None = None, hours: float | None = None) -> None:
        self.count[reason] = self.count.get(reason, 0) + 1
        if cost is not None:
            self.min_cost[reason] = min(self.min_cost.get(reason, math.inf), cost)
            self.max_cost[reason] = max(self.max_cost.get(reason, -math.inf), cost)
        if hours is not None:
            self.min_hours[reason] = min(self.min_hours.get(reason, math.inf), hours)
            self.max_hours[reason] = max(self.max_hours.get(reason, -math.inf), hours)

    def results(self, constraints: Constraints) -> tuple[Relaxation, ...]:
        out: list[Relaxation] = []
        for reason, n in self.count.items():
            key = CONSTRAINT_KEYS[reason]
            plural = "option" if n == 1 else "options"
            if reason == "over_budget":
                lo, hi = _ceil_money(self.min_cost[reason]), _ceil_money(self.max_cost[reason])
                text = _raise_text("budget_usd", f"${lo:,.0f}", f"${hi:,.0f}", n, lo < hi)
            elif reason == "over_deadline":
                lo, hi = _ceil1(self.min_hours[reason]), _ceil1(self.max_hours[reason])
                text = _raise_text("deadline_hours", f"{lo:g}", f"{hi:g}", n, lo < hi)
            elif reason == "spot_not_allowed":
                text = f"setting interruptible = true would allow {n} spot {plural}"
            elif reason == "currency":
                text = f"giving --exchange-rate (e.g. CNY=0.14) would allow {n} {plural}"
            elif reason == "max_gpus":
                text = f"raising max_gpus (now {constraints.max_gpus}) would allow {n} {plural}"
            else:
                text = f"removing the {key} constraint would allow {n} {plural}"
            out.append(Relaxation(reason=reason, constraint=key, options=n, suggestion=text))
        out.sort(key=lambda r: (-r.options, _reason_rank(r.reason)))
        return tuple(out)


def _reason_rank(reason: str) -> int:
    return REASONS.index(reason) if reason in REASONS else len(REASONS)


def _raise_text(key: str, lo: str, hi: str, n: int, differ: bool) -> str:
    """'raising budget_usd to $14 would allow 1 option, to $354 all 241'."""
    if n == 1 or not differ:
        return f"raising {key} to {hi} would allow {n} option{'s' if n > 1 else ''}"
    return f"raising {key} to {lo} would allow 1 option, to {hi} all {n}"


def _ceil_money(x: float) -> float:
    return float(math.ceil(x))


def _ceil1(x: float) -> float:
    return math.ceil(x * 10) / 10


class _Kept(NamedTuple):
    """One qualifying configuration, before its `Option` (with notes) is built on demand."""

    offer: Offer
    nodes: int
    pricing: str
    rate_to_usd: float
    est: Estimate
    costed: _Costed
    spot: InterruptionRate | None
    start: Startup
    verdict: run_rules.Verdict
    fabric: run_rules.Fabric | None
    reserved: ReservedRate | None
    run_args: tuple[float, float | None, float | None]  # (price per hour all nodes, spot rate, commitment)


def _hours_range(est: Estimate) -> tuple[float, float]:
    """The estimate's time range; `hours` both ways when the estimator gives none (NaN: no spread known)."""
    lo = est.hours_low if 0 < est.hours_low < math.inf else est.hours
    hi = est.hours_high if 0 < est.hours_high < math.inf else est.hours
    return min(lo, est.hours), max(hi, est.hours)


def plan(
    offers: Iterable[Offer],
    estimator: Estimator,
    *,
    constraints: Constraints,
    data: DataNeeds,
    settings: Settings,
    spot_lookup: SpotLookup | None = None,
    sources: dict[str, date] | None = None,
    runnable: Runnable | None = None,
    reserved_lookup: ReservedLookup | None = None,
    network_lookup: NetworkLookup | None = None,
) -> PlanResult:
    """Cost every configuration, reject what breaks a constraint, rank the rest by the objective."""
    if settings.objective not in ("cost", "time", "balanced"):
        raise ValueError(f"objective must be 'cost', 'time' or 'balanced', not {settings.objective!r}")
    est_cache: dict[tuple[str, int, int, float | None], Estimate | None] = {}
    rate_cache: dict[tuple[str, str, str], InterruptionRate] = {}
    verdict_cache: dict[str, run_rules.Verdict] = {}
    start_cache: dict[str, Startup] = {}
    rejected: dict[str, int] = {}
    blocked: dict[tuple[str, str], int] = {}
    dtype_why: dict[str, str] = {}
    relax = _Relax()
    considered = 0
    kept: list[_Kept] = []

    providers = frozenset(constraints.providers) if constraints.providers is not None else None
    # Region names are compared case-blind: providers spell them "us-east-1", "eastus", "FIN-03".
    region_patterns = None if constraints.regions is None else tuple(p.lower() for p in constraints.regions)
    gpus_allowed = frozenset(constraints.gpus) if constraints.gpus is not None else None
    counts_asked: dict[str, set[int | None]] | None = None
    if constraints.gpu_counts is not None:
        counts_asked = {}
        for name, n in constraints.gpu_counts:
            counts_asked.setdefault(name, set()).add(n)
    pricings = None if constraints.pricings is None else frozenset(constraints.pricings)
    max_nodes = 1 if settings.single_gpu_only else max(1, constraints.max_nodes)
    fx = settings.exchange_rates
    service_hours = settings.service_hours
    commitment = settings.commitment_months
    if commitment is None and settings.utilization is not None:
        commitment = 12.0  # the only term with published rates (AWS 1-year)
    seen_sources: dict[str, date] = {}
    dated_providers: set[str] = set()

    def reject(fails: list[str], gpu: str, cost: float | None = None, hours: float | None = None) -> None:
        rejected[fails[0]] = rejected.get(fails[0], 0) + 1
        if len(fails) == 1:
            if fails[0] in _RELAXABLE:
                relax.add(fails[0], cost, hours)
            if fails[0] in _FACTS:
                blocked[(fails[0], gpu)] = blocked.get((fails[0], gpu), 0) + 1

    offers_seen: list[Offer] = []
    for offer in offers:
        offers_seen.append(offer)
        day = offer.price_as_of
        if offer.spot_price_as_of is not None and offer.spot_price_as_of > day:
            day = offer.spot_price_as_of
        if day > seen_sources.get(offer.provider, date.min):
            seen_sources[offer.provider] = day
        if offer.price_date_exact:
            dated_providers.add(offer.provider)

        prices: list[tuple[str, float]] = []
        if offer.price_usd_per_hour is not None:
            prices.append(("on_demand", offer.price_usd_per_hour))
        if offer.spot_price_usd_per_hour is not None:
            prices.append(("spot", offer.spot_price_usd_per_hour))
        reservation = None
        if commitment is not None and reserved_lookup is not None:
            reservation = reserved_lookup(offer)
            if reservation is not None:
                prices.append(("reserved", reservation.usd_per_hour))
        if not prices:
            considered += max_nodes
            rejected["no_price"] = rejected.get("no_price", 0) + max_nodes
            continue

        static: list[str] = []
        rate_to_usd = 1.0
        if offer.currency != "USD":
            if offer.currency in fx:
                rate_to_usd = fx[offer.currency]
            else:
                static.append("currency")
        if providers is not None and offer.provider not in providers:
            static.append("provider")
        if region_patterns is not None and not any(
            fnmatchcase(offer.region.lower(), p) for p in region_patterns
        ):
            static.append("region")
        if gpus_allowed is not None and offer.gpu not in gpus_allowed:
            static.append("gpu")
        wanted_counts = None if counts_asked is None else counts_asked.get(offer.gpu)
        if counts_asked is not None and wanted_counts is None and "gpu" not in static:
            static.append("gpu")
        per_node = offer.gpus
        fractional = per_node < 1 or per_node != int(per_node)
        if fractional:
            static.append("fractional_gpu")

        rates = rates_for(offer.provider)
        list_rates = region_has_list_rates(offer.provider, offer.region)
        fabric = run_rules.fabric_for(offer.provider, offer.instance_type) if max_nodes > 1 else None

        for nodes in range(1, max_nodes + 1):
            node_fails = list(static)
            total_gpus = per_node * nodes
            if wanted_counts is not None and None not in wanted_counts and total_gpus not in wanted_counts:
                node_fails.append("gpu_count")
            if settings.single_gpu_only and total_gpus != 1:
                node_fails.append("not_single_gpu")
            if constraints.max_gpus is not None and total_gpus > constraints.max_gpus:
                node_fails.append("max_gpus")
            if nodes > 1 and fabric is None:
                node_fails.append("no_fabric")
            for pricing, price in prices:
                considered += 1
                fails = list(node_fails)
                if pricings is not None and pricing not in pricings:
                    fails.append("pricing")
                if pricing == "spot" and not constraints.interruptible:
                    fails.append("spot_not_allowed")
                verdict = run_rules.OK
                if runnable is not None:
                    found_verdict = verdict_cache.get(offer.gpu)
                    if found_verdict is None:
                        found_verdict = verdict_cache[offer.gpu] = runnable(offer.gpu)
                    verdict = found_verdict
                    if not verdict.runs:
                        fails.append("dtype")
                        dtype_why[offer.gpu] = verdict.note or "cannot run the workload's dtype"
                # Stop early once the outcome is settled: a fact about the offer, or two broken constraints.
                if len(fails) >= 2 or (fails and fails[0] not in _RELAXABLE):
                    reject(fails, offer.gpu)
                    continue
                count = int(per_node) * nodes
                net = (
                    network_lookup(offer.provider, offer.instance_type)
                    if network_lookup and nodes > 1
                    else None
                )
                key = (offer.gpu, count, nodes, net)
                if key in est_cache:
                    est = est_cache[key]
                elif net is None:
                    est = est_cache[key] = estimator(offer.gpu, count, nodes)
                else:  # the instance's own inter-node bandwidth (EFA, InfiniBand, "25 Gigabit")
                    est = est_cache[key] = estimator(offer.gpu, count, nodes, net)  # type: ignore[call-arg]
                if est is None or not (0 < est.hours < math.inf):
                    reject([*fails, "no_estimate"], offer.gpu)
                    continue
                if not est.fits:
                    reject([*fails, "does_not_fit"], offer.gpu)
                    continue
                if service_hours is not None and est.hours > service_hours * (1 + 1e-9):
                    reject([*fails, "below_target_rate"], offer.gpu)
                    continue
                start = start_cache.get(offer.provider)
                if start is None:
                    start = start_cache[offer.provider] = startup_hours(
                        startup_rates(offer.provider, settings.startup_overrides),
                        dataset_gb=data.dataset_gb,
                        model_gb=data.model_download_gb,
                        upload_gb=data.final_upload_gb,
                    )
                spot: InterruptionRate | None = None
                if pricing == "spot":
                    spot = _spot_rate(offer, settings, spot_lookup, rate_cache)
                commit_usd: float | None = None
                if pricing == "reserved" and reservation is not None and commitment is not None:
                    terms = math.ceil(commitment / reservation.term_months - 1e-9)
                    commit_usd = reservation.term_cost_usd * nodes * terms
                    if start.hours + est.hours > terms * reservation.term_hours:
                        fails.append("over_commitment")
                price_all = price * rate_to_usd * nodes
                spot_per_hour = None if spot is None else spot.per_hour
                costed = _cost(
                    price_all,
                    nodes=nodes,
                    run_hours=est.hours,
                    start_hours=start.hours,
                    rates=rates,
                    list_rates=list_rates,
                    spot_rate=spot_per_hour,
                    data=data,
                    settings=settings,
                    gpu_only_price=offer.gpu_only_price,
                    commitment_usd=commit_usd,
                )
                total = costed.total
                if constraints.deadline_hours is not None and costed.hours > constraints.deadline_hours:
                    fails.append("over_deadline")
                if constraints.budget_usd is not None and total > constraints.budget_usd:
                    fails.append("over_budget")
                if fails:
                    reject(fails, offer.gpu, total, costed.hours)
                    continue
                kept.append(
                    _Kept(
                        offer,
                        nodes,
                        pricing,
                        rate_to_usd,
                        est,
                        costed,
                        spot,
                        start,
                        verdict,
                        fabric if nodes > 1 else None,
                        reservation if pricing == "reserved" else None,
                        (price_all, spot_per_hour, commit_usd),
                    )
                )

    # Rank and mark the front on plain numbers; `Option` objects (with their notes) are built only when
    # read: `--json` reads the top N, the HTML chart reads all.
    points = [(k.costed.total, k.costed.hours) for k in kept]
    pareto = pareto_flags(points)
    worth = worth_renting(points)
    note_cache: dict[tuple[str, bool], tuple[str, ...]] = {}

    def build(i: int) -> Option:
        return _option(
            kept[i],
            data=data,
            settings=settings,
            note_cache=note_cache,
            pareto=pareto[i],
            worth=worth[i],
        )

    def order_key(i: int) -> tuple[float, float, str, str, str, str]:
        k = kept[i]
        c = k.costed
        if settings.objective == "time":
            first, second = c.hours, c.total
        elif settings.objective == "balanced":
            first, second = c.total * c.hours, c.total
        else:
            first, second = c.total, c.hours
        return (first, second, k.offer.provider, k.offer.instance_type, k.offer.region, k.pricing)

    order = sorted(range(len(kept)), key=order_key)
    rank_of = {kept_index: rank for rank, kept_index in enumerate(order)}
    options = OptionList(order, build)
    chosen = choose_picks(points, pareto, worth)
    picks = {name: rank_of[i] for name, i in chosen.as_dict().items() if i is not None}
    passed_over = None
    if chosen.passed_over is not None and chosen.passed_for is not None:
        passed_over = (rank_of[chosen.passed_over], rank_of[chosen.passed_for])

    assumptions = [*data.assumptions]
    assumptions.append(
        "spot: each preemption loses half the checkpoint interval "
        f"({data.checkpoint_every_hours:g} h) of work plus "
        f"{settings.restart_hours * 60:.0f} min to restart (assumed)"
    )
    if constraints.interruptible:
        assumptions.append(MODEL_NOTE)
    if settings.boot_disk_gb > 0:
        assumptions.append(
            f"boot disk of {settings.boot_disk_gb:g} GB per node, billed where the provider charges it"
        )
    assumptions.append(
        "start-up (boot, set-up, image/dataset/model download, final upload) is billed time: counted in "
        "hours and cost (each option states its figures)"
    )
    if commitment is None:
        assumptions.append(RESERVED_NOTE)
    else:
        assumptions.append(
            f"reservations are costed as the whole commitment ({commitment:g} months, busy or idle), "
            "never pro-rated"
        )
    assumptions.append(AVAILABILITY_NOTE)
    relaxations = relax.results(constraints)
    if not options and not settings.single_gpu_only and constraints.max_nodes < WHAT_IF_MAX_NODES:
        relaxations = _more_nodes(
            offers_seen,
            estimator,
            constraints=constraints,
            data=data,
            settings=settings,
            spot_lookup=spot_lookup,
            relaxations=relaxations,
            runnable=runnable,
            network_lookup=network_lookup,
        )
    return PlanResult(
        options=options,
        considered=considered,
        rejected={r: rejected[r] for r in REASONS if r in rejected},
        relaxations=relaxations,
        sources=dict(sorted((final_sources := sources if sources is not None else seen_sources).items())),
        assumptions=tuple(assumptions),
        objective=settings.objective,
        undated_sources=frozenset(final_sources) - dated_providers,
        picks=picks,
        passed_over=passed_over,
        blocked=blocked,
        dtype_why=dtype_why,
        stale_after_days=settings.stale_after_days,
        today=settings.today,
    )


WHAT_IF_MAX_NODES = 4  # when nothing qualifies, look this far for "raising max_nodes would allow …"


def _more_nodes(
    offers: Sequence[Offer],
    estimator: Estimator,
    *,
    constraints: Constraints,
    data: DataNeeds,
    settings: Settings,
    spot_lookup: SpotLookup | None,
    relaxations: tuple[Relaxation, ...],
    runnable: Runnable | None = None,
    network_lookup: NetworkLookup | None = None,
) -> tuple[Relaxation, ...]:
    """What spreading the work over more nodes would give, when nothing qualifies on `max_nodes`."""
    wider = replace(constraints, max_nodes=WHAT_IF_MAX_NODES)
    found = plan(
        offers,
        estimator,
        constraints=wider,
        data=data,
        settings=settings,
        spot_lookup=spot_lookup,
        runnable=runnable,
        network_lookup=network_lookup,
    )
    nodes = sorted(o.nodes for o in found.options)
    if not nodes:
        return relaxations
    n = len(nodes)
    text = f"raising max_nodes to {nodes[0]} would allow {'1 option' if n == 1 else f'{n} options'}"
    if n > 1 and nodes[-1] > nodes[0]:
        text = f"raising max_nodes to {nodes[0]} would allow some options, to {nodes[-1]} all {n}"
    extra = Relaxation(reason="max_nodes", constraint="max_nodes", options=n, suggestion=text)
    return tuple(sorted((*relaxations, extra), key=lambda r: (-r.options, _reason_rank(r.reason))))


def _spot_rate(
    offer: Offer,
    settings: Settings,
    lookup: SpotLookup | None,
    cache: dict[tuple[str, str, str], InterruptionRate],
) -> InterruptionRate:
    key = (offer.provider, offer.instance_type, offer.region)
    found = cache.get(key)
    if found is not None:
        return found
    overrides = settings.spot_rate_overrides
    override = overrides.get(offer.provider, overrides.get("*"))
    if override is not None:
        rate = InterruptionRate(
            per_hour=override, source=f"{override:g} preemptions/h given by the user", assumed=True
        )
    else:
        looked = lookup(offer) if lookup is not None else None
        rate = looked if looked is not None else assumed_rate(offer.provider)
    cache[key] = rate
    return rate


def _provider_notes(provider: str, list_rates: bool, data: DataNeeds) -> tuple[str, ...]:
    rates = rates_for(provider)
    notes = [rates.billing_text()]
    if rates.storage_usd_per_gb_month is not None and list_rates:
        notes.append(
            f"storage: {rates.storage_kind} at ${rates.storage_usd_per_gb_month:.4g}/GB-month "
            f"({rates.source}, {rates.as_of}; {rates.note or 'list price'})"
        )
    if rates.egress_usd_per_gb is not None and list_rates and data.egress_gb > 0:
        notes.append(f"egress: ${rates.egress_usd_per_gb:.4g}/GB to the internet")
    if not list_rates:
        notes.append(f"{provider} China regions: storage and egress rates are not in gpuwise's (USD) table")
    else:
        why = unknown_text(rates)
        if why is not None:
            notes.append(why)
    return tuple(notes)


def _option(
    k: _Kept,
    *,
    data: DataNeeds,
    settings: Settings,
    note_cache: dict[tuple[str, bool], tuple[str, ...]],
    pareto: bool,
    worth: bool,
) -> Option:
    offer, c, est, spot, pricing = k.offer, k.costed, k.est, k.spot, k.pricing
    as_of = offer.spot_price_as_of if (pricing == "spot" and offer.spot_price_as_of) else offer.price_as_of
    if k.reserved is not None:
        as_of = k.reserved.as_of
    age = (settings.today - as_of).days
    over_limit = age > settings.stale_after_days
    stale = (not offer.price_date_exact) or over_limit
    list_rates = region_has_list_rates(offer.provider, offer.region)
    # The provider's notes are the same for all its options: format them once per plan.
    static = note_cache.get((offer.provider, list_rates))
    if static is None:
        static = note_cache[(offer.provider, list_rates)] = _provider_notes(offer.provider, list_rates, data)
    notes: list[str] = []
    if k.verdict.fallback is not None and k.verdict.note:
        notes.append(f"dtype fallback: {k.verdict.note}")
    if k.fabric is not None:
        notes.append(f"{k.nodes} nodes over {k.fabric.interconnect} ({k.fabric.source})")
    notes.append(k.start.text)
    notes.extend(static)
    if c.unknown:
        notes.append("unknown, counted as $0: " + ", ".join(c.unknown))
    if spot is not None:
        notes.append(f"spot interruptions: {spot.source}; expected {c.interruptions:.2f} over the run")
    if offer.currency != "USD":
        notes.append(
            f"price converted from {offer.currency} at {k.rate_to_usd:g} USD/{offer.currency} (given)"
        )
    if not offer.price_date_exact:
        notes.append(
            f"price date unknown (collected {as_of}, {age} days ago"
            + (f", over the {settings.stale_after_days}-day limit)" if over_limit else ")")
        )
    elif over_limit:
        notes.append(f"price {age} days old (over the {settings.stale_after_days}-day limit)")
    break_even = None
    commitment_usd = None
    reserved_kind = None
    months = None
    if k.reserved is not None:
        r = k.reserved
        commitment_usd = k.run_args[2]
        reserved_kind = r.kind
        months = settings.commitment_months or float(r.term_months)
        if offer.price_usd_per_hour:
            break_even = r.usd_per_hour * HOURS_PER_MONTH / offer.price_usd_per_hour
        notes.append(
            f"reserved: {r.kind} at ${r.usd_per_hour:,.4g}/h per instance, billed every hour of the term; "
            f"costed as the whole commitment ({months:g} months × {k.nodes} instance"
            f"{'s' if k.nodes > 1 else ''}) ({r.source}, {r.as_of})"
        )
        if break_even is not None:
            notes.append(
                f"a {r.term_months // 12}-year reservation beats on-demand above {break_even:,.0f} busy "
                f"hours a month (of {HOURS_PER_MONTH:g})"
            )
        if settings.utilization is not None and commitment_usd is not None:
            busy = settings.utilization * (months * HOURS_PER_MONTH)
            notes.append(
                f"at {settings.utilization:.0%} utilization: "
                f"${commitment_usd / busy / k.nodes:,.4g} per busy "
                f"instance-hour, against ${offer.price_usd_per_hour or 0:,.4g} on demand"
            )
    notes.extend(offer.notes)
    notes.extend(est.assumptions)
    # the cost range from the estimate's time range (a reservation costs the same whatever the hours)
    lo_h, hi_h = _hours_range(est)
    lo_c, hi_c = _range_costs(k, lo_h, hi_h, settings, data)
    capacity_gib = est.memory_capacity_bytes / GIB
    return Option(
        provider=offer.provider,
        instance_type=offer.instance_type,
        region=offer.region,
        zone=offer.zone,
        gpu=offer.gpu,
        gpus_per_node=int(offer.gpus),
        nodes=k.nodes,
        pricing=pricing,
        price_usd_per_hour=c.price_per_hour,
        price_as_of=as_of,
        price_date_exact=offer.price_date_exact,
        price_stale=stale,
        currency=offer.currency,
        hours=c.hours,
        cost_usd=c.total,
        cost_breakdown_usd={
            "compute": c.compute,
            "startup": c.startup,
            "storage": c.storage,
            "egress": c.egress,
            "interruption_overhead": c.interruption,
        },
        unknown_costs=c.unknown,
        assumptions=tuple(notes),
        fits=est.fits,
        memory_per_gpu_gib=est.memory.total / GIB,
        memory_capacity_gib=capacity_gib,
        bottleneck=est.bottleneck,
        expected_interruptions=c.interruptions,
        source=k.reserved.source if k.reserved is not None else offer.source,
        pareto=pareto,
        cost_usd_low=lo_c,
        cost_usd_high=hi_c,
        hours_low=c.hours - est.hours + lo_h if lo_h != est.hours else c.hours,
        hours_high=c.hours - est.hours + hi_h if hi_h != est.hours else c.hours,
        startup_hours=k.start.hours,
        price_age_days=age,
        price_over_limit=over_limit,
        dtype_fallback=k.verdict.fallback,
        interconnect=None if k.fabric is None else k.fabric.interconnect,
        unit_costs={label: c.total / amount for label, amount in settings.units if amount > 0},
        worth_renting=worth,
        commitment_usd=commitment_usd,
        commitment_months=months,
        break_even_hours_per_month=break_even,
        reserved_kind=reserved_kind,
    )


def _range_costs(
    k: _Kept, lo_h: float, hi_h: float, settings: Settings, data: DataNeeds
) -> tuple[float, float]:
    price_all, spot_rate, commit = k.run_args
    if lo_h == k.est.hours and hi_h == k.est.hours:
        return k.costed.total, k.costed.total
    rates = rates_for(k.offer.provider)
    list_rates = region_has_list_rates(k.offer.provider, k.offer.region)

    def total(hours: float) -> float:
        return _cost(
            price_all,
            nodes=k.nodes,
            run_hours=hours,
            start_hours=k.start.hours,
            rates=rates,
            list_rates=list_rates,
            spot_rate=spot_rate,
            data=data,
            settings=settings,
            gpu_only_price=k.offer.gpu_only_price,
            commitment_usd=commit,
        ).total

    return min(total(lo_h), k.costed.total), max(total(hi_h), k.costed.total)


class OptionList(Sequence[Option]):
    """The ranked options, each built on first access (a plan may hold thousands; most are never shown)."""

    def __init__(self, order: list[int], build: Callable[[int], Option]) -> None:
        self._order = order
        self._build = build
        self._built: dict[int, Option] = {}

    def __len__(self) -> int:
        return len(self._order)

    def _get(self, rank: int) -> Option:
        found = self._built.get(rank)
        if found is None:
            found = self._built[rank] = self._build(self._order[rank])
        return found

    @overload
    def __getitem__(self, index: int) -> Option: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Option, ...]: ...
    def __getitem__(self, index: int | slice) -> Option | tuple[Option, ...]:
        if isinstance(index, slice):
            return tuple(self._get(r) for r in range(*index.indices(len(self._order))))
        if index < 0:
            index += len(self._order)
        if not 0 <= index < len(self._order):
            raise IndexError(index)
        return self._get(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable cache inside; compare by content only


__all__ = ["Estimator", "NetworkLookup", "ReservedLookup", "Runnable", "SpotLookup", "billed_hours", "plan"]
