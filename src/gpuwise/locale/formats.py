"""Numbers, money and dates in the language gpuwise speaks.

English keeps gpuwise's own formatting byte for byte (`$1,234.56`, `2025-02-28`). Chinese uses the zh_CN
conventions of the Unicode CLDR through Babel: the currency's zh_CN symbol (`US$` for dollars, `¥` for
yuan: a bare `$` is ambiguous to a reader who budgets in yuan), grouping and decimal signs, and dates as
`2025年2月28日`. The digits are the same in both languages: each amount is rounded first, by the same rule
the English output uses, and Babel only lays the rounded value out (it never rounds again).

Babel is imported only when the language is not English, so English start-up (`gpuwise plan` is timed by
benchmarks/plan_speed.py) does not pay for it. Pure functions of the current language.
"""

from __future__ import annotations

import functools
import math
from datetime import date
from decimal import Decimal
from typing import Literal

from gpuwise.locale import language

_CLDR_LOCALE = {"zh": "zh_CN"}
ENGLISH_SYMBOLS = {"USD": "$", "CNY": "¥"}  # gpuwise's English signs; others print their code after
MoneyStyle = Literal["cents", "rounded", "significant"]


def _locale() -> str | None:
    """The CLDR locale to format for, or None for gpuwise's own English formatting."""
    return _CLDR_LOCALE.get(language())


def _rounded_text(amount: float, style: MoneyStyle) -> str:
    """The absolute amount rounded as gpuwise's English output rounds it, as plain digits ('1234.57')."""
    value = abs(amount)
    if style == "cents":
        return f"{value:.2f}"
    if style == "rounded":  # units.format_money: cents under 10 and up to 10 000, whole units above
        return f"{value:.0f}" if value >= 10_000 else f"{value:.2f}"
    # "significant", units.format_usd: whole units from 1 000, cents from 1, else three significant digits
    if value >= 1000:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.2f}"
    if value == 0:
        return "0"
    return f"{value:.3g}" if value >= 1e-4 else f"{value:.2e}"


def _pattern(digits: str) -> str:
    """A CLDR number pattern with exactly the fraction digits of `digits` (so Babel adds none)."""
    places = len(digits.partition(".")[2])
    return "#,##0" + ("." + "0" * places if places else "")


def format_number(value: float, fraction_digits: int = 0) -> str:
    """`value` with digit grouping and `fraction_digits` decimals: '1,234.5' (en and zh_CN alike)."""
    locale = _locale()
    text = f"{value:,.{fraction_digits}f}"
    if locale is None or not math.isfinite(value):
        return text
    from babel.numbers import format_decimal

    digits = f"{value:.{fraction_digits}f}"
    return format_decimal(Decimal(digits), format=_pattern(digits), locale=locale)


def currency_symbol(currency: str) -> str:
    """The sign printed before an amount in `currency` ('$' or '¥' in English; CLDR's in Chinese, 'US$')."""
    locale = _locale()
    if locale is None:
        return ENGLISH_SYMBOLS.get(currency, currency)
    from babel.numbers import get_currency_symbol

    return str(get_currency_symbol(currency, locale=locale))


def format_money(amount: float, currency: str = "USD", style: MoneyStyle = "cents") -> str:
    """An amount in `currency`, rounded by `style`: 'cents' ($1,234.56), 'rounded' (whole units from
    10 000), 'significant' (units.format_usd's digits: $1,234 · $12.34 · $0.0123)."""
    digits = _rounded_text(amount, style)
    sign = "-" if amount < 0 and float(digits) != 0 else ""
    locale = _locale()
    if locale is None:  # as units.format_usd writes it: the sign after the symbol ('$-5.50')
        places = len(digits.partition(".")[2])
        grouped = digits if "e" in digits else f"{float(digits):,.{places}f}"
        symbol = ENGLISH_SYMBOLS.get(currency)
        return f"{symbol}{sign}{grouped}" if symbol else f"{sign}{grouped} {currency}"
    if "e" in digits:  # a tiny amount in scientific notation: CLDR patterns have no place for it
        return f"{sign}{currency_symbol(currency)}{digits}"
    from babel.numbers import format_currency

    pattern = "¤" + _pattern(digits)
    return sign + str(
        format_currency(Decimal(digits), currency, format=pattern, locale=locale, currency_digits=False)
    )


def format_date(day: date) -> str:
    """A calendar day: '2025-02-28' in English (ISO, as gpuwise has always printed it), '2025年2月28日'."""
    locale = _locale()
    if locale is None:
        return day.isoformat()
    return _long_date(day, locale)


@functools.lru_cache(maxsize=256)
def _long_date(day: date, locale: str) -> str:
    """Babel's long date: plan prints the same few price dates in every option's notes, thousands of times."""
    from babel.dates import format_date as babel_date

    return str(babel_date(day, format="long", locale=locale))
