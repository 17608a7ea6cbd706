"""What `gpuwise catalog offers`, `import` and `update` print: the offers table and the install report.

Kept out of cli/catalog.py (the commands and their options) so that file stays under the size limit;
imported by it at the top, so only cheap imports here (the standard library and gpuwise.locale), rich and
the catalog modules inside the functions.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.catalog.models import Offer


def num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return _("unknown")
    if value == int(value):
        return f"{int(value)}"
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _money(value: float | None, currency: str) -> str:
    from gpuwise.plan.currency import offer_money  # --currency: in the shown currency, converted
    from gpuwise.units import format_money

    shown = offer_money(value, currency)
    if shown is not None:
        return shown
    return "—" if value is None else format_money(value, currency)


def print_offers_table(
    found: list[Offer], today: date, *, spot: bool, limit: int, hints: list[str] | None = None
) -> None:
    """``hints``: lines said when nothing was found (which filter matched nothing), else under the table
    (the GPUs an exact --gpu left out)."""
    from gpuwise.cli.catalog_table import legend, offer_cells, offers_table
    from gpuwise.cli.output import console

    if not found:
        for line in hints or [
            _("No offers match. Drop a filter, or see `gpuwise catalog stats` for what the catalog holds.")
        ]:
            console.print(line, markup=False)
        return
    shown = found if limit == 0 else found[:limit]
    title = (_("{n} offer(s), cheapest spot first") if spot else _("{n} offer(s), cheapest first")).format(
        n=len(found)
    )
    rows = [
        offer_cells(
            o,
            today,
            {
                "price": _money(o.price_usd_per_hour, o.currency),
                "spot": _money(o.spot_price_usd_per_hour, o.currency),
            },
            spot=spot,
        )
        for o in shown
    ]
    console.print(offers_table(rows, console.width, title))
    if len(found) > len(shown):
        console.print(
            _("… {n} more; --limit 0 shows all, --json prints them for scripts.").format(
                n=len(found) - len(shown)
            )
        )
    for line in hints or []:
        console.print(line, markup=False)
    for line in legend(rows, gpu_only=any(o.gpu_only_price for o in shown), spot=spot):
        console.print(line, markup=False, style="dim")


def report_install(result: Any, json_out: bool, what: str) -> None:
    from gpuwise.cli.output import console, print_json

    doc = {
        "catalog_dir": str(result.catalog_dir),
        "previous_dir": str(result.previous_dir) if result.previous_dir else None,
        "providers": result.providers,
        "gpu_rows_imported": result.rows_kept,
        "gpu_rows_dropped": result.rows_dropped,
        "collected": result.collected.isoformat(),
        "collected_from_file_times": {p: d.isoformat() for p, d in result.file_dates.items()},
        "price_dates": {p: d.isoformat() for p, d in result.price_dates.items()},
    }
    if json_out:
        print_json(doc)
        return
    rows = ", ".join(
        _("{provider} ({n} GPU rows)").format(provider=p, n=n) for p, n in result.rows_kept.items()
    )
    console.print(f"{what}: {rows}", markup=False)
    for provider, reasons in result.rows_dropped.items():
        n = sum(reasons.values())
        said = ", ".join(f"{k} {v}" for k, v in reasons.items())
        console.print(
            "  "
            + _("{provider}: {n} row(s) gave no offer ({said}); see `gpuwise catalog stats`").format(
                provider=provider, n=n, said=said
            ),
            markup=False,
        )
    offers = sum(result.providers.values())
    console.print(
        _("User catalog now at {dir} ({offers} offers).").format(dir=result.catalog_dir, offers=offers),
        markup=False,
    )
    if result.previous_dir:
        console.print(
            _("The previous catalog is kept at {dir}.").format(dir=result.previous_dir), markup=False
        )
    if result.price_dates:
        dated = ", ".join(f"{p} {d.isoformat()}" for p, d in result.price_dates.items())
        console.print(_("Prices dated by the files' PriceDate: {dated}.").format(dated=dated), markup=False)
        if len(result.price_dates) == len(result.rows_kept):
            return
    if result.file_dates:
        dates = sorted(set(result.file_dates.values()))
        span = dates[0].isoformat() + ("" if len(dates) == 1 else f" … {dates[-1].isoformat()}")
        console.print(
            _(
                "These files carry no price date: each file's modification time ({span}) stands as when "
                "its prices were collected, shown with a trailing ? (date unknown) by `gpuwise catalog "
                "offers`. The bundled catalog is unchanged."
            ).format(span=span)
        )
        return
    console.print(
        _(
            "These files carry no price date: {date} stands as when their prices were collected, "
            "shown with a trailing ? (date unknown) by `gpuwise catalog offers`. The bundled catalog is "
            "unchanged."
        ).format(date=result.collected.isoformat())
    )
