"""Money has one formatter (gpuwise.locale.formats): every caller's output, in English and in Chinese, is the
output it had before its rounding and layout moved there, byte for byte.

The `_frozen_*` functions below are the pre-refactor bodies of units.format_money, units.format_usd,
plan/currency's Money.format, cents, rounded and symbol, and of the Chinese path of formats.format_money and
formats.currency_symbol, copied as they were at commit fccca49. They are the reference: do not edit them to
make a test pass. A change of output is a decision to take on purpose, in a test of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from decimal import Decimal, InvalidOperation

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuwise import units
from gpuwise.locale import use_language
from gpuwise.plan import currency
from gpuwise.plan.currency import FxRate, Money, showing

# --- the frozen pre-refactor behaviour (reference only) ------------------------------------------------

_FROZEN_SYMBOLS = {"USD": "$", "CNY": "¥"}


def _frozen_units_format_money(amount: float, currency: str = "USD") -> str:
    """FROZEN: units.format_money's English branch before the refactor."""
    if currency == "USD":
        if abs(amount) < 10:
            return f"${amount:,.2f}"
        return f"${amount:,.0f}" if abs(amount) >= 10_000 else f"${amount:,.2f}"
    return f"{amount:,.2f} {currency}"


def _frozen_format_usd(x: float | None) -> str:
    """FROZEN: units.format_usd's English branch before the refactor."""
    if x is None or math.isnan(x):
        return "?"
    if abs(x) >= 1000:
        return f"${x:,.0f}"
    if abs(x) >= 1:
        return f"${x:,.2f}"
    if x == 0:
        return "$0"
    if abs(x) >= 1e-4:
        return f"${x:.3g}"
    return f"${x:.2e}"


def _frozen_money_format(shown: Money, usd: float | None) -> str:
    """FROZEN: Money.format's English branch before the refactor."""
    if shown.rate is None or usd is None or math.isnan(usd):
        return _frozen_format_usd(usd)
    return _frozen_format_usd(shown.amount(usd)).replace("$", _FROZEN_SYMBOLS.get(shown.currency, ""), 1) + (
        "" if shown.currency in _FROZEN_SYMBOLS else f" {shown.currency}"
    )


def _frozen_cents(shown: Money, usd: float) -> str:
    """FROZEN: currency.cents's English branch before the refactor."""
    if shown.rate is None:
        return f"${usd:,.2f}"
    return f"{_FROZEN_SYMBOLS.get(shown.currency, '')}{shown.amount(usd):,.2f}" + (
        "" if shown.currency in _FROZEN_SYMBOLS else f" {shown.currency}"
    )


def _frozen_rounded(shown: Money, usd: float) -> str:
    """FROZEN: currency.rounded's English branch before the refactor."""
    text = _frozen_units_format_money(shown.amount(usd))
    if shown.rate is None:
        return text
    return text.replace("$", _FROZEN_SYMBOLS.get(shown.currency, ""), 1) + (
        "" if shown.currency in _FROZEN_SYMBOLS else f" {shown.currency}"
    )


def _frozen_symbol(shown: Money) -> str:
    """FROZEN: currency.symbol's English branch before the refactor."""
    return _FROZEN_SYMBOLS.get(shown.currency, shown.currency)


def _frozen_rounded_text(amount: float, style: str) -> str:
    """FROZEN: formats._rounded_text before the refactor."""
    value = abs(amount)
    if style == "cents":
        return f"{value:.2f}"
    if style == "rounded":
        return f"{value:.0f}" if value >= 10_000 else f"{value:.2f}"
    if value >= 1000:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.2f}"
    if value == 0:
        return "0"
    return f"{value:.3g}" if value >= 1e-4 else f"{value:.2e}"


def _frozen_pattern(digits: str) -> str:
    places = len(digits.partition(".")[2])
    return "#,##0" + ("." + "0" * places if places else "")


def _frozen_zh_symbol(code: str) -> str:
    """FROZEN: formats.currency_symbol's Chinese branch before the refactor."""
    from babel.numbers import get_currency_symbol

    return str(get_currency_symbol(code, locale="zh_CN"))


def _frozen_zh_money(amount: float, code: str, style: str) -> str:
    """FROZEN: formats.format_money's Chinese branch before the refactor."""
    from babel.numbers import format_currency

    digits = _frozen_rounded_text(amount, style)
    sign = "-" if amount < 0 and float(digits) != 0 else ""
    if "e" in digits:
        return f"{sign}{_frozen_zh_symbol(code)}{digits}"
    pattern = "¤" + _frozen_pattern(digits)
    return sign + str(
        format_currency(Decimal(digits), code, format=pattern, locale="zh_CN", currency_digits=False)
    )


def _frozen_zh_units_format_money(amount: float, code: str = "USD") -> str:
    return _frozen_zh_money(amount, code, "rounded" if code == "USD" else "cents")


def _frozen_zh_format_usd(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "?"
    return _frozen_zh_money(x, "USD", "significant")


def _frozen_zh_money_format(shown: Money, usd: float | None) -> str:
    if shown.rate is None or usd is None or math.isnan(usd):
        return _frozen_zh_format_usd(usd)
    return _frozen_zh_money(shown.amount(usd), shown.currency, "significant")


# --- what the sweep covers -----------------------------------------------------------------------------

# The rounding rules' edges: each side of 1e-4, 1, 10, 1 000 and 10 000 once rounded, amounts that round
# to zero (with a sign), the sign of zero, and the extremes of a double.
EDGES = (
    0.0,
    -0.0,
    5e-324,
    1e-9,
    -1e-9,
    9.9995e-5,
    1e-4,
    -1e-4,
    0.000123456,
    0.001,
    -0.001,
    -0.004,
    0.005,
    -0.005,
    0.0123,
    0.99949,
    0.9995,
    0.99999,
    1.0,
    9.994,
    9.995,
    9.999,
    10.0,
    -10.0,
    12.345,
    999.994,
    999.995,
    999.5,
    1000.0,
    1234.5,
    9999.994,
    9999.995,
    10000.0,
    -10000.0,
    123456.7,
    1e15,
    1e20,
    -1e20,
    1.7976931348623157e308,
)
amounts = st.one_of(
    st.sampled_from(EDGES),
    st.sampled_from(EDGES).map(lambda a: -a),
    st.floats(min_value=1e-9, max_value=1e-4).flatmap(lambda a: st.sampled_from((a, -a))),
    st.integers(min_value=-(10**9), max_value=10**9).map(lambda c: c / 100),  # whole cents
    st.floats(allow_nan=False, allow_infinity=False),
)
# What English accepts besides: NaN and the infinities print as Python writes them ('$nan', '$inf').
english_amounts = st.one_of(amounts, st.sampled_from((math.nan, math.inf, -math.inf)))
CODES = ("USD", "CNY", "EUR", "XYZ")  # a dollar, a yuan, a sign only CLDR knows, a code with no sign
codes = st.sampled_from(CODES)
rates = st.one_of(
    st.sampled_from((7.2734, 7.0, 0.9, 1.0, 150.0, 1e-3)),
    st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False),
)


@st.composite
def shown(draw: st.DrawFn) -> Money:
    """A currency amounts are shown in: USD (nothing converted) or another currency at a rate."""
    code = draw(st.sampled_from(("USD", "CNY", "EUR", "XYZ")))
    if code == "USD":
        return Money()
    rate = FxRate(code, draw(rates), date(2025, 2, 28), "test", given=draw(st.booleans()))
    return Money(code, rate, (FxRate("CNY", 7.2734, None, "test"),) if code != "CNY" else ())


@contextmanager
def chinese() -> Iterator[None]:
    use_language("zh")
    try:
        yield
    finally:
        use_language("en")


# --- English: each caller exactly as before ------------------------------------------------------------


@settings(max_examples=400)
@given(amount=english_amounts, code=codes)
@example(amount=-0.001, code="USD")  # Python's format keeps the minus of an amount rounded to zero: '$-0.00'
@example(amount=-0.0, code="USD")
def test_units_money_in_english_is_frozen(amount: float, code: str) -> None:
    assert units.format_money(amount, code) == _frozen_units_format_money(amount, code)
    assert units.format_money(amount) == _frozen_units_format_money(amount)


@settings(max_examples=400)
@given(amount=st.one_of(english_amounts, st.none()))
@example(amount=-0.0)  # a zero has no sign: '$0'
def test_units_format_usd_in_english_is_frozen(amount: float | None) -> None:
    assert units.format_usd(amount) == _frozen_format_usd(amount)


@settings(max_examples=400)
@given(display=shown(), usd=st.one_of(english_amounts, st.none()))
def test_plan_money_in_english_is_frozen(display: Money, usd: float | None) -> None:
    assert display.format(usd) == _frozen_money_format(display, usd)
    with showing(display):
        assert currency.money(usd) == _frozen_money_format(display, usd)
        assert currency.symbol() == _frozen_symbol(display)
        if usd is not None:
            assert currency.cents(usd) == _frozen_cents(display, usd)
            assert currency.rounded(usd) == _frozen_rounded(display, usd)


@given(usd=english_amounts)
def test_outside_showing_plan_money_is_dollars_as_before(usd: float) -> None:
    assert currency.money(usd) == _frozen_format_usd(usd)
    assert currency.cents(usd) == _frozen_cents(Money(), usd)
    assert currency.rounded(usd) == _frozen_rounded(Money(), usd)
    assert currency.symbol() == "$"


# --- Chinese: the same digits, CLDR's signs, as before -------------------------------------------------


def _same_as_before(live: Callable[[], str], frozen: Callable[[], str]) -> None:
    """`live()` gives what `frozen()` gave, where `frozen()` gave anything: before, Babel raised on an amount
    with more digits than the default decimal context holds (28), and there is no output to keep."""
    try:
        expected = frozen()
    except InvalidOperation:
        return
    assert live() == expected


@settings(max_examples=200)
@given(amount=amounts, code=codes)
def test_units_money_in_chinese_is_frozen(amount: float, code: str) -> None:
    with chinese():
        _same_as_before(
            lambda: units.format_money(amount, code), lambda: _frozen_zh_units_format_money(amount, code)
        )
        _same_as_before(lambda: units.format_usd(amount), lambda: _frozen_zh_format_usd(amount))


@settings(max_examples=200)
@given(display=shown(), usd=st.one_of(amounts, st.none(), st.just(math.nan)))
def test_plan_money_in_chinese_is_frozen(display: Money, usd: float | None) -> None:
    with chinese():
        _same_as_before(lambda: display.format(usd), lambda: _frozen_zh_money_format(display, usd))
        with showing(display):
            assert currency.symbol() == _frozen_zh_symbol(display.currency)
            if usd is None or math.isnan(usd):
                return
            amount = display.amount(usd)
            _same_as_before(
                lambda: currency.cents(usd), lambda: _frozen_zh_money(amount, display.currency, "cents")
            )
            _same_as_before(
                lambda: currency.rounded(usd), lambda: _frozen_zh_money(amount, display.currency, "rounded")
            )


@pytest.mark.parametrize(
    ("usd", "english", "zh"),
    [
        (1234.5, "$1,234", "US$1,234"),
        (12.345, "$12.35", "US$12.35"),
        (0.0123, "$0.0123", "US$0.0123"),
        (-5.5, "$-5.50", "-US$5.50"),
        (0.00001234, "$1.23e-05", "US$1.23e-05"),
    ],
)
def test_the_frozen_reference_is_what_users_read(usd: float, english: str, zh: str) -> None:
    """The reference itself, pinned by hand: a sweep against a wrong copy would prove nothing."""
    assert _frozen_format_usd(usd) == english
    assert _frozen_zh_format_usd(usd) == zh
    at_par = Money("CNY", FxRate("CNY", 1.0, None, "test"))
    assert _frozen_money_format(at_par, usd) == english.replace("$", "¥")


@pytest.mark.parametrize("amount", [1e26, -3.5e29, 1.7976931348623157e308])
def test_chinese_lays_out_amounts_with_more_digits_than_decimal_s_default(amount: float) -> None:
    """Babel quantizes in the current decimal context, whose 28 digits raised InvalidOperation (a traceback
    from `plan --lang zh` on an absurd workload); every digit of a double now fits."""
    sign = "-" if amount < 0 else ""
    with chinese():
        assert units.format_usd(amount) == f"{sign}US${abs(amount):,.0f}"
        assert units.format_money(amount, "CNY") == f"{sign}¥{abs(amount):,.2f}"


def test_english_money_imports_neither_babel_nor_decimal() -> None:
    """Only Babel's path needs decimal (about 6 ms of start-up here; benchmarks/plan_speed.py times it)."""
    import subprocess
    import sys

    code = (
        "import sys; from gpuwise.plan.currency import cents, money, rounded, symbol; "
        "from gpuwise.units import format_money; "
        "money(1.5); cents(2.0); rounded(3.0); symbol(); format_money(5.0, 'CNY'); "
        "print(sorted({'babel', 'decimal'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_chinese_numbers_beyond_28_digits_are_laid_out_too() -> None:
    from gpuwise.locale.formats import format_number

    with chinese():
        assert format_number(1e30, 1) == f"{1e30:,.1f}"
        assert format_number(-1.7976931348623157e308) == f"{-1.7976931348623157e308:,.0f}"
