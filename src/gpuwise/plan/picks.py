"""The three headline picks of a plan: cheapest, fastest and balanced (the knee of the Pareto front).

Rules (README "gpuwise plan" says the same to users):

* **Worth renting.** An option is *not worth renting* when another option costing at most
  ``SIMILAR_COST`` (1.5×) as much finishes more than ``SLOWER_LIMIT`` (5×) sooner: paying up to 50% more
  to be done in a fifth of the time is a trade nearly everyone takes — a run that lasts weeks longer also
  risks more (a crash, a preemption, a price change, the person waiting). Such options stay in the table
  (ranked where the objective puts them) but are never a headline pick. It holds with or without a
  deadline: a deadline bounds the time, not the waste. The limit is 5× rather than 10× so that a genuine
  cheaper-but-slower choice (2–4× slower for a third less) still wins "cheapest", while a 62-day run on one
  old GPU beside a 1.5-day run at a similar price never does.
* **cheapest**: the lowest total among worth-renting options (ties: fewer hours).
* **fastest**: the fewest hours (ties: lower total). Always worth renting.
* **balanced**: among worth-renting options on the Pareto front, the one with the smallest
  cost × hours. On a front drawn in log–log axes this is where the front's slope crosses −1: from it, a
  step toward speed costs a larger share of money than the share of time it saves, and a step toward
  savings costs a larger share of time than the share of money it saves. It is scale-free (dollars or
  cents, hours or days give the same pick).

Every pick is on the Pareto front: a worth-renting option that another option beats on both cost and time
has a beater that is itself worth renting (its similar-cost window is a subset), so the minima above are
undominated.

Pure; standard library only.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

SIMILAR_COST = 1.5  # "of similar cost": at most this multiple of the option's total
SLOWER_LIMIT = 5.0  # an option this many times slower than a similar-cost one is not a headline pick

PICK_NAMES = ("cheapest", "fastest", "balanced")


@dataclass(frozen=True)
class Picks:
    """Indices into the points given to :func:`choose_picks` (None when there are no points)."""

    cheapest: int | None
    fastest: int | None
    balanced: int | None
    # index of the absolute cheapest when it is not the cheapest pick (it is not worth renting), else None
    passed_over: int | None = None
    # for the passed-over option: the similar-cost option that is so much faster
    passed_for: int | None = None

    def as_dict(self) -> dict[str, int | None]:
        return {"cheapest": self.cheapest, "fastest": self.fastest, "balanced": self.balanced}


def fastest_within(points: Sequence[tuple[float, float]]) -> list[float]:
    """For each (cost, hours): the fewest hours among points costing at most SIMILAR_COST × its cost."""
    order = sorted(range(len(points)), key=lambda i: points[i][0])
    costs = [points[i][0] for i in order]
    prefix_min: list[float] = []
    best = math.inf
    for i in order:
        best = min(best, points[i][1])
        prefix_min.append(best)
    out = [math.inf] * len(points)
    for i, (cost, _) in enumerate(points):
        j = bisect.bisect_right(costs, cost * SIMILAR_COST * (1 + 1e-12)) - 1
        out[i] = prefix_min[j]
    return out


def worth_renting(points: Sequence[tuple[float, float]]) -> list[bool]:
    """True where no option of similar cost is more than SLOWER_LIMIT× faster (see the module docstring)."""
    best = fastest_within(points)
    return [hours <= SLOWER_LIMIT * b * (1 + 1e-9) for (_, hours), b in zip(points, best, strict=True)]


def choose_picks(
    points: Sequence[tuple[float, float]], pareto: Sequence[bool], worth: Sequence[bool] | None = None
) -> Picks:
    """The three picks over (cost, hours) points, with `pareto` the front flags of the same points and
    `worth` their :func:`worth_renting` flags (computed here when not given)."""
    if not points:
        return Picks(None, None, None)
    ok = worth_renting(points) if worth is None else worth
    idx = range(len(points))
    cheapest = min((i for i in idx if ok[i]), key=lambda i: (points[i][0], points[i][1], i))
    fastest = min(idx, key=lambda i: (points[i][1], points[i][0], i))
    front = [i for i in idx if ok[i] and pareto[i]] or [cheapest, fastest]
    balanced = min(front, key=lambda i: (_product(points[i]), points[i][0], i))
    absolute = min(idx, key=lambda i: (points[i][0], points[i][1], i))
    passed_over = passed_for = None
    if points[absolute][0] < points[cheapest][0]:
        passed_over = absolute
        limit = points[absolute][0] * SIMILAR_COST * (1 + 1e-12)
        passed_for = min((i for i in idx if points[i][0] <= limit), key=lambda i: (points[i][1], i))
    return Picks(cheapest, fastest, balanced, passed_over, passed_for)


def _product(point: tuple[float, float]) -> float:
    cost, hours = point
    return max(cost, 1e-12) * max(hours, 1e-12)


def pareto_flags(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For (cost, hours) points: True where no other point is both cheaper and faster (ties stay on)."""
    order = sorted(range(len(points)), key=points.__getitem__)
    flags = [False] * len(points)
    best_hours = math.inf
    prev_key: tuple[float, float] | None = None
    prev_flag = False
    for i in order:
        key = points[i]
        flag = prev_flag if key == prev_key else key[1] < best_hours
        best_hours = min(best_hours, key[1])
        prev_key, prev_flag = key, flag
        flags[i] = flag
    return flags


RULE_TEXT = (
    f"picks skip options more than {SLOWER_LIMIT:g}× slower than another costing at most "
    f"{SIMILAR_COST:g}× as much; balanced = the Pareto option with the smallest cost × hours "
    "(where a 1% saving in time costs 1% more money)"
)


def rule_text() -> str:
    """RULE_TEXT in the current language (the JSON's picks_rule keeps the English)."""
    from gpuwise.locale import _

    return _(
        "picks skip options more than {slower}× slower than another costing at most {similar}× as much; "
        "balanced = the Pareto option with the smallest cost × hours (where a 1% saving in time costs 1% "
        "more money)"
    ).format(slower=f"{SLOWER_LIMIT:g}", similar=f"{SIMILAR_COST:g}")
