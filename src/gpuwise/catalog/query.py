"""Queries over a loaded offer catalog: which offers match, cheapest first, and how old their prices are.

Pure: the caller passes the catalog and today's date.
"""

from __future__ import annotations

import fnmatch
from datetime import date

from gpuwise.catalog.models import Catalog, Offer
from gpuwise.catalog.specs import alias_key, canonical_gpu_name, load_gpu_specs
from gpuwise.errors import NotFoundError
from gpuwise.locale import _

STALE_AFTER_DAYS = 90


def offer_price(offer: Offer, *, spot: bool = False) -> float | None:
    """The price a query sorts by: spot when asked for, else on-demand."""
    return offer.spot_price_usd_per_hour if spot else offer.price_usd_per_hour


def price_age_days(offer: Offer, today: date) -> int:
    return (today - offer.price_as_of).days


def date_marks(exact: bool, over_limit: bool) -> str:
    """The marks after a price date in plan's and catalog's tables: '?' the source gives no date (the
    collection date is shown), '!' over the stale limit."""
    return ("" if exact else "?") + ("!" if over_limit else "")


def is_stale(offer: Offer, today: date, *, max_age_days: int = STALE_AFTER_DAYS) -> bool:
    """An undated price (collection date only) counts as stale, like one older than ``max_age_days``."""
    return (not offer.price_date_exact) or price_age_days(offer, today) > max_age_days


def resolve_offer_gpu(catalog: Catalog, name: str) -> str:
    """Canonical GPU name for a query: the spec table's, or a name only the offers use (RTX4070)."""
    canonical = canonical_gpu_name(name)
    if canonical is not None:
        return canonical
    key = alias_key(name)
    for gpu in catalog.gpu_names():
        if alias_key(gpu) == key:
            return gpu
    raise NotFoundError(
        "GPU",
        name,
        [*load_gpu_specs(), *catalog.gpu_names()],
        fix=_(
            "use a name from `gpuwise catalog gpus`, or list the GPUs with offers: `gpuwise catalog offers`"
        ),
    )


def query_offers(
    catalog: Catalog,
    *,
    gpu: str | None = None,
    count: int | None = None,
    provider: str | None = None,
    region: str | None = None,
    spot: bool = False,
) -> list[Offer]:
    """Offers matching every given filter, cheapest first (by spot price with ``spot``).

    ``gpu`` matches the canonical GPU exactly (an ``H100-PCIe`` offer is not an ``H100``); ``count`` means
    exactly that many GPUs per instance; ``region`` is a region or zone name, or a glob (``us-*``),
    case-insensitive; ``spot`` keeps offers that have a spot price. USD offers come before other currencies
    (never compared), offers without the sorted price last.
    """
    # `is not None`: an empty name is an unknown one, never a filter that silently matches everything
    gpu_name = resolve_offer_gpu(catalog, gpu) if gpu is not None else None
    prov = provider.strip().lower() if provider is not None else None
    if prov is not None and prov not in catalog.stats.offers_by_provider:
        raise NotFoundError(
            _("provider"),
            prov,
            catalog.providers(),
            fix=_(
                "use a provider id from `gpuwise catalog stats` (lowercase, as the catalog files are named)"
            ),
        )
    pattern = region.strip().lower() if region is not None else None
    is_glob = pattern is not None and any(ch in pattern for ch in "*?[")
    result: list[Offer] = []
    for o in catalog.offers:
        if gpu_name is not None and o.gpu != gpu_name:
            continue
        if count is not None and o.gpus != count:
            continue
        if prov is not None and o.provider != prov:
            continue
        if pattern is not None:
            places = [p for p in (o.region.lower(), (o.zone or "").lower()) if p]
            if is_glob:
                if not any(fnmatch.fnmatchcase(p, pattern) for p in places):
                    continue
            elif pattern not in places:
                continue
        if spot and o.spot_price_usd_per_hour is None:
            continue
        result.append(o)

    def sort_key(o: Offer) -> tuple[bool, bool, float, str, str, str]:
        price = offer_price(o, spot=spot)
        return (
            o.currency != "USD",
            price is None,
            price if price is not None else 0.0,
            o.provider,
            o.instance_type,
            o.region,
        )

    result.sort(key=sort_key)
    return result
