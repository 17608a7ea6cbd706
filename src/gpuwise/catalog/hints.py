"""What `gpuwise catalog offers` says beside its offers: why it found none, which GPUs a --gpu left out.

A newcomer who asks for ``--gpu H100 --count 5`` or ``--gpu H20`` used to read only "No offers match";
:func:`why_no_offers` says what matched nothing (a GPU no provider in the catalog sells, a GPU count no
instance has, a provider or region without that GPU, no spot price) and how many offers dropping each
filter would show. ``--gpu A100`` means the 40 GB card only (an exact match, as in `plan`): a newcomer
who meant any A100 would miss the 80 GB ones unseen, so :func:`left_out` names them with their counts.

Pure: the caller passes the loaded catalog and the filters as given (already checked by ``query_offers``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace

from gpuwise.catalog.models import Catalog, Offer
from gpuwise.catalog.query import query_offers, resolve_offer_gpu
from gpuwise.locale import _, ngettext
from gpuwise.locale.formats import join_list


@dataclass(frozen=True)
class Filters:
    """The filters of one query, as the user gave them (None / False = not given)."""

    gpu: str | None = None
    count: int | None = None
    provider: str | None = None
    region: str | None = None
    spot: bool = False

    def flags(self) -> str:
        """The filters as options, for the message: ``--gpu H100 --count 3``."""
        given = [
            f"--gpu {self.gpu}" if self.gpu else "",
            f"--count {self.count}" if self.count is not None else "",
            f"--provider {self.provider}" if self.provider else "",
            f"--region {self.region}" if self.region else "",
            "--spot" if self.spot else "",
        ]
        return " ".join(g for g in given if g)

    def count_matches(self, catalog: Catalog) -> int:
        return len(
            query_offers(
                catalog,
                gpu=self.gpu,
                count=self.count,
                provider=self.provider,
                region=self.region,
                spot=self.spot,
            )
        )


def why_no_offers(catalog: Catalog, filters: Filters) -> list[str]:
    """Lines that say what matched nothing; call only when the query found no offer."""
    tail = _("See `gpuwise catalog stats` for what the catalog holds.")
    if not filters.flags():
        return [_("The catalog holds no offers."), tail]
    lines = [_("No offers match {filters}.").format(filters=filters.flags())]
    if filters.gpu and not Filters(gpu=filters.gpu).count_matches(catalog):
        gpu = resolve_offer_gpu(catalog, filters.gpu)
        lines.append(_("No provider in the catalog sells {gpu}.").format(gpu=gpu))
        near = difflib.get_close_matches(gpu, catalog.gpu_names(), n=4, cutoff=0.5)
        if near:
            lines.append(_("GPUs with offers and a similar name: {names}.").format(names=join_list(near)))
        return [*lines, tail]
    if filters.count is not None:
        counts = _counts_without_count(catalog, filters)
        if counts:
            lines.append(
                _("The instances that match the other filters have {counts} GPUs each.").format(
                    counts=join_list(counts)
                )
            )
    for name, without in _without_each(filters):
        n = without.count_matches(catalog)
        if n:
            lines.append(_("Without {flag}: {n} offer(s).").format(flag=name, n=n))
    return [*lines, *left_out(catalog, filters), tail]


def _without_each(filters: Filters) -> list[tuple[str, Filters]]:
    """(option, the filters without it) for each option given."""
    out: list[tuple[str, Filters]] = []
    if filters.gpu:
        out.append(("--gpu", replace(filters, gpu=None)))
    if filters.count is not None:
        out.append(("--count", replace(filters, count=None)))
    if filters.provider:
        out.append(("--provider", replace(filters, provider=None)))
    if filters.region:
        out.append(("--region", replace(filters, region=None)))
    if filters.spot:
        out.append(("--spot", replace(filters, spot=False)))
    return out


def _counts_without_count(catalog: Catalog, filters: Filters) -> list[str]:
    found = query_offers(
        catalog, gpu=filters.gpu, provider=filters.provider, region=filters.region, spot=filters.spot
    )
    whole = sorted({o.gpus for o in found})
    return [f"{g:g}" for g in whole]


def left_out(catalog: Catalog, filters: Filters) -> list[str]:
    """A line naming the GPUs with offers whose names extend the asked one (A100 -> A100-80GB, H100 ->
    H100-PCIe), with how many offers each would show under the same other filters; none when no --gpu."""
    if not filters.gpu:
        return []
    gpu = resolve_offer_gpu(catalog, filters.gpu)
    found = []
    for name in catalog.gpu_names():
        if name.startswith(gpu + "-"):
            n = replace(filters, gpu=name).count_matches(catalog)
            if n:
                found.append(ngettext("{gpu} ({n} offer)", "{gpu} ({n} offers)", n).format(gpu=name, n=n))
    if not found:
        return []
    return [
        _("Not included, as --gpu {gpu} names one card exactly: {others}; --gpu takes each name.").format(
            gpu=gpu, others=join_list(found)
        )
    ]


def unranked_currencies(found: list[Offer]) -> list[str]:
    """A line when offers in another currency (AWS China's CNY) follow the USD ones unranked: 'cheapest
    first' holds within each currency only, and a newcomer reading the top rows would never see them."""
    others = sorted({o.currency for o in found} - {"USD"})
    if not others or all(o.currency != "USD" for o in found):
        return []
    n = sum(1 for o in found if o.currency != "USD")
    return [
        _(
            "Offers priced in {currencies} ({n}) follow the USD ones, not ranked with them; --currency USD "
            "(or CNY) converts and ranks them together, the rate printed."
        ).format(n=n, currencies=join_list(others))
    ]
