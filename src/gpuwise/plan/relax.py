"""The "nothing qualifies" answer: which constraint to relax, and what relaxing it would allow.

Configurations that break exactly one relaxable constraint are tallied per constraint, with the cost and
hours range that the budget or deadline would have to admit. `RelaxTally.results` turns the tally into
`Relaxation`s, most options first.
"""

from __future__ import annotations

import math

from gpuwise.locale import _, ngettext
from gpuwise.plan.models import REASONS, Constraints, Relaxation

CONSTRAINT_KEYS = {  # rejection reason -> the workload key (or option) that sets it
    "currency": "--exchange-rate",
    "provider": "providers",
    "region": "regions",
    "gpu": "gpus",
    "gpu_count": "--gpu NAME:N",
    "max_gpus": "max_gpus",
    "pricing": "--spot/--on-demand",
    "spot_not_allowed": "interruptible",
    "over_latency": "max_latency_s",
    "over_ttft": "max_ttft_s",
    "over_commitment": "commitment_months",
    "over_deadline": "deadline_hours",
    "over_budget": "budget_usd",
}


class RelaxTally:
    """Tally of configurations that break exactly one relaxable constraint."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.min_cost: dict[str, float] = {}
        self.max_cost: dict[str, float] = {}
        self.min_hours: dict[str, float] = {}
        self.max_hours: dict[str, float] = {}
        self.min_value: dict[str, float] = {}  # the figure a latency target would have to admit, s
        self.max_value: dict[str, float] = {}

    def add(
        self, reason: str, cost: float | None = None, hours: float | None = None, value: float | None = None
    ) -> None:
        self.count[reason] = self.count.get(reason, 0) + 1
        if value is not None:
            self.min_value[reason] = min(self.min_value.get(reason, math.inf), value)
            self.max_value[reason] = max(self.max_value.get(reason, -math.inf), value)
        if cost is not None:
            self.min_cost[reason] = min(self.min_cost.get(reason, math.inf), cost)
            self.max_cost[reason] = max(self.max_cost.get(reason, -math.inf), cost)
        if hours is not None:
            self.min_hours[reason] = min(self.min_hours.get(reason, math.inf), hours)
            self.max_hours[reason] = max(self.max_hours.get(reason, -math.inf), hours)

    def results(self, constraints: Constraints) -> tuple[Relaxation, ...]:
        out = [
            Relaxation(
                reason=reason,
                constraint=CONSTRAINT_KEYS[reason],
                options=n,
                suggestion=self._suggestion(reason, n, constraints),
            )
            for reason, n in self.count.items()
        ]
        return sorted_relaxations(out)

    def _suggestion(self, reason: str, n: int, constraints: Constraints) -> str:
        if reason == "over_budget":
            lo, hi = _ceil_money(self.min_cost[reason]), _ceil_money(self.max_cost[reason])
            return _raise_text("budget_usd", f"${lo:,.0f}", f"${hi:,.0f}", n, lo < hi)
        if reason == "over_deadline":
            lo, hi = _ceil1(self.min_hours[reason]), _ceil1(self.max_hours[reason])
            return _raise_text("deadline_hours", f"{lo:g}", f"{hi:g}", n, lo < hi)
        if reason in ("over_latency", "over_ttft") and reason in self.min_value:
            lo, hi = _ceil2(self.min_value[reason]), _ceil2(self.max_value[reason])
            key = CONSTRAINT_KEYS[reason]
            return _raise_text(key, f"{lo:g} s", f"{hi:g} s", n, lo < hi)
        if reason == "spot_not_allowed":
            return ngettext(
                "setting interruptible = true would allow {count} spot option",
                "setting interruptible = true would allow {count} spot options",
                n,
            ).format(count=n)
        if reason == "currency":
            return ngettext(
                "giving --exchange-rate (e.g. CNY=0.14), or --currency CNY for the bundled dated rate, "
                "would allow {count} option",
                "giving --exchange-rate (e.g. CNY=0.14), or --currency CNY for the bundled dated rate, "
                "would allow {count} options",
                n,
            ).format(count=n)
        if reason == "max_gpus":
            return ngettext(
                "raising max_gpus (now {limit}) would allow {count} option",
                "raising max_gpus (now {limit}) would allow {count} options",
                n,
            ).format(limit=constraints.max_gpus, count=n)
        return ngettext(
            "removing the {key} constraint would allow {count} option",
            "removing the {key} constraint would allow {count} options",
            n,
        ).format(key=CONSTRAINT_KEYS[reason], count=n)


def sorted_relaxations(relaxations: list[Relaxation]) -> tuple[Relaxation, ...]:
    """Most options first; ties in the order the reasons are checked."""
    return tuple(sorted(relaxations, key=lambda r: (-r.options, _reason_rank(r.reason))))


def _reason_rank(reason: str) -> int:
    return REASONS.index(reason) if reason in REASONS else len(REASONS)


def _raise_text(key: str, lo: str, hi: str, n: int, differ: bool) -> str:
    """'raising budget_usd to $14 would allow 1 option, to $354 all 241'."""
    if n == 1 or not differ:
        return ngettext(
            "raising {key} to {value} would allow {count} option",
            "raising {key} to {value} would allow {count} options",
            n,
        ).format(key=key, value=hi, count=n)
    return _("raising {key} to {low} would allow 1 option, to {high} all {count}").format(
        key=key, low=lo, high=hi, count=n
    )


def _ceil_money(x: float) -> float:
    return float(math.ceil(x))


def _ceil1(x: float) -> float:
    return math.ceil(x * 10) / 10


def _ceil2(x: float) -> float:
    return math.ceil(x * 100) / 100


def latency_fails(latency: tuple[float, float] | None, constraints: Constraints) -> tuple[str, ...]:
    """The latency targets a serving configuration misses: `latency` is its (request_s, ttft_s) at the
    workload's concurrency (None: not a serving estimate, nothing to check)."""
    if latency is None:
        return ()
    request_s, ttft_s = latency
    fails: list[str] = []
    if constraints.max_latency_s is not None and request_s > constraints.max_latency_s:
        fails.append("over_latency")
    if constraints.max_ttft_s is not None and ttft_s > constraints.max_ttft_s:
        fails.append("over_ttft")
    return tuple(fails)
