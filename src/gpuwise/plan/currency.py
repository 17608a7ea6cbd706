"""Money in the user's currency (`--currency CNY|USD`): a bundled, dated, cited exchange-rate table, the
user's `--exchange-rate` overrides, and the formatter every plan amount goes through.

The planner works in USD throughout (the JSON's ``*_usd`` fields keep that meaning). A display currency
only changes how amounts are printed: each is converted at one rate, and the rate, its date and its source
are printed with the plan (``rate_line``) and carried in the JSON (``to_json``). Nothing is converted
without saying so: an offer priced in another currency is ranked only with a rate the user gave or, when
`--currency` is given, the bundled one, and its notes name that rate.

The display currency is a context variable set around rendering (``showing``), so the shared formatters
(``money``) need no extra argument; its default is USD, formatted exactly as ``units.format_usd``.

Pure apart from that context variable; amounts are rounded and laid out by ``gpuwise.locale.formats``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date
from typing import Any

from gpuwise.errors import UsageError
from gpuwise.locale import _, formats
from gpuwise.units import format_usd

CURRENCIES = ("USD", "CNY")
SYMBOLS = formats.ENGLISH_SYMBOLS  # one table of the English signs, shared with the locale's formatting


@dataclass(frozen=True)
class FxRate:
    """Units of ``currency`` per US dollar, with where the figure comes from and the day it holds for."""

    currency: str
    per_usd: float
    as_of: date | None
    source: str
    given: bool = False  # True: --exchange-rate on the command line, not the bundled table

    @property
    def usd_per_unit(self) -> float:
        return 1.0 / self.per_usd

    def text(self, today: date | None = None) -> str:
        """'1 USD = 7.2734 CNY (Federal Reserve …, 2025-02-28; 641 days old)'."""
        if self.given:
            return _("1 USD = {rate} {currency} (given with --exchange-rate)").format(
                rate=f"{self.per_usd:.6g}", currency=self.currency
            )
        when = formats.format_date(self.as_of) if self.as_of else _("date unknown")
        age = ""
        if today is not None and self.as_of is not None:
            days = (today - self.as_of).days
            age = _("; {days} days old: --exchange-rate {currency}=USD-PER-UNIT gives today's").format(
                days=days, currency=self.currency
            )
        return _("1 USD = {rate} {currency} ({source}, {when}{age})").format(
            rate=f"{self.per_usd:.6g}", currency=self.currency, source=self.source, when=when, age=age
        )


# The bundled table: one row per currency. The Federal Reserve's G.5 release (the monthly averages of its
# H.10 daily noon buying rates in New York) as FRED series EXCHUS shows it, read 2026-11-30 from a stored
# copy of alfred.stlouisfed.org/series?seid=EXCHUS (vintage updated 2025-03-03): February 2025, 7.2734 yuan
# per dollar. Dated the month's last day. The newest figure that copy holds; every plan prints its age.
BUNDLED: dict[str, FxRate] = {
    "CNY": FxRate(
        currency="CNY",
        per_usd=7.2734,
        as_of=date(2025, 2, 28),
        source="Federal Reserve G.5/H.10, February 2025 average of daily noon buying rates (FRED EXCHUS)",
    ),
}


@dataclass(frozen=True)
class Money:
    """The currency amounts are shown in; ``rate`` is None for USD (nothing converted)."""

    currency: str = "USD"
    rate: FxRate | None = None
    # rates for prices in other currencies (an offer's own), used to bring them to this one
    others: tuple[FxRate, ...] = ()

    def usd_from(self, amount: float, currency: str) -> float | None:
        """A price in ``currency`` as USD at the rate in use (None: no rate known for it)."""
        if currency == "USD":
            return amount
        for rate in (self.rate, *self.others):
            if rate is not None and rate.currency == currency:
                return amount / rate.per_usd
        return None

    def amount(self, usd: float) -> float:
        return usd if self.rate is None else usd * self.rate.per_usd

    @property
    def code(self) -> str:
        """The currency amounts are printed in: USD where nothing is converted (no rate)."""
        return "USD" if self.rate is None else self.currency

    def format(self, usd: float | None) -> str:
        """The amount in this currency, with the digits `format_usd` gives dollars ('?' when unknown)."""
        if usd is None or math.isnan(usd):
            return format_usd(usd)
        return formats.format_money(self.amount(usd), self.code, "significant")

    def rate_line(self, today: date | None = None) -> str:
        """The line printed with every plan shown in another currency (empty for USD)."""
        if self.rate is None:
            return ""
        return _("Money in {currency} ({symbol}): USD prices converted at {rate}.").format(
            currency=self.currency,
            symbol=SYMBOLS.get(self.currency, self.currency),
            rate=self.rate.text(today),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON's ``money`` block: the currency shown and the rate used (null rate for USD)."""
        if self.rate is None:
            return {"currency": self.currency, "rate": None}
        return {
            "currency": self.currency,
            "rate": {
                "per_usd": self.rate.per_usd,
                "usd_per_unit": self.rate.usd_per_unit,
                "as_of": self.rate.as_of.isoformat() if self.rate.as_of else None,
                "source": "--exchange-rate" if self.rate.given else self.rate.source,
                "given": self.rate.given,
            },
        }


_USD = Money()
_SHOWING: ContextVar[Money | None] = ContextVar("gpuwise_money", default=None)


def money(usd: float | None) -> str:
    """A USD amount in the currency being shown (USD unless inside ``showing``)."""
    return current().format(usd)


def cents(usd: float) -> str:
    """'$1,234.56' (always cents, as the report's sentences print money) in the currency being shown."""
    shown = current()
    return formats.format_money(shown.amount(usd), shown.code, "cents")


def rounded(usd: float) -> str:
    """``units.format_money`` (cents under 10 000, whole units above) in the currency being shown."""
    shown = current()
    return formats.format_money(shown.amount(usd), shown.code, "rounded")


def symbol() -> str:
    """'$' or '¥' ('US$' or '¥' in Chinese): the sign of the currency being shown (for headings such as
    '$/h')."""
    return formats.currency_symbol(current().currency)


def current() -> Money:
    """The currency amounts are being shown in (USD outside ``showing``)."""
    return _SHOWING.get() or _USD


@contextmanager
def showing(display: Money) -> Iterator[None]:
    """Print amounts in ``display``'s currency inside the block."""
    token = _SHOWING.set(display)
    try:
        yield
    finally:
        _SHOWING.reset(token)


def check_currency(text: str) -> str:
    """'cny' -> 'CNY'; an unknown code is refused with the ones gpuwise can show."""
    code = text.strip().upper()
    if code not in CURRENCIES:
        raise UsageError(
            _("--currency {value} is not a currency gpuwise can show").format(value=repr(text)),
            why=_("plans are shown in US dollars or Chinese yuan"),
            fix=_("use one of: {currencies}").format(currencies=", ".join(CURRENCIES)),
        )
    return code


def rate_for(currency: str, given_usd_per_unit: Mapping[str, float]) -> FxRate | None:
    """The rate for ``currency``: the user's (--exchange-rate, USD per unit) first, then the bundled one."""
    if currency == "USD":
        return None
    if currency in given_usd_per_unit:
        return FxRate(currency, 1.0 / given_usd_per_unit[currency], None, "--exchange-rate", given=True)
    return BUNDLED.get(currency)


# A rate over 3x off the bundled one is a mistake, not a market move: CNY per USD stayed within about
# 6.1-7.4 over 2015-2025 (Federal Reserve H.10 series, FRED EXCHUS).
_FX_FAR = 3.0


def _near(rate: float, bundled: float) -> bool:
    return 1 / _FX_FAR <= rate / bundled <= _FX_FAR


def check_given_rates(given_usd_per_unit: Mapping[str, float]) -> None:
    """Refuse what `--exchange-rate` cannot mean. The commonest slip, the rate written the way rates are
    quoted (CNY=7.2 for 1 USD = 7.2 CNY), showed every yuan price about 50 times off, silently: a rate far
    from the bundled one is refused, with the inverse offered when that is near; so is USD, which is what
    every rate is in."""
    for code, usd_per_unit in given_usd_per_unit.items():
        if code == "USD":
            raise UsageError(
                _("--exchange-rate USD={rate}: every rate is already in US dollars").format(
                    rate=f"{usd_per_unit:g}"
                ),
                fix=_("give the other currency's rate, US dollars per unit, e.g. --exchange-rate CNY=0.14"),
            )
        bundled = BUNDLED.get(code)
        if bundled is None or _near(usd_per_unit, bundled.usd_per_unit):
            continue
        fields = {"code": code, "rate": f"{usd_per_unit:g}", "bundled": f"{bundled.usd_per_unit:.4g}"}
        inverted = _near(1 / usd_per_unit, bundled.usd_per_unit)
        raise UsageError(
            _("--exchange-rate {code}={rate} says 1 {code} = {rate} USD, far from the bundled rate").format(
                **fields
            ),
            why=_(
                "--exchange-rate is US dollars per unit of the currency (bundled: {code}={bundled})"
            ).format(**fields),
            fix=(
                _("if 1 USD buys {rate} {code}, write --exchange-rate {code}={inverse}").format(
                    **fields, inverse=f"{1 / usd_per_unit:.4g}"
                )
                if inverted
                else _("check the figure, e.g. --exchange-rate {code}={bundled}").format(**fields)
            ),
        )


def display(currency: str, given_usd_per_unit: Mapping[str, float]) -> Money:
    """The Money a plan is shown in; every currency in CURRENCIES has a bundled rate."""
    codes = sorted((set(BUNDLED) | set(given_usd_per_unit)) - {currency, "USD"})
    others = tuple(r for r in (rate_for(c, given_usd_per_unit) for c in codes) if r is not None)
    return Money(currency, rate_for(currency, given_usd_per_unit), others)


def offer_money(value: float | None, currency: str) -> str | None:
    """Inside ``showing``: an offer's price (in its own ``currency``) in the shown currency; None outside,
    where callers keep their own format. A currency with no rate is shown as it is, saying so."""
    shown = _SHOWING.get()
    if shown is None:
        return None
    if value is None:
        return "—"
    usd = shown.usd_from(value, currency)
    if usd is None:
        return _("{amount} {currency} (no rate)").format(amount=f"{value:,.2f}", currency=currency)
    return shown.format(usd)


def offers_in(offers: list[Any], shown: Money, *, spot: bool) -> list[Any]:
    """Catalog offers sorted by their price in the shown currency (those without a rate or price last)."""

    def key(o: Any) -> tuple[bool, float]:
        price = o.spot_price_usd_per_hour if spot else o.price_usd_per_hour
        usd = None if price is None else shown.usd_from(price, o.currency)
        return (usd is None, usd or 0.0)

    return sorted(offers, key=key)


def offer_json_in(o: Any, shown: Money) -> dict[str, Any]:
    """An offer's ``in_currency`` block: its prices in the shown currency (null where no rate or price)."""

    def conv(price: float | None) -> float | None:
        usd = None if price is None else shown.usd_from(price, o.currency)
        return None if usd is None else shown.amount(usd)

    return {
        "currency": shown.currency,
        "price_per_hour": conv(o.price_usd_per_hour),
        "spot_price_per_hour": conv(o.spot_price_usd_per_hour),
    }


def rates_json(shown: Money) -> dict[str, Any]:
    """The rates a listing converted at: the shown currency's and the others'."""
    block = shown.to_json()
    block["other_rates"] = {
        r.currency: {"per_usd": r.per_usd, "as_of": _iso(r.as_of), "source": r.source, "given": r.given}
        for r in shown.others
    }
    return block


def other_rate_lines(shown: Money, today: date | None = None) -> list[str]:
    """'CNY prices converted at 1 USD = …' for each other currency a listing converts."""
    return [
        _("{currency} prices converted at {rate}.").format(currency=r.currency, rate=r.text(today))
        for r in shown.others
    ]


def bundled_for_ranking(given_usd_per_unit: Mapping[str, float], today: date) -> dict[str, tuple[float, str]]:
    """With --currency: every bundled rate the user did not override, as (USD per unit, the note's text), so
    offers in those currencies are ranked with USD ones, each naming the rate it was converted at."""
    out: dict[str, tuple[float, str]] = {}
    for code, rate in BUNDLED.items():
        if code not in given_usd_per_unit:
            out[code] = (rate.usd_per_unit, _("bundled rate: {rate}").format(rate=rate.text(today)))
    return out


def ranking_lines(bundled: Mapping[str, tuple[float, str]], shown_in: Money) -> list[str]:
    """The header lines for bundled rates used to rank offers priced in another currency."""
    return [
        _("Offers priced in {currency} ranked with the rest at the {note}.").format(currency=code, note=note)
        for code, (_rate, note) in sorted(bundled.items())
        if code != shown_in.currency or shown_in.rate is None
    ]


_OPTION_AMOUNTS = (
    ("price_per_hour", "price_usd_per_hour"),
    ("cost", "cost_usd"),
    ("cost_low", "cost_usd_low"),
    ("cost_high", "cost_usd_high"),
)


def annotate_plan_json(
    doc: dict[str, Any], shown_in: Money, bundled: Mapping[str, tuple[float, str]]
) -> None:
    """Add to `plan --json` the ``money`` block (currency shown, rate used, bundled ranking rates) and, when
    the currency is not USD, each option's amounts in it (``in_currency``); the ``*_usd`` fields stay."""
    block = shown_in.to_json()
    block["ranking_rates"] = {
        code: {"usd_per_unit": rate, "source": BUNDLED[code].source, "as_of": _iso(BUNDLED[code].as_of)}
        for code, (rate, _) in sorted(bundled.items())
    }
    doc["money"] = block
    if shown_in.rate is None:
        return
    for option in doc.get("options", []):
        option["in_currency"] = {"currency": shown_in.currency} | {
            name: None if option.get(key) is None else shown_in.amount(option[key])
            for name, key in _OPTION_AMOUNTS
        }


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None
