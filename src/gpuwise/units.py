"""Units in one place: parse and format bytes, durations, money and dates.

GiB (2**30 bytes) and GB (10**9 bytes) are different words here, as everywhere in gpuwise.
Must not import anything outside the standard library.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime

from gpuwise.locale import _, formats

KIB = 1024
MIB = 1024**2
GIB = 1024**3
GB = 1000**3
MB = 1000**2

_UNIT_WORDS = r"s|sec|secs|m|min|mins|h|hr|hrs|d|day|days|w|wk|wks|week|weeks"
_DURATION = re.compile(rf"^\s*(\d+(?:\.\d+)?)\s*({_UNIT_WORDS})?\s*$", re.I)
# '1h30m', '2d 12h', '1w2d': parts in descending order, each with its unit (as `sleep` and Go's durations)
_DURATION_PART = re.compile(rf"\s*(\d+(?:\.\d+)?)\s*({_UNIT_WORDS})(?![a-z])", re.I)
_DURATION_S = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "wk": 604800,
    "wks": 604800,
    "week": 604800,
    "weeks": 604800,
}


def bytes_to_gib(n: float) -> float:
    return n / GIB


def gib_to_bytes(gib: float) -> float:
    return gib * GIB


def mib_to_bytes(mib: float) -> int:
    return round(mib * MIB)


def parse_duration_s(text: str, *, default_unit: str = "s") -> float:
    """'90', '90s', '30m', '2h', '1.5d', '1h30m', '2d 12h', '1w' -> seconds. Raises ValueError otherwise.

    A bare number takes `default_unit`. In a compound duration every part names its unit and the units
    go from largest to smallest, each at most once ('30m1h' and '1h1h' are refused: likely typos)."""
    m = _DURATION.match(text)
    if m:
        value = float(m.group(1))
        unit = (m.group(2) or default_unit).lower()
        return value * _DURATION_S[unit]
    total = 0.0
    position = 0
    last_scale = math.inf
    for part in _DURATION_PART.finditer(text):
        scale = _DURATION_S[part.group(2).lower()]
        if part.start() != position or scale >= last_scale:
            break
        total += float(part.group(1)) * scale
        last_scale = scale
        position = part.end()
    else:
        if position and not text[position:].strip():
            return total
    raise ValueError(
        _("not a duration: {text} (expected e.g. 90s, 30m, 2h, 1d or 1h30m)").format(text=repr(text))
    )


def format_gib(n_bytes: float, digits: int = 1) -> str:
    return f"{n_bytes / GIB:.{digits}f} GiB"


def format_bytes(n_bytes: float) -> str:
    """Human-readable binary size: 512 B, 3.2 KiB, 80.0 GiB."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_duration(seconds: float) -> str:
    """Compact duration: 45 s, 12 min, 3.4 h, 2.1 d."""
    if not math.isfinite(seconds):
        return "∞"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def format_hours(hours: float) -> str:
    return format_duration(hours * 3600)


# units.format_money gives only the dollar its sign: any other currency reads as its code after the amount
# ('1,234.56 CNY'), as catalog listings print offers priced in several currencies (Chinese: CLDR's sign)
_DOLLAR_SIGN = {"USD": "$"}


def format_money(amount: float, currency: str = "USD") -> str:
    """$1,234.56 for USD (whole dollars from $10,000); '1,234.56 CNY' for anything else (never converted).
    Rounded and laid out by gpuwise.locale.formats, in the current language."""
    return formats.format_money(
        amount, currency, "rounded" if currency == "USD" else "cents", signs=_DOLLAR_SIGN
    )


def format_usd(x: float | None) -> str:
    """Dollars for tables where small amounts must differ (plan's rows); `format_money` rounds to cents.
    Dollars with enough digits that small totals differ: $1,234 · $12.34 · $0.0123; '?' when unknown."""
    if x is None or math.isnan(x):
        return "?"
    return formats.format_money(x, "USD", "significant")


def format_run_hours(h: float | None) -> str:
    """Wall-clock time with enough digits that short runs differ: 42 s · 7.5 min · 2.35 h · 62 days."""
    if h is None or math.isnan(h):
        return "?"
    if h < 1 / 60:
        return f"{h * 3600:.0f} s"
    if h < 1:
        return f"{h * 60:.1f} min"
    if h < 10:
        return f"{h:.2f} h"
    if h < 48:
        return f"{h:.1f} h"
    return _("{hours} h ({days} days)").format(hours=f"{h:,.0f}", days=f"{h / 24:,.1f}")


def age_days(as_of: date, today: date) -> int:
    return (today - as_of).days


def parse_iso_date(text: str) -> date:
    """'2026-03-01' or an ISO timestamp -> date. Raises ValueError."""
    text = text.strip()
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()


class RunSpan:
    """Hours, GPU-hours and cost of one run from its start and end (epoch seconds), GPU count and hourly
    price: one rule for the ledger's rows and the report's (unknown in, unknown out; a clock that ran
    backwards counts 0 h). Mixed into dataclasses that declare these four fields."""

    started_at: float
    ended_at: float | None
    gpus: int | None
    price_usd_per_hour: float | None

    @property
    def hours(self) -> float | None:
        return None if self.ended_at is None else max(0.0, self.ended_at - self.started_at) / 3600

    @property
    def gpu_hours(self) -> float | None:
        h = self.hours
        return None if h is None or self.gpus is None else h * self.gpus

    @property
    def cost_usd(self) -> float | None:
        h = self.hours
        return None if h is None or self.price_usd_per_hour is None else h * self.price_usd_per_hour
