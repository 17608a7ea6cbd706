"""The `gpuwise catalog offers` table, laid out for the terminal's width.

One line per offer when the width allows (provider, instance, vCPU/GiB, region, GPUs, price/h, spot/h,
price date). Narrower, each offer takes two lines: the region under the provider, vCPU/GiB under the GPUs,
then, if still needed, the spot price under the on-demand one. Instance ids are never split (users copy
them): when an id is wider than the room left for the instance column, it sits whole on a line of its own
above its offer's figures (only an id wider than the terminal folds); region names are cut with an
ellipsis (--json has them whole). Price dates use `gpuwise plan`'s compact form: a trailing ? = no date
of its own (the collection date is shown), ! = over the stale limit.

Only rich and the catalog modules are imported, and only by cli/catalog_views.py inside its function.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from gpuwise.locale import N_, _
from gpuwise.locale.formats import join_list

if TYPE_CHECKING:
    from gpuwise.catalog.models import Offer

GAP = 2  # a column's one space of right padding and the box's blank divider; no edges are drawn
REGION_MIN = 8  # below this a cut region name ("us-east…") no longer says where
PROVIDER_MIN = 10  # "primeintel…": the one name longer than this still reads
INSTANCE_MIN = 8  # the narrowest an id may be folded to when nothing else gives way

# Field -> heading (msgids; translated where drawn).
HEADINGS = {
    "provider": N_("provider"),
    "region": N_("region"),
    "instance": N_("instance"),
    "host": N_("vCPU/GiB"),
    "gpus": N_("GPUs"),
    "price": N_("price/h"),
    "spot": N_("spot/h"),
    "date": N_("price date"),
}

# Each layout is its columns, each column the fields shown one per line; the first that fits is used.
Layout = tuple[tuple[str, ...], ...]
LAYOUTS: tuple[Layout, ...] = (
    (("provider",), ("instance",), ("host",), ("region",), ("gpus",), ("price",), ("spot",), ("date",)),
    (("provider", "region"), ("instance",), ("gpus", "host"), ("price",), ("spot",), ("date",)),
    (("provider", "region"), ("instance",), ("gpus", "host"), ("price", "spot"), ("date",)),
)
_RIGHT = {"price", "spot"}
_SECOND_LINE_STYLE = "dim"


@dataclass(frozen=True)
class OfferCells:
    """One offer's texts, plain (rich measures them; styles are added when drawn)."""

    fields: dict[str, str]
    flagged: bool  # price date undated or over the stale limit
    other_date: str | None = None  # the date of the price not dated in the table, where it differs


def date_flag(offer: Offer, today: date, *, spot: bool = False) -> str:
    """'?' when the source gives no date (the collection date is shown), '!' when over the stale limit.
    ``spot``: of the spot price, which may come from another, dated source (AWS)."""
    from gpuwise.catalog.query import STALE_AFTER_DAYS, date_marks, price_age_days

    if spot and offer.spot_price_as_of is not None:  # a source of its own, with its own date
        return date_marks(True, (today - offer.spot_price_as_of).days > STALE_AFTER_DAYS)
    return date_marks(offer.price_date_exact, price_age_days(offer, today) > STALE_AFTER_DAYS)


def offer_cells(offer: Offer, today: date, money: dict[str, str], *, spot: bool = False) -> OfferCells:
    """``money`` holds the offer's price and spot texts, already in the shown currency. ``spot``: the
    table is of spot prices, so the date shown is the spot price's (AWS's is older than its on-demand)."""
    from gpuwise.cli.catalog_views import num

    place = offer.region or "—"
    if offer.zone and offer.zone != offer.region:
        place = f"{place} ({offer.zone})"
    host = f"{num(offer.vcpus)}/{num(offer.memory_gib)}" if offer.vcpus or offer.memory_gib else "—"
    flag = date_flag(offer, today, spot=spot)
    day = offer.spot_price_as_of if spot and offer.spot_price_as_of is not None else offer.price_as_of
    other = offer.price_as_of if spot else offer.spot_price_as_of  # the other column's price's date
    if (offer.price_usd_per_hour if spot else offer.spot_price_usd_per_hour) is None:
        other = None
    # * is explained under the table; in front, so the cents of all prices stay in one column
    price = ("*" if offer.gpu_only_price else "") + money["price"]
    fields = {
        "provider": offer.provider,
        "region": place,
        "instance": offer.instance_type or "—",
        "host": host,
        "gpus": f"{num(offer.gpus, 3)}× {offer.gpu}",
        "price": price,
        "spot": money["spot"],
        "date": day.isoformat() + flag,
    }
    return OfferCells(fields, bool(flag), None if other is None or other == day else other.isoformat())


def _heading_need(field: str) -> int:
    """A heading may wrap at its spaces, so its longest word is what it needs."""
    return max(cell_len(word) for word in _(HEADINGS[field]).split())


def _natural(rows: list[OfferCells], field: str) -> int:
    return max([_heading_need(field), *(cell_len(r.fields[field]) for r in rows)])


def column_widths(rows: list[OfferCells], width: int) -> tuple[Layout, list[int]]:
    """The first layout whose columns all fit ``width`` with no id split, else the narrowest one with the
    instance column given whatever is left: the ids wider than that are drawn on a line of their own
    (see :func:`offers_table`), so the column needs only the width of the others. Where not even a short
    id fits, the instance column is left out and every id has its own line."""
    natural = {f: _natural(rows, f) for f in HEADINGS}
    region_min = min(natural["region"], REGION_MIN)
    for n, layout in enumerate(LAYOUTS):
        least = [max(region_min if f == "region" else natural[f] for f in col) for col in layout]
        used = sum(least) + GAP * (len(layout) - 1)
        last = n == len(LAYOUTS) - 1
        if used > width and not last:
            continue
        widths = least
        where = next(i for i, col in enumerate(layout) if "region" in col)
        spare = width - used
        if used > width:  # even the narrowest layout is too wide: a long provider name is cut first,
            # then the instance column narrows (a cut name still reads, --provider takes it whole from --json)
            at = layout.index(("instance",))
            cut = min(used - width, max(0, widths[0] - PROVIDER_MIN))
            widths[0] -= cut
            room = widths[at] - (used - cut - width)
            if room < INSTANCE_MIN:  # no room for even a short id: every id goes on a line of its own
                spare = room + GAP
                return tuple(c for c in layout if c != ("instance",)), _grow_region(
                    [w for i, w in enumerate(widths) if i != at], where, natural["region"], spare
                )
            fitting = [w for r in rows if (w := cell_len(r.fields["instance"])) <= room]
            widths[at] = max([min(_heading_need("instance"), room), *fitting])
            spare = room - widths[at]
        return layout, _grow_region(widths, where, natural["region"], spare)
    raise AssertionError("unreachable: the last layout always returns")


def _grow_region(widths: list[int], where: int, region: int, spare: int) -> list[int]:
    """Spare room goes to the column with the region, up to the region's full length."""
    widths[where] = max(widths[where], min(region, widths[where] + spare))
    return widths


def _table(layout: Layout, widths: list[int], title: str | None, *, header: bool) -> Table:
    from rich import box

    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
        pad_edge=False,
        show_header=header,
    )
    for col, w in zip(layout, widths, strict=True):
        table.add_column(
            "\n".join(_(HEADINGS[f]) for f in col),
            justify="right" if col[0] in _RIGHT else "left",
            width=w,
            # only an id wider than the whole terminal folds; the rest is cut, never wrapped
            no_wrap=col != ("instance",),
            overflow="fold" if col == ("instance",) else "ellipsis",
        )
    return table


def _add_row(table: Table, layout: Layout, row: OfferCells, *, lifted: bool) -> None:
    cells = []
    for col in layout:
        text = Text()
        for i, f in enumerate(col):
            style = "yellow" if f == "date" and row.flagged else (_SECOND_LINE_STYLE if i else "")
            value = "" if lifted and f == "instance" else row.fields[f]
            text.append(("\n" if i else "") + value, style=style)
        cells.append(text)
    table.add_row(*cells)


def offers_table(rows: list[OfferCells], width: int, title: str) -> RenderableType:
    """The table; an id wider than its column sits whole on a line of its own, above its offer's figures
    and from the instance column's left edge (users copy ids: one split over two lines breaks the copy)."""
    from rich.console import Group

    layout, widths = column_widths(rows, width)
    at = layout.index(("instance",)) if ("instance",) in layout else None
    lifted = [at is None or cell_len(r.fields["instance"]) > widths[at] for r in rows]
    if not any(lifted):
        whole = _table(layout, widths, title, header=True)
        for row in rows:
            _add_row(whole, layout, row, lifted=False)
        return whole
    # rich has no cell that spans columns: the rows between two lifted ids go in one headless table of the
    # same fixed widths, so every piece lines up under the heading
    indent = 0 if at is None else sum(widths[:at]) + GAP * at
    parts: list[RenderableType] = [_table(layout, widths, title, header=True)]
    table: Table | None = None
    for row, lift in zip(rows, lifted, strict=True):
        if lift or table is None:
            if lift:
                name = row.fields["instance"]
                pad = indent if indent + cell_len(name) <= width else 0
                parts.append(Text(" " * pad + name, overflow="fold"))
            table = _table(layout, widths, None, header=False)
            parts.append(table)
        _add_row(table, layout, row, lifted=lift)
    return Group(*parts)


def legend(rows: list[OfferCells], *, gpu_only: bool, spot: bool = False) -> list[str]:
    """The lines under the table: what a flagged date and a * mean."""
    from gpuwise.catalog.query import STALE_AFTER_DAYS

    lines = []
    if gpu_only:
        lines.append(
            "* " + _("GPU-only: the source prices the GPUs without their host VM; the real cost is higher.")
        )
    others = sorted({(r.fields["provider"], r.other_date) for r in rows if r.other_date})
    if others:
        which = join_list(f"{p} ({d})" for p, d in others)
        lines.append(
            _(
                "On-demand prices of {which} are of another date than the price date shown (the spot "
                "price's)."
            ).format(which=which)
            if spot
            else _(
                "Spot prices of {which} are of another date than the price date shown (the on-demand "
                "price's); `--spot` shows theirs."
            ).format(which=which)
        )
    if any(r.flagged for r in rows):
        lines.append(
            _(
                "⚠ A price date ending in ? is when the price was collected: date unknown, the source "
                "gives none; ! marks a price over {days} days old (by the collection date when undated). "
                "`--json` has each offer's source."
            ).format(days=STALE_AFTER_DAYS)
        )
    else:
        lines.append(_("`--json` has each offer's source."))
    return lines
