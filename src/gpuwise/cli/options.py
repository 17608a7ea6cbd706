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


def exchange_rates(values: list[str]) -> dict[str, float]:
    """`--exchange-rate CODE=USD_PER_UNIT`, as plan, catalog and report take it (a rate the wrong way round
    is refused)."""
    from gpuwise.plan.currency import check_given_rates

    rates = parse_pairs(values, "--exchange-rate", upper=True, example="CNY=0.14")
    check_given_rates(rates)
    return rates
