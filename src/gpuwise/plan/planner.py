"""The planner: every offer × node count × pricing model, costed, filtered, ranked, Pareto-marked.

`plan()` takes data in and returns data out: the offers, an estimator callable (cached here by
(gpu, count, nodes): estimates do not depend on the provider), the constraints, the run's data needs and
settings (including "today", for stale prices). It never reads files, the clock or the environment.

Every configuration looked at is either an option or rejected for exactly one reason (the first that
fails, in `models.REASONS` order), so ``len(options) + sum(rejected.values()) == considered``. For the
"nothing qualifies" answer, configurations that break exactly one relaxable constraint are tallied per
constraint, with the budget or deadline that would admit them (plan/relax.py).

Every option pays for its start-up (plan/startup.py) and must run the workload's dtype (plan/runnable.py:
rejected as `dtype`, or costed with a stated fp16 fallback); several nodes only on a shared fabric
(`no_fabric` otherwise). Reservations join only when the settings carry a commitment, costed as the whole
commitment. The three headline picks (plan/picks.py) are chosen over every qualifying option.

The phases: `Scope` (plan/scope.py) turns the constraints into fast checks, `_Pass` walks offers × nodes
× pricings (checks first, then the estimate, then `costing.cost`), `_rank` orders what qualifies and
marks the picks, and options (plan/options.py) are built only when read. The inner loop works on plain
floats and tuples.
Must not import pydantic, plotly or anything that does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING, NamedTuple

from gpuwise.catalog.models import Offer
from gpuwise.estimate.models import Estimate
from gpuwise.locale import N_, _, ngettext
from gpuwise.plan import runnable as run_rules
from gpuwise.plan.costing import cost
from gpuwise.plan.interruption import InterruptionRate, assumed_rate, model_note
from gpuwise.plan.models import (
    FACTS,
    OBJECTIVES,
    REASONS,
    RELAXABLE,
    Constraints,
    DataNeeds,
    Option,
    PlanResult,
    Relaxation,
    Settings,
)
from gpuwise.plan.options import Kept, NoteCache, OptionList, build_option
from gpuwise.plan.picks import choose_picks, pareto_flags, worth_renting
from gpuwise.plan.rates import ProviderRates, rates_for, region_has_list_rates
from gpuwise.plan.relax import RelaxTally, latency_fails, sorted_relaxations
from gpuwise.plan.scope import Scope
from gpuwise.plan.startup import Startup, startup_hours, startup_rates

if TYPE_CHECKING:
    from gpuwise.catalog.reserved import ReservedRate

Estimator = Callable[[str, int, int], Estimate | None]
# (provider, instance_type) -> one node's network bandwidth in Gb/s, where the catalog knows it. With it, a
# multi-node option's estimate is called with that bandwidth as a fourth argument.
NetworkLookup = Callable[[str, str], float | None]
SpotLookup = Callable[[Offer], InterruptionRate | None]
Runnable = Callable[[str], run_rules.Verdict]  # canonical GPU -> can it run the workload's dtype
ReservedLookup = Callable[[Offer], "ReservedRate | None"]
EstimateCache = dict[tuple[str, int, int, float | None], Estimate | None]

_RELAXABLE = frozenset(RELAXABLE)
_FACTS = frozenset(FACTS)
AVAILABILITY_NOTE = N_(
    "Availability is not known: a listed offer may have no capacity (or no quota for you) when you launch."
)
RESERVED_NOTE = N_(
    "Reserved/committed prices are shown only with [constraints] commitment_months or --utilization "
    "(AWS 1-year no-upfront reservations; no other provider's commitment price could be verified)."
)
WHAT_IF_MAX_NODES = 4  # when nothing qualifies, look this far for "raising max_nodes would allow …"


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
    if settings.objective not in OBJECTIVES:
        raise ValueError(f"objective must be 'cost', 'time' or 'balanced', not {settings.objective!r}")
    lookups = _Lookups(estimator, spot_lookup, runnable, reserved_lookup, network_lookup)
    scan = _Pass(Scope.of(constraints, settings), data, settings, lookups, est_cache={})
    offers_seen = tuple(offers)
    for offer in offers_seen:
        scan.add(offer)
    options, picks, passed_over = _rank(scan.kept, data=data, settings=settings)
    relaxations = scan.relax.results(constraints)
    if not options and not settings.single_gpu_only and constraints.max_nodes < WHAT_IF_MAX_NODES:
        relaxations = _more_nodes(offers_seen, scan, lookups, relaxations)
    final_sources = sources if sources is not None else scan.seen_sources
    return PlanResult(
        options=options,
        considered=scan.considered,
        rejected={r: scan.rejected[r] for r in REASONS if r in scan.rejected},
        relaxations=relaxations,
        sources=dict(sorted(final_sources.items())),
        assumptions=_assumptions(constraints, data, settings, scan.scope.commitment),
        objective=settings.objective,
        undated_sources=frozenset(final_sources) - scan.dated_providers,
        picks=picks,
        passed_over=passed_over,
        blocked=scan.blocked,
        dtype_why=scan.dtype_why,
        stale_after_days=settings.stale_after_days,
        today=settings.today,
        hours_span=_hours_span(scan.kept),
    )


def _hours_span(kept: list[Kept]) -> tuple[float, float] | None:
    hours = [k.costed.hours for k in kept]
    return (min(hours), max(hours)) if hours else None


class _Lookups(NamedTuple):
    """The callables `plan` is given: the estimator and what the catalog knows about an offer."""

    estimator: Estimator
    spot: SpotLookup | None
    runnable: Runnable | None
    reserved: ReservedLookup | None
    network: NetworkLookup | None


class _OfferCase(NamedTuple):
    """One offer with what its configurations share: exchange rate, provider rates, fabric, reservation."""

    offer: Offer
    rate_to_usd: float
    rates: ProviderRates
    list_rates: bool
    fabric: run_rules.Fabric | None
    reservation: ReservedRate | None


class _Pass:
    """One walk over offers × node counts × pricings: what qualifies (`kept`), and why the rest did not
    (`rejected`, `blocked`, `dtype_why`, `relax`), with the caches that keep the walk cheap."""

    def __init__(
        self,
        scope: Scope,
        data: DataNeeds,
        settings: Settings,
        lookups: _Lookups,
        *,
        est_cache: EstimateCache,
    ) -> None:
        self.scope = scope
        self.data = data
        self.settings = settings
        self.lookups = lookups
        self.est_cache = est_cache  # by (gpu, count, nodes, network): estimates do not depend on the offer
        self._rate_cache: dict[tuple[str, str, str], InterruptionRate] = {}
        self._assumed_cache: dict[str, InterruptionRate] = {}  # provider -> its assumed rate
        self._verdict_cache: dict[str, run_rules.Verdict] = {}
        self._start_cache: dict[str, Startup] = {}
        self.considered = 0
        self.rejected: dict[str, int] = {}
        self.blocked: dict[tuple[str, str], int] = {}
        self.dtype_why: dict[str, str] = {}
        self.relax = RelaxTally()
        self.kept: list[Kept] = []
        self.seen_sources: dict[str, date] = {}  # provider -> newest price date
        self.dated_providers: set[str] = set()

    def add(self, offer: Offer) -> None:
        """Look at every configuration of one offer: the checks that need no estimate here, in
        `models.REASONS` order; what passes them is estimated (once per node count) and costed."""
        self._note_date(offer)
        scope = self.scope
        reservation = None
        if scope.commitment is not None and self.lookups.reserved is not None:
            reservation = self.lookups.reserved(offer)
        prices = _prices(offer, reservation)
        if not prices:
            self.considered += scope.max_nodes
            self.rejected["no_price"] = self.rejected.get("no_price", 0) + scope.max_nodes
            return
        static, rate_to_usd = scope.offer_fails(offer, self.settings.exchange_rates)
        verdict = self._verdict(offer.gpu)
        case = _OfferCase(
            offer,
            rate_to_usd,
            rates_for(offer.provider),
            region_has_list_rates(offer.provider, offer.region),
            run_rules.fabric_for(offer.provider, offer.instance_type) if scope.max_nodes > 1 else None,
            reservation,
        )
        pricings, interruptible = scope.pricings, scope.constraints.interruptible
        single = self.settings.single_gpu_only
        for nodes in range(1, scope.max_nodes + 1):
            node_fails = scope.node_fails(static, offer, nodes, case.fabric, single)
            est: Estimate | None = None
            est_fail: str | None = None  # what the estimate alone rules out, the same for every pricing
            slow: tuple[str, ...] = ()  # the latency targets the estimate misses
            estimated = False
            for pricing, price in prices:
                self.considered += 1
                fails = node_fails  # copied only when a reason joins (most configurations add none)
                if pricings is not None and pricing not in pricings:
                    fails = [*fails, "pricing"]
                if pricing == "spot" and not interruptible:
                    fails = [*fails, "spot_not_allowed"]
                if not verdict.runs:
                    fails = [*fails, "dtype"]
                # Stop early once the outcome is settled: a fact about the offer, or two broken constraints.
                if len(fails) >= 2 or (fails and fails[0] not in _RELAXABLE):
                    self._reject(fails, offer.gpu)
                    continue
                if not estimated:
                    est, estimated = self._estimate(offer, nodes), True
                    est_fail = _estimate_fail(est, self.settings.service_hours)
                    slow = latency_fails(_latency_pair(est), scope.constraints)
                if est_fail is not None or est is None:
                    self._reject([*fails, est_fail or "no_estimate"], offer.gpu)
                    continue
                if slow:  # a serving latency target missed: relaxable, like a budget
                    fails = [*fails, *slow]
                    if len(fails) >= 2:
                        self._reject(fails, offer.gpu)
                        continue
                self._configuration(
                    case, nodes, pricing=pricing, price=price, fails=list(fails), est=est, verdict=verdict
                )

    def _note_date(self, offer: Offer) -> None:
        day = offer.price_as_of
        if offer.spot_price_as_of is not None and offer.spot_price_as_of > day:
            day = offer.spot_price_as_of
        if day > self.seen_sources.get(offer.provider, date.min):
            self.seen_sources[offer.provider] = day
        if offer.price_date_exact:
            self.dated_providers.add(offer.provider)

    def _reject(
        self,
        fails: list[str],
        gpu: str,
        cost: float | None = None,
        hours: float | None = None,
        est: Estimate | None = None,
    ) -> None:
        """Count the configuration under its first failing reason; tally it for the "nothing qualifies"
        answer when that is its only reason (with the latency a missed latency target would admit)."""
        self.rejected[fails[0]] = self.rejected.get(fails[0], 0) + 1
        if len(fails) == 1:
            if fails[0] in _RELAXABLE:
                pair = _latency_pair(est)
                value = (
                    None if pair is None else {"over_latency": pair[0], "over_ttft": pair[1]}.get(fails[0])
                )
                self.relax.add(fails[0], cost, hours, value)
            if fails[0] in _FACTS:
                self.blocked[(fails[0], gpu)] = self.blocked.get((fails[0], gpu), 0) + 1

    def _configuration(
        self,
        case: _OfferCase,
        nodes: int,
        *,
        pricing: str,
        price: float,
        fails: list[str],
        est: Estimate,
        verdict: run_rules.Verdict,
    ) -> None:
        """Cost one configuration whose estimate qualifies; keep it or count why not. `fails` holds at
        most one relaxable reason found so far."""
        offer, scope, constraints = case.offer, self.scope, self.scope.constraints
        start = self._startup(offer.provider)
        spot = self._spot_rate(offer) if pricing == "spot" else None
        commit_usd: float | None = None
        reservation = case.reservation if pricing == "reserved" else None
        if reservation is not None and scope.commitment is not None:
            terms = math.ceil(scope.commitment / reservation.term_months - 1e-9)
            commit_usd = reservation.term_cost_usd * nodes * terms
            if start.hours + est.hours > terms * reservation.term_hours:
                fails.append("over_commitment")
        run_args = (price * case.rate_to_usd * nodes, None if spot is None else spot.per_hour, commit_usd)
        costed = cost(
            run_args[0],
            nodes=nodes,
            run_hours=est.hours,
            start_hours=start.hours,
            rates=case.rates,
            list_rates=case.list_rates,
            spot_rate=run_args[1],
            data=self.data,
            settings=self.settings,
            gpu_only_price=offer.gpu_only_price,
            commitment_usd=commit_usd,
        )
        if constraints.deadline_hours is not None and costed.hours > constraints.deadline_hours:
            fails.append("over_deadline")
        if constraints.budget_usd is not None and costed.total > constraints.budget_usd:
            fails.append("over_budget")
        if fails:
            self._reject(fails, offer.gpu, costed.total, costed.hours, est)
            return
        fabric = case.fabric if nodes > 1 else None
        self.kept.append(
            Kept(
                offer,
                nodes,
                pricing,
                case.rate_to_usd,
                est,
                costed,
                spot,
                start,
                verdict,
                fabric,
                reservation,
                run_args,
            )
        )

    def _verdict(self, gpu: str) -> run_rules.Verdict:
        """Whether the GPU runs the workload's dtype (and why not, kept for the nothing-qualifies answer)."""
        runnable = self.lookups.runnable
        if runnable is None:
            return run_rules.OK
        verdict = self._verdict_cache.get(gpu)
        if verdict is None:
            verdict = self._verdict_cache[gpu] = runnable(gpu)
        if not verdict.runs:
            self.dtype_why[gpu] = verdict.note or "cannot run the workload's dtype"
        return verdict

    def _estimate(self, offer: Offer, nodes: int) -> Estimate | None:
        """The estimate for `nodes` nodes of the offer, once per (gpu, count, nodes, network) shape."""
        network = self.lookups.network
        net = network(offer.provider, offer.instance_type) if network and nodes > 1 else None
        key = (offer.gpu, int(offer.gpus) * nodes, nodes, net)
        if key in self.est_cache:
            return self.est_cache[key]
        estimator = self.lookups.estimator
        # with a network figure: the instance's own inter-node bandwidth (EFA, InfiniBand, "25 Gigabit")
        est = (
            estimator(offer.gpu, key[1], nodes) if net is None else estimator(offer.gpu, key[1], nodes, net)  # type: ignore[call-arg]
        )
        self.est_cache[key] = est
        return est

    def _startup(self, provider: str) -> Startup:
        start = self._start_cache.get(provider)
        if start is None:
            data = self.data
            start = self._start_cache[provider] = startup_hours(
                startup_rates(provider, self.settings.startup_overrides),
                dataset_gb=data.dataset_gb,
                model_gb=data.model_download_gb,
                upload_gb=data.final_upload_gb,
            )
        return start

    def _spot_rate(self, offer: Offer) -> InterruptionRate:
        """The offer's preemption rate: the user's override, else the lookup's, else the assumed one."""
        key = (offer.provider, offer.instance_type, offer.region)
        found = self._rate_cache.get(key)
        if found is not None:
            return found
        overrides = self.settings.spot_rate_overrides
        override = overrides.get(offer.provider, overrides.get("*"))
        if override is not None:
            rate = InterruptionRate(
                per_hour=override, source=f"{override:g} preemptions/h given by the user", assumed=True
            )
        else:
            lookup = self.lookups.spot
            looked = lookup(offer) if lookup is not None else None
            rate = looked if looked is not None else self._assumed_rate(offer.provider)
        self._rate_cache[key] = rate
        return rate

    def _assumed_rate(self, provider: str) -> InterruptionRate:
        """The provider's assumed rate, its sentence formatted once per plan rather than once per offer."""
        found = self._assumed_cache.get(provider)
        if found is None:
            found = self._assumed_cache[provider] = assumed_rate(provider)
        return found


def _estimate_fail(est: Estimate | None, service_hours: float | None) -> str | None:
    """The reason an estimate rules a configuration out (no estimate, does not fit, too slow for the
    target rate), or None."""
    if est is None or not (0 < est.hours < math.inf):
        return "no_estimate"
    if not est.fits:
        return "does_not_fit"
    if service_hours is not None and est.hours > service_hours * (1 + 1e-9):
        return "below_target_rate"
    return None


def _latency_pair(est: Estimate | None) -> tuple[float, float] | None:
    """A serving estimate's (request_s, ttft_s) at the workload's concurrency; None for other workloads."""
    lat = None if est is None else est.latency
    return None if lat is None else (lat.request_s, lat.ttft_s)


def _prices(offer: Offer, reservation: ReservedRate | None) -> list[tuple[str, float]]:
    """(pricing, USD-or-local per hour per node) for each way the offer can be bought."""
    prices: list[tuple[str, float]] = []
    if offer.price_usd_per_hour is not None:
        prices.append(("on_demand", offer.price_usd_per_hour))
    if offer.spot_price_usd_per_hour is not None:
        prices.append(("spot", offer.spot_price_usd_per_hour))
    if reservation is not None:
        prices.append(("reserved", reservation.usd_per_hour))
    return prices


def _rank(
    kept: list[Kept], *, data: DataNeeds, settings: Settings
) -> tuple[OptionList, dict[str, int], tuple[int, int] | None]:
    """Order what qualifies by the objective and choose the picks, on plain numbers; each `Option` (with
    its notes) is built only when read."""
    points = [(k.costed.total, k.costed.hours) for k in kept]
    pareto = pareto_flags(points)
    worth = worth_renting(points)
    note_cache: NoteCache = {}

    def build(i: int) -> Option:
        return build_option(
            kept[i], data=data, settings=settings, note_cache=note_cache, pareto=pareto[i], worth=worth[i]
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
    chosen = choose_picks(points, pareto, worth)
    picks = {name: rank_of[i] for name, i in chosen.as_dict().items() if i is not None}
    passed_over = None
    if chosen.passed_over is not None and chosen.passed_for is not None:
        passed_over = (rank_of[chosen.passed_over], rank_of[chosen.passed_for])
    return OptionList(order, build), picks, passed_over


def _assumptions(
    constraints: Constraints, data: DataNeeds, settings: Settings, commitment: float | None
) -> tuple[str, ...]:
    """The plan-wide assumptions, in the order the answer lists them."""
    assumptions = [*data.assumptions]
    assumptions.append(
        _(
            "spot: each preemption loses half the checkpoint interval ({hours} h) of work plus "
            "{minutes} min to restart (assumed)"
        ).format(hours=f"{data.checkpoint_every_hours:g}", minutes=f"{settings.restart_hours * 60:.0f}")
    )
    if constraints.interruptible:
        assumptions.append(model_note())
    if settings.boot_disk_gb > 0:
        assumptions.append(
            _("boot disk of {gb} GB per node, billed where the provider charges it").format(
                gb=f"{settings.boot_disk_gb:g}"
            )
        )
    assumptions.append(
        _(
            "start-up (boot, set-up, image/dataset/model download, final upload) is billed time: counted in "
            "hours and cost (each option states its figures)"
        )
    )
    if commitment is None:
        assumptions.append(_(RESERVED_NOTE))
    else:
        assumptions.append(
            _(
                "reservations are costed as the whole commitment ({months} months, busy or idle), "
                "never pro-rated"
            ).format(months=f"{commitment:g}")
        )
    assumptions.append(_(AVAILABILITY_NOTE))
    return tuple(assumptions)


def _more_nodes(
    offers: Sequence[Offer], first: _Pass, lookups: _Lookups, relaxations: tuple[Relaxation, ...]
) -> tuple[Relaxation, ...]:
    """What spreading the work over more nodes would give, when nothing qualifies on `max_nodes`.

    A second walk with `max_nodes` raised, without reservations, reusing the first walk's estimates."""
    wider = replace(first.scope.constraints, max_nodes=WHAT_IF_MAX_NODES)
    scan = _Pass(
        Scope.of(wider, first.settings),
        first.data,
        first.settings,
        lookups._replace(reserved=None),
        est_cache=first.est_cache,
    )
    for offer in offers:
        scan.add(offer)
    nodes = sorted(k.nodes for k in scan.kept)
    if not nodes:
        return relaxations
    n = len(nodes)
    text = ngettext(
        "raising max_nodes to {nodes} would allow {count} option",
        "raising max_nodes to {nodes} would allow {count} options",
        n,
    ).format(nodes=nodes[0], count=n)
    if n > 1 and nodes[-1] > nodes[0]:
        text = _("raising max_nodes to {low} would allow some options, to {high} all {count}").format(
            low=nodes[0], high=nodes[-1], count=n
        )
    extra = Relaxation(reason="max_nodes", constraint="max_nodes", options=n, suggestion=text)
    return sorted_relaxations([*relaxations, extra])


__all__ = ["Estimator", "NetworkLookup", "ReservedLookup", "Runnable", "SpotLookup", "plan"]
