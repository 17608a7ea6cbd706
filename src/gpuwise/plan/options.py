"""From a qualifying configuration to the `Option` a user reads: its dates, notes, ranges and terms.

The planner keeps each qualifying configuration as a `Kept` (plain numbers); an `Option`, with its
sentences, is built only when read (`OptionList`): `--json` and the table read the top N, the HTML chart
reads all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, overload

from gpuwise.catalog.models import Offer
from gpuwise.estimate.models import Estimate
from gpuwise.locale import _, formats, ngettext
from gpuwise.plan import runnable as run_rules
from gpuwise.plan.costing import Costed, cost, hours_range
from gpuwise.plan.interruption import InterruptionRate
from gpuwise.plan.models import DataNeeds, Option, Settings
from gpuwise.plan.rates import HOURS_PER_MONTH, rates_for, region_has_list_rates, unknown_text
from gpuwise.plan.startup import Startup
from gpuwise.units import GIB

if TYPE_CHECKING:
    from gpuwise.catalog.reserved import ReservedRate

NoteCache = dict[tuple[str, bool], tuple[str, ...]]  # (provider, list rates) -> its notes, once per plan


class Kept(NamedTuple):
    """One qualifying configuration, before its `Option` (with notes) is built on demand."""

    offer: Offer
    nodes: int
    pricing: str
    rate_to_usd: float
    est: Estimate
    costed: Costed
    spot: InterruptionRate | None
    start: Startup
    verdict: run_rules.Verdict
    fabric: run_rules.Fabric | None
    reserved: ReservedRate | None
    run_args: tuple[float, float | None, float | None]  # (price per hour all nodes, spot rate, commitment)


class _Reserved(NamedTuple):
    """A reservation's terms as an Option states them (all None for on-demand and spot)."""

    commitment_usd: float | None = None
    months: float | None = None
    break_even: float | None = None
    kind: str | None = None


def build_option(
    k: Kept, *, data: DataNeeds, settings: Settings, note_cache: NoteCache, pareto: bool, worth: bool
) -> Option:
    """The Option of one kept configuration, with every note that explains its figures."""
    offer, c, est = k.offer, k.costed, k.est
    as_of = offer.spot_price_as_of if (k.pricing == "spot" and offer.spot_price_as_of) else offer.price_as_of
    if k.reserved is not None:
        as_of = k.reserved.as_of
    age = (settings.today - as_of).days
    over_limit = age > settings.stale_after_days
    notes = _notes(k, data, settings, note_cache, age=age, as_of=formats.format_date(as_of))
    terms = _Reserved()
    if k.reserved is not None:
        terms = _reserved_terms(k, k.reserved, settings, notes)
    notes.extend(offer.notes)
    notes.extend(est.assumptions)
    # the cost range from the estimate's time range (a reservation costs the same whatever the hours)
    lo_h, hi_h = hours_range(est)
    lo_c, hi_c = _range_costs(k, lo_h, hi_h, settings, data)
    return Option(
        provider=offer.provider,
        instance_type=offer.instance_type,
        region=offer.region,
        zone=offer.zone,
        gpu=offer.gpu,
        gpus_per_node=int(offer.gpus),
        nodes=k.nodes,
        pricing=k.pricing,
        price_usd_per_hour=c.price_per_hour,
        price_as_of=as_of,
        price_date_exact=offer.price_date_exact,
        price_stale=(not offer.price_date_exact) or over_limit,
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
        memory_capacity_gib=est.memory_capacity_bytes / GIB,
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
        commitment_usd=terms.commitment_usd,
        commitment_months=terms.months,
        break_even_hours_per_month=terms.break_even,
        reserved_kind=terms.kind,
        latency=None
        if est.latency is None
        else {"ttft_s": est.latency.ttft_s, "tpot_s": est.latency.tpot_s, "request_s": est.latency.request_s},
    )


def _notes(
    k: Kept, data: DataNeeds, settings: Settings, note_cache: NoteCache, *, age: int, as_of: str
) -> list[str]:
    """The option's own notes, in the order they are read: fallback, fabric, start-up, provider, costs,
    spot, currency, price date."""
    offer, c = k.offer, k.costed
    list_rates = region_has_list_rates(offer.provider, offer.region)
    # The provider's notes are the same for all its options: format them once per plan.
    static = note_cache.get((offer.provider, list_rates))
    if static is None:
        static = note_cache[(offer.provider, list_rates)] = provider_notes(offer.provider, list_rates, data)
    notes: list[str] = []
    if k.verdict.fallback is not None and k.verdict.note:
        notes.append(_("dtype fallback: {note}").format(note=k.verdict.note))
    if k.fabric is not None:
        notes.append(
            _("{count} nodes over {interconnect} ({source})").format(
                count=k.nodes, interconnect=_(k.fabric.interconnect), source=k.fabric.source
            )
        )
    notes.append(k.start.text)
    notes.extend(static)
    if c.unknown:
        from gpuwise.plan.output import cost_part_word  # the words --pick shows for the parts

        notes.append(
            _("unknown, counted as zero: {parts}").format(
                parts=", ".join(cost_part_word(p) for p in c.unknown)
            )
        )
    if k.spot is not None:
        notes.append(
            _("spot interruptions: {source}; expected {count} over the run").format(
                source=k.spot.source, count=f"{c.interruptions:.2f}"
            )
        )
    if offer.currency != "USD":
        notes.append(
            _("price converted from {currency} at {rate} USD/{currency} ({note})").format(
                currency=offer.currency,
                rate=f"{k.rate_to_usd:g}",
                note=settings.exchange_rate_notes.get(offer.currency, _("given")),
            )
        )
    over_limit = age > settings.stale_after_days
    if not offer.price_date_exact:
        if over_limit:
            notes.append(
                _("price date unknown (collected {day}, {age} days ago, over the {limit}-day limit)").format(
                    day=as_of, age=age, limit=settings.stale_after_days
                )
            )
        else:
            notes.append(_("price date unknown (collected {day}, {age} days ago)").format(day=as_of, age=age))
    elif over_limit:
        notes.append(
            _("price {age} days old (over the {limit}-day limit)").format(
                age=age, limit=settings.stale_after_days
            )
        )
    return notes


def _reserved_terms(k: Kept, r: ReservedRate, settings: Settings, notes: list[str]) -> _Reserved:
    """A reservation's commitment, term and break-even, with the notes that state them (appended)."""
    offer = k.offer
    commitment_usd = k.run_args[2]
    months = settings.commitment_months or float(r.term_months)
    break_even = None
    if offer.price_usd_per_hour:
        break_even = r.usd_per_hour * HOURS_PER_MONTH / offer.price_usd_per_hour
    notes.append(
        ngettext(
            "reserved: {kind} at {price}/h per instance, billed every hour of the term; "
            "costed as the whole commitment ({months} months × {count} instance) ({source}, {as_of})",
            "reserved: {kind} at {price}/h per instance, billed every hour of the term; "
            "costed as the whole commitment ({months} months × {count} instances) ({source}, {as_of})",
            k.nodes,
        ).format(
            kind=r.kind,
            price=f"${r.usd_per_hour:,.4g}",
            months=f"{months:g}",
            count=k.nodes,
            source=r.source,
            as_of=r.as_of,
        )
    )
    if break_even is not None:
        notes.append(
            _(
                "a {years}-year reservation beats on-demand above {hours} busy hours a month (of {month})"
            ).format(years=r.term_months // 12, hours=f"{break_even:,.0f}", month=f"{HOURS_PER_MONTH:g}")
        )
    if settings.utilization is not None and commitment_usd is not None:
        busy = settings.utilization * (months * HOURS_PER_MONTH)
        notes.append(
            _("at {share} utilization: {busy} per busy instance-hour, against {price} on demand").format(
                share=f"{settings.utilization:.0%}",
                busy=f"${commitment_usd / busy / k.nodes:,.4g}",
                price=f"${offer.price_usd_per_hour or 0:,.4g}",
            )
        )
    return _Reserved(commitment_usd=commitment_usd, months=months, break_even=break_even, kind=r.kind)


def provider_notes(provider: str, list_rates: bool, data: DataNeeds) -> tuple[str, ...]:
    """What every option of `provider` states: billing, storage and egress rates, or why they are unknown."""
    rates = rates_for(provider)
    notes = [rates.billing_text()]
    if rates.storage_usd_per_gb_month is not None and list_rates:
        notes.append(
            _("storage: {kind} at {price}/GB-month ({source}, {as_of}; {note})").format(
                kind=rates.storage_kind,
                price=f"${rates.storage_usd_per_gb_month:.4g}",
                source=rates.source,
                as_of=rates.as_of,
                note=_(rates.note) if rates.note else _("list price"),
            )
        )
    if rates.egress_usd_per_gb is not None and list_rates and data.egress_gb > 0:
        notes.append(_("egress: {price}/GB to the internet").format(price=f"${rates.egress_usd_per_gb:.4g}"))
    if not list_rates:
        notes.append(
            _("{provider} China regions: storage and egress rates are not in gpuwise's (USD) table").format(
                provider=provider
            )
        )
    else:
        why = unknown_text(rates)
        if why is not None:
            notes.append(why)
    return tuple(notes)


def _range_costs(
    k: Kept, lo_h: float, hi_h: float, settings: Settings, data: DataNeeds
) -> tuple[float, float]:
    price_all, spot_rate, commit = k.run_args
    if lo_h == k.est.hours and hi_h == k.est.hours:
        return k.costed.total, k.costed.total
    rates = rates_for(k.offer.provider)
    list_rates = region_has_list_rates(k.offer.provider, k.offer.region)

    def total(hours: float) -> float:
        return cost(
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
