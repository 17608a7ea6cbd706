"""The planner: every offer × node count × pricing model, costed, filtered, ranked, Pareto-marked.

`plan()` takes data in and returns data out: the offers, an estimator callable (cached here by
(gpu, count, nodes): estimates do not depend on the provider), the constraints, the run's data needs and
settings (including "today", for stale prices). It never reads files, the clock or the environment.

Every configuration looked at is either an option or rejected for exactly one reason (the first that
fails, in `models.REASONS` order), so ``len(options) + sum(rejected.values()) == considered``. For the
"nothing qualifies" answer, configurations that break exactly one relaxable constraint are tallied per
constraint, with the budget or deadline that would admit them.

The inner loop works on plain floats and tuples; `Option` objects are built only for what qualifies.
Must not import pydantic, plotly or anything that does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from fnmatch import fnmatchcase
from typing import overload

from gpuwise.catalog.models import Offer
from gpuwise.estimate.models import Estimate
from gpuwise.plan.interruption import (
    MODEL_NOTE,
    InterruptionRate,
    assumed_rate,
    interruption_cost,
)
from gpuwise.plan.models import (
    REASONS,
    RELAXABLE,
    Constraints,
    DataNeeds,
    Option,
    PlanResult,
    Relaxation,
    Settings,
)
from gpuwise.plan.rates import (
    HOURS_PER_MONTH,
    ProviderRates,
    rates_for,
    region_has_list_rates,
    unknown_text,
)
from gpuwise.units import GIB

Estimator = Callable[[str, int, int], Estimate | None]
SpotLookup = Callable[[Offer], InterruptionRate | None]

_RELAXABLE = frozenset(RELAXABLE)
CONSTRAINT_KEYS = {  # rejection reason -> the workload key (or option) that sets it
    "currency": "--exchange-rate",
    "provider": "providers",
    "region": "regions",
    "gpu": "gpus",
    "max_gpus": "max_gpus",
    "spot_not_allowed": "interruptible",
    "over_deadline": "deadline_hours",
    "over_budget": "budget_usd",
}
AVAILABILITY_NOTE = (
    "Availability is not known: a listed offer may have no capacity (or no quota for you) when you launch."
)
RESERVED_NOTE = "Reserved/committed prices are not in the catalog: only on-demand and spot are ranked."


def billed_hours(hours: float, rates: ProviderRates) -> float:
    """Hours the provider bills for a run of `hours`: rounded up to its increment, at least its minimum."""
    if rates.billing_increment_s is None:
        return hours
    seconds = hours * 3600.0
    step = rates.billing_increment_s
    billed = math.ceil(seconds / step - 1e-9) * step
    return max(billed, rates.minimum_charge_s or 0.0) / 3600.0


@dataclass(frozen=True)
class _Costed:
    """The numbers of one configuration (no strings: built for every configuration)."""

    price_per_hour: float  # USD, all nodes
    hours: float
    compute: float
    storage: float
    egress: float
    interruption: float
    interruptions: float
    unknown: tuple[str, ...]

    @property
    def total(self) -> float:
        return self.compute + self.storage + self.egress + self.interruption


def _cost(
    price_per_hour: float,
    *,
    nodes: int,
    run_hours: float,
    rates: ProviderRates,
    list_rates: bool,
    spot_rate: float | None,
    data: DataNeeds,
    settings: Settings,
    gpu_only_price: bool,
) -> _Costed:
    lost_hours = 0.0
    interruptions = 0.0
    if spot_rate is not None:
        ic = interruption_cost(run_hours, spot_rate, data.checkpoint_every_hours, settings.restart_hours)
        lost_hours, interruptions = ic.lost_hours, ic.expected_preemptions
    hours = run_hours + lost_hours
    compute = price_per_hour * billed_hours(run_hours, rates)
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
        storage=storage,
        egress=egress,
        interruption=interruption,
        interruptions=interruptions,
        unknown=tuple(unknown),
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


def plan(
    offers: Iterable[Offer],
    estimator: Estimator,
    *,
    constraints: Constraints,
    data: DataNeeds,
    settings: Settings,
    spot_lookup: SpotLookup | None = None,
    sources: dict[str, date] | None = None,
) -> PlanResult:
    """Cost every configuration, reject what breaks a constraint, rank the rest by the objective."""
    if settings.objective not in ("cost", "time"):
        raise ValueError(f"objective must be 'cost' or 'time', not {settings.objective!r}")
    est_cache: dict[tuple[str, int, int], Estimate | None] = {}
    rate_cache: dict[tuple[str, str, str], InterruptionRate] = {}
    rejected: dict[str, int] = {}
    relax = _Relax()
    considered = 0
    kept: list[tuple[Offer, int, str, float, Estimate, _Costed, InterruptionRate | None]] = []

    providers = frozenset(constraints.providers) if constraints.providers is not None else None
    # Region names are compared case-blind: providers spell them "us-east-1", "eastus", "FIN-03".
    region_patterns = None if constraints.regions is None else tuple(p.lower() for p in constraints.regions)
    gpus_allowed = frozenset(constraints.gpus) if constraints.gpus is not None else None
    max_nodes = 1 if settings.single_gpu_only else max(1, constraints.max_nodes)
    fx = settings.exchange_rates
    service_hours = settings.service_hours
    seen_sources: dict[str, date] = {}
    dated_providers: set[str] = set()

    def reject(fails: list[str], cost: float | None = None, hours: float | None = None) -> None:
        rejected[fails[0]] = rejected.get(fails[0], 0) + 1
        if len(fails) == 1 and fails[0] in _RELAXABLE:
            relax.add(fails[0], cost, hours)

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
        per_node = offer.gpus
        fractional = per_node < 1 or per_node != int(per_node)
        if fractional:
            static.append("fractional_gpu")

        rates = rates_for(offer.provider)
        list_rates = region_has_list_rates(offer.provider, offer.region)

        for nodes in range(1, max_nodes + 1):
            node_fails = list(static)
            total_gpus = per_node * nodes
            if settings.single_gpu_only and total_gpus != 1:
                node_fails.append("not_single_gpu")
            if constraints.max_gpus is not None and total_gpus > constraints.max_gpus:
                node_fails.append("max_gpus")
            for pricing, price in prices:
                considered += 1
                fails = list(node_fails)
                if pricing == "spot" and not constraints.interruptible:
                    fails.append("spot_not_allowed")
                # Stop early once the outcome is settled: a fact about the offer, or two broken constraints.
                if len(fails) >= 2 or (fails and fails[0] not in _RELAXABLE):
                    reject(fails)
                    continue
                count = int(per_node) * nodes
                key = (offer.gpu, count, nodes)
                if key in est_cache:
                    est = est_cache[key]
                else:
                    est = est_cache[key] = estimator(offer.gpu, count, nodes)
                if est is None or not (0 < est.hours < math.inf):
                    reject([*fails, "no_estimate"])
                    continue
                if not est.fits:
                    reject([*fails, "does_not_fit"])
                    continue
                if service_hours is not None and est.hours > service_hours * (1 + 1e-9):
                    reject([*fails, "below_target_rate"])
                    continue
                spot: InterruptionRate | None = None
                if pricing == "spot":
                    spot = _spot_rate(offer, settings, spot_lookup, rate_cache)
                costed = _cost(
                    price * rate_to_usd * nodes,
                    nodes=nodes,
                    run_hours=est.hours,
                    rates=rates,
                    list_rates=list_rates,
                    spot_rate=None if spot is None else spot.per_hour,
                    data=data,
                    settings=settings,
                    gpu_only_price=offer.gpu_only_price,
                )
                total = costed.total
                if constraints.deadline_hours is not None and costed.hours > constraints.deadline_hours:
                    fails.append("over_deadline")
                if constraints.budget_usd is not None and total > constraints.budget_usd:
                    fails.append("over_budget")
                if fails:
                    reject(fails, total, costed.hours)
                    continue
                kept.append((offer, nodes, pricing, rate_to_usd, est, costed, spot))

    # Rank and mark the front on plain numbers; `Option` objects (with their notes) are built only when
    # read: `--json` reads the top N, the HTML chart reads all.
    pareto = _pareto_flags([(k[5].total, k[5].hours) for k in kept])
    note_cache: dict[tuple[str, bool], tuple[str, ...]] = {}

    def build(i: int) -> Option:
        o, n, p, fx_rate, e, c, s = kept[i]
        return _option(
            o,
            nodes=n,
            pricing=p,
            rate_to_usd=fx_rate,
            est=e,
            c=c,
            spot=s,
            data=data,
            settings=settings,
            note_cache=note_cache,
            pareto=pareto[i],
        )

    def order_key(i: int) -> tuple[float, float, str, str, str, str]:
        o, _, p, _, _, c, _ = kept[i]
        first, second = (c.hours, c.total) if settings.objective == "time" else (c.total, c.hours)
        return (first, second, o.provider, o.instance_type, o.region, p)

    order = sorted(range(len(kept)), key=order_key)
    options = OptionList(order, build)

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
    assumptions += [RESERVED_NOTE, AVAILABILITY_NOTE]
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
) -> tuple[Relaxation, ...]:
    """What spreading the work over more nodes would give, when nothing qualifies on `max_nodes`."""
    wider = replace(constraints, max_nodes=WHAT_IF_MAX_NODES)
    found = plan(offers, estimator, constraints=wider, data=data, settings=settings, spot_lookup=spot_lookup)
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
    offer: Offer,
    *,
    nodes: int,
    pricing: str,
    rate_to_usd: float,
    est: Estimate,
    c: _Costed,
    spot: InterruptionRate | None,
    data: DataNeeds,
    settings: Settings,
    note_cache: dict[tuple[str, bool], tuple[str, ...]],
    pareto: bool,
) -> Option:
    as_of = offer.spot_price_as_of if (pricing == "spot" and offer.spot_price_as_of) else offer.price_as_of
    stale = (not offer.price_date_exact) or (settings.today - as_of).days > settings.stale_after_days
    list_rates = region_has_list_rates(offer.provider, offer.region)
    # The provider's notes are the same for all its options: format them once per plan.
    static = note_cache.get((offer.provider, list_rates))
    if static is None:
        static = note_cache[(offer.provider, list_rates)] = _provider_notes(offer.provider, list_rates, data)
    notes = list(static)
    if c.unknown:
        notes.append("unknown, counted as $0: " + ", ".join(c.unknown))
    if spot is not None:
        notes.append(f"spot interruptions: {spot.source}; expected {c.interruptions:.2f} over the run")
    if offer.currency != "USD":
        notes.append(f"price converted from {offer.currency} at {rate_to_usd:g} USD/{offer.currency} (given)")
    if not offer.price_date_exact:
        notes.append(f"price date unknown (collected {as_of})")
    notes.extend(offer.notes)
    notes.extend(est.assumptions)
    capacity_gib = est.memory_capacity_bytes / GIB
    return Option(
        provider=offer.provider,
        instance_type=offer.instance_type,
        region=offer.region,
        zone=offer.zone,
        gpu=offer.gpu,
        gpus_per_node=int(offer.gpus),
        nodes=nodes,
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
        source=offer.source,
        pareto=pareto,
    )


def _pareto_flags(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For (cost, hours) points: True where no other point is both cheaper and faster (ties stay on)."""
    order = sorted(range(len(points)), key=points.__getitem__)
    flags = [False] * len(points)
    best_hours = math.inf
    prev_key: tuple[float, float] | None = None
    prev_flag = False
    for i in order:
        key = points[i]
        flag = prev_flag if key == prev_key else key[1] < best_hours
        best_hours = min(best_hours, key[1])
        prev_key, prev_flag = key, flag
        flags[i] = flag
    return flags


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


__all__ = ["Estimator", "SpotLookup", "billed_hours", "plan"]
