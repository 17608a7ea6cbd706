"""Numbers, money and dates in the language gpuwise speaks; the one place money is rounded and laid out.

Every amount gpuwise prints goes through `format_money` (units.format_money and format_usd, plan's
currency formatters are thin calls into it), rounded by one rule per style (`_spec`): 'cents' ($1,234.56),
'rounded' (cents under 10 000, whole units above) and 'significant' (whole units from 1 000, cents from 1,
else three significant digits, so small totals differ).

English keeps gpuwise's own layout byte for byte (`$1,234.56`, `$-5.50`, `2025-02-28`): Python's number
format, the sign after the currency's sign. Chinese uses the zh_CN conventions of the Unicode CLDR through
Babel: the currency's zh_CN symbol (`US$` for dollars, `¥` for yuan: a bare `$` is ambiguous to a reader who
budgets in yuan), grouping and decimal signs, and dates as `2025年2月28日`. The digits are the same in both
languages: the amount is rounded first, by the same rule, and Babel only lays the rounded value out (it
never rounds again).

Babel (and decimal, which only Babel's path needs) is imported only when the language is not English, so
English start-up (`gpuwise plan` is timed by benchmarks/plan_speed.py) does not pay for it. Pure functions
of the current language.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Literal

from gpuwise.locale import language

_CLDR_LOCALE = {"zh": "zh_CN"}
ENGLISH_SYMBOLS = {"USD": "$", "CNY": "¥"}  # gpuwise's English signs; others print their code after
MoneyStyle = Literal["cents", "rounded", "significant"]
# Babel quantizes in the current decimal context, whose default 28 digits raise InvalidOperation on 1e26 and
# more: its calls run with room for every digit of the largest double (309 before the point) and decimals.
_ALL_DIGITS = 400


def _locale() -> str | None:
    """The CLDR locale to format for, or None for gpuwise's own English formatting."""
    return _CLDR_LOCALE.get(language())


def _spec(value: float, style: MoneyStyle) -> str:
    """The format spec that rounds the absolute amount `value` as `style` asks: the one rounding rule."""
    if style == "cents":
        return ".2f"
    if style == "rounded":  # cents under 10 000, whole units above
        return ".0f" if value >= 10_000 else ".2f"
    # "significant": whole units from 1 000 (and a bare '0'), cents from 1, else three significant digits
    if value >= 1000 or value == 0:
        return ".0f"
    if value >= 1:
        return ".2f"
    return ".3g" if value >= 1e-4 else ".2e"


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
    from decimal import Decimal, localcontext

    from babel.numbers import format_decimal

    digits = f"{value:.{fraction_digits}f}"
    with localcontext(prec=_ALL_DIGITS):
        return format_decimal(Decimal(digits), format=_pattern(digits), locale=locale)


def currency_symbol(currency: str) -> str:
    """The sign printed before an amount in `currency` ('$' or '¥' in English; CLDR's in Chinese, 'US$')."""
    locale = _locale()
    if locale is None:
        return ENGLISH_SYMBOLS.get(currency, currency)
    from babel.numbers import get_currency_symbol

    return str(get_currency_symbol(currency, locale=locale))


def format_money(
    amount: float,
    currency: str = "USD",
    style: MoneyStyle = "cents",
    *,
    signs: Mapping[str, str] = ENGLISH_SYMBOLS,
) -> str:
    """An amount in `currency`, rounded by `style`: 'cents' ($1,234.56), 'rounded' (whole units from
    10 000), 'significant' ($1,234 · $12.34 · $0.0123).

    `signs` are the English signs; English writes a currency without one as its code after the amount
    ('1,234.56 EUR'; units.format_money gives only the dollar its sign, so catalog prices read '1,234.56
    CNY'). Chinese always writes CLDR's sign before the amount ('US$1,234.56', '¥1,234.56')."""
    if style == "significant" and amount == 0:
        amount = 0.0  # a zero is '$0', never '$-0'
    spec = _spec(abs(amount), style)
    locale = _locale()
    if locale is None:
        return _english_money(amount, spec, currency, signs)
    return _cldr_money(amount, format(abs(amount), spec), currency, locale)


def _english_money(amount: float, spec: str, currency: str, signs: Mapping[str, str]) -> str:
    """gpuwise's English layout: Python's grouped format of the signed amount, the minus after the sign
    ('$-5.50'; '$-0.00' for -0.001, as gpuwise has always printed it), or the code after ('-5.50 EUR')."""
    text = format(amount, "," + spec)
    symbol = signs.get(currency)
    return f"{text} {currency}" if symbol is None else f"{symbol}{text}"


def _cldr_money(amount: float, digits: str, currency: str, locale: str) -> str:
    """CLDR's layout of the rounded absolute `digits`: the minus before the sign ('-US$5.50'), and none on
    an amount that rounds to zero."""
    sign = "-" if amount < 0 and float(digits) != 0 else ""
    if "e" in digits:  # a tiny amount in scientific notation: CLDR patterns have no place for it
        return f"{sign}{currency_symbol(currency)}{digits}"
    from decimal import Decimal, localcontext

    from babel.numbers import format_currency

    with localcontext(prec=_ALL_DIGITS):
        text = format_currency(
            Decimal(digits), currency, format="¤" + _pattern(digits), locale=locale, currency_digits=False
        )
    return sign + str(text)


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


# The separator between the items of a running list: Chinese writes the enumeration comma (顿号), as the
# CLDR zh list patterns do ("{0}、{1}"); English keeps gpuwise's ", ".
_LIST_SEPARATORS = {"zh": "、"}


def join_list(items: Iterable[str]) -> str:
    """Items of a list inside a sentence: 'A100-80GB (145 offers), A100-PCIe (1 offer)' in English,
    'A100-80GB（145 条报价）、A100-PCIe（1 条报价）' in Chinese."""
    return _LIST_SEPARATORS.get(language(), ", ").join(items)
