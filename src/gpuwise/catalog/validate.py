"""Filter values a user types (--provider, --region, a currency in --exchange-rate, a provider in
--spot-interruptions-per-hour) checked against the catalog: an unknown one is bad input (exit 2, with
close matches), never a filter that silently matches nothing or a rate that silently applies to nothing.

A value the catalog knows but that matches no offer for the other filters is not an error (the command
says "no offers match"); only a value no offer in the whole catalog has is. Pure: catalog in, raise or
return. Must not import the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuwise.catalog.models import Catalog
from gpuwise.errors import NotFoundError
from gpuwise.locale import _

_GLOB_CHARS = "*?["


def check_providers(catalog: Catalog, names: Iterable[str], *, option: str = "--provider") -> None:
    """Every name (case-insensitive) is a provider id with offers in the catalog."""
    known = catalog.providers()
    for name in names:
        if name.strip().lower() not in known:
            raise NotFoundError(
                _("provider"),
                name,
                known,
                why=_("{option} names a provider the catalog has no offers from").format(option=option),
                fix=_("use one of: {names}").format(names=", ".join(known)),
            )


def check_currencies(catalog: Catalog, codes: Iterable[str], *, option: str = "--exchange-rate") -> None:
    """Every code (case-insensitive) is a currency some offer is priced in (USD always counts)."""
    known = sorted({o.currency.upper() for o in catalog.offers} | {"USD"})
    others = [c for c in known if c != "USD"]
    for code in codes:
        if code.strip().upper() not in known:
            raise NotFoundError(
                _("currency"),
                code,
                known,
                why=_("{option} gives a rate for a currency no offer in the catalog is priced in").format(
                    option=option
                ),
                fix=(
                    _("give rates only for {codes} (prices in USD need none)").format(codes=", ".join(others))
                    if others
                    else _("drop it: every offer is priced in USD")
                ),
            )


def check_region(catalog: Catalog, region: str | None, *, option: str = "--region") -> None:
    """An exact ``region`` (case-insensitive) is a region or zone of some offer in the catalog.

    A glob (``us-*``) is a pattern, not a name: one that matches nothing is an empty answer, as the
    command has always given, not a typo to correct."""
    if region is None:
        return
    pattern = region.strip().lower()
    if any(ch in pattern for ch in _GLOB_CHARS):
        return
    places = {p.lower() for o in catalog.offers for p in (o.region, o.zone or "") if p}
    if pattern not in places:
        raise NotFoundError(
            _("region"),
            region,
            sorted(places),
            why=_("{option} names a region or zone no offer in the catalog is in").format(option=option),
            fix=_(
                "use a region as the provider names it (us-east-1, europe-west4, …) or a glob such as 'us-*'"
            ),
        )
