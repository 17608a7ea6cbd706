"""`gpuwise catalog offers --currency CNY|USD`: the offers with every price in one currency, ranked together.

The rate used for each currency (bundled, dated and cited, or `--exchange-rate`) is printed before the
table and carried in the JSON (`money`); each offer's own price, currency and source stay as they are, and
its converted prices go in `in_currency`. Kept out of cli/catalog.py so that file stays one screenful per
command; imported only when --currency is given.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuwise.catalog.models import Offer


def offers_in_currency(
    found: list[Offer],
    currency: str,
    exchange_rate: list[str],
    today: date,
    *,
    spot: bool,
    json_out: bool,
    limit: int | None,
    hints: list[str] | None = None,
) -> None:
    from gpuwise.cli.catalog import _TABLE_DEFAULT_LIMIT, JSON_SCHEMA_VERSION, offer_json, print_offers_table
    from gpuwise.cli.options import exchange_rates
    from gpuwise.cli.output import console, print_json
    from gpuwise.plan.currency import (
        check_currency,
        display,
        offer_json_in,
        offers_in,
        other_rate_lines,
        rates_json,
        showing,
    )

    given = exchange_rates(exchange_rate)
    shown_in = display(check_currency(currency), given)
    ranked = offers_in(found, shown_in, spot=spot)
    if json_out:
        shown = ranked if not limit else ranked[:limit]
        offers = [offer_json(o, today) | {"in_currency": offer_json_in(o, shown_in)} for o in shown]
        print_json({"schema_version": JSON_SCHEMA_VERSION, "money": rates_json(shown_in), "offers": offers})
        return
    lines = [shown_in.rate_line(today)] if shown_in.rate is not None else []
    lines += other_rate_lines(shown_in, today)
    for line in lines:
        console.print(line, soft_wrap=True, markup=False)
    with showing(shown_in):
        print_offers_table(
            ranked,
            today,
            spot=spot,
            limit=_TABLE_DEFAULT_LIMIT if limit is None else limit,
            hints=hints,
        )
