"""Option values several commands parse alike: NAME=NUMBER pairs (`--exchange-rate CNY=0.14`, plan's
`--spot-interruptions-per-hour gcp=0.05`). Bad values are bad input (exit 2) with the fix."""

from __future__ import annotations

from gpuwise.errors import UsageError
from gpuwise.locale import _


def parse_pairs(values: list[str], option: str, *, upper: bool, example: str) -> dict[str, float]:
    """`values` as {NAME: positive number}; names upper- or lower-cased."""
    out: dict[str, float] = {}
    for value in values:
        key, sep, number = value.partition("=")
        try:
            rate = float(number)
        except ValueError:
            rate = -1.0
        if not sep or not key.strip() or not (rate > 0) or rate == float("inf"):
            raise UsageError(
                _("{option} {value} is not NAME=NUMBER with a positive number").format(
                    option=option, value=repr(value)
                ),
                fix=_("write e.g. {option} {example}").format(option=option, example=example),
            )
        out[key.strip().upper() if upper else key.strip().lower()] = rate
    return out


# A rate over 3x off the bundled one is a mistake, not a market move: CNY per USD stayed within about
# 6.1-7.4 over 2015-2025 (Federal Reserve H.10 series, FRED EXCHUS).
_FX_FAR = 3.0


def _near(rate: float, bundled: float) -> bool:
    return 1 / _FX_FAR <= rate / bundled <= _FX_FAR


def exchange_rates(values: list[str]) -> dict[str, float]:
    """`--exchange-rate CODE=USD_PER_UNIT`, as plan, catalog and report take it.

    The commonest mistake, the rate written the other way round (CNY=7.2 for 1 USD = 7.2 CNY), would
    show every price 50 times too low or high: a rate far from the bundled one is refused, with the
    inverse offered; so is USD, which is what every rate is in."""
    from gpuwise.plan.currency import BUNDLED

    rates = parse_pairs(values, "--exchange-rate", upper=True, example="CNY=0.14")
    for code, usd_per_unit in rates.items():
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
    return rates
