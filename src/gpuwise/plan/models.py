"""Plan data: what the planner is asked (constraints, data needs, settings) and what it answers.

Plain frozen dataclasses (no pydantic: the planner builds thousands of these per run).
Must not import anything outside the standard library, gpuwise's own models and the plan's pure
interruption model (for its default restart time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from gpuwise.plan.interruption import DEFAULT_RESTART_HOURS

PRICINGS = ("on_demand", "spot", "reserved")
OBJECTIVES = ("cost", "time")

# Rejection reason ids, in the order they are checked (the first failing one counts).
REASONS = (
    "no_price",
    "currency",
    "provider",
    "region",
    "gpu",
    "fractional_gpu",
    "not_single_gpu",
    "max_gpus",
    "spot_not_allowed",
    "no_estimate",
    "does_not_fit",
    "below_target_rate",
    "over_deadline",
    "over_budget",
)
# Reasons that a user can relax (the rest are facts about the offer or the workload).
RELAXABLE = (
    "currency",
    "provider",
    "region",
    "gpu",
    "max_gpus",
    "spot_not_allowed",
    "over_deadline",
    "over_budget",
)

COST_PARTS = ("compute", "storage", "egress", "interruption_overhead")


@dataclass(frozen=True)
class Constraints:
    """The workload's `[constraints]` (CONTRACTS §1); None does not constrain."""

    deadline_hours: float | None = None
    budget_usd: float | None = None
    interruptible: bool = True
    providers: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None  # shell-style patterns
    gpus: tuple[str, ...] | None = None  # canonical GPU names
    max_gpus: int | None = None
    max_nodes: int = 1


@dataclass(frozen=True)
class DataNeeds:
    """What the run stores and moves, independent of the provider."""

    dataset_gb: float = 0.0
    checkpoint_gb: float = 0.0  # one checkpoint
    checkpoints_kept: int = 2
    checkpoint_every_hours: float = 1.0
    egress_gb: float = 0.0
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    today: date
    objective: str = "cost"
    # provider -> interruptions per hour; key "*" applies to every provider
    spot_rate_overrides: dict[str, float] = field(default_factory=dict)
    restart_hours: float = DEFAULT_RESTART_HOURS
    exchange_rates: dict[str, float] = field(default_factory=dict)  # currency -> USD per unit
    boot_disk_gb: float = 100.0
    stale_after_days: int = 90
    single_gpu_only: bool = False  # --phase prototype
    # serving at a target rate for a fixed time: a configuration slower than the rate needs more hours than
    # this to serve the traffic, so it does not meet the target (None: no such target)
    service_hours: float | None = None


@dataclass(frozen=True)
class Option:
    """One costed configuration: an offer × node count × pricing model. Field names follow CONTRACTS §3."""

    provider: str
    instance_type: str
    region: str
    zone: str | None
    gpu: str
    gpus_per_node: int
    nodes: int
    pricing: str
    price_usd_per_hour: float  # all nodes together, in USD
    price_as_of: date
    price_date_exact: bool
    price_stale: bool
    currency: str  # of the catalog price (converted to USD at the user's rate when not USD)
    hours: float  # expected wall-clock hours, interruptions included
    cost_usd: float
    cost_breakdown_usd: dict[str, float]
    unknown_costs: tuple[str, ...]
    assumptions: tuple[str, ...]
    fits: bool
    memory_per_gpu_gib: float
    memory_capacity_gib: float
    bottleneck: str
    expected_interruptions: float
    source: str
    pareto: bool = False


@dataclass(frozen=True)
class Relaxation:
    """What dropping or loosening one constraint would give."""

    reason: str  # a RELAXABLE reason id
    constraint: str  # the workload key, e.g. "budget_usd"
    options: int  # configurations that break only this constraint
    suggestion: str  # e.g. "raising budget_usd to $812 would allow 14 options"


@dataclass(frozen=True)
class PlanResult:
    options: Sequence[Option]  # every qualifying option, sorted by the objective
    considered: int
    rejected: dict[str, int]
    relaxations: tuple[Relaxation, ...]  # most options first
    sources: dict[str, date]  # provider -> newest price date among its offers
    assumptions: tuple[str, ...]  # plan-wide (data needs, interruption model, availability)
    objective: str
    # providers none of whose prices carries its source's own date (only the collection date is known)
    undated_sources: frozenset[str] = frozenset()

    def source_date_text(self, provider: str) -> str:
        day = self.sources[provider].isoformat()
        return f"date unknown (collected {day})" if provider in self.undated_sources else day
