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
from gpuwise.plan.startup import StartupRates

PRICINGS = ("on_demand", "spot", "reserved")
OBJECTIVES = ("cost", "time", "balanced")

# Rejection reason ids, in the order they are checked (the first failing one counts).
REASONS = (
    "no_price",
    "currency",
    "provider",
    "region",
    "gpu",
    "gpu_count",
    "fractional_gpu",
    "not_single_gpu",
    "max_gpus",
    "no_fabric",
    "pricing",
    "spot_not_allowed",
    "dtype",
    "no_estimate",
    "does_not_fit",
    "below_target_rate",
    "over_latency",
    "over_ttft",
    "over_commitment",
    "over_deadline",
    "over_budget",
)
# Reasons that a user can relax (the rest are facts about the offer or the workload).
RELAXABLE = (
    "currency",
    "provider",
    "region",
    "gpu",
    "gpu_count",
    "max_gpus",
    "pricing",
    "spot_not_allowed",
    "over_latency",
    "over_ttft",
    "over_commitment",
    "over_deadline",
    "over_budget",
)
# Facts about an offer or the workload that removed configurations the user's constraints allowed: named
# first when nothing qualifies (a GPU with no estimate, a dtype it cannot run, a model that does not fit).
FACTS = (
    "currency",
    "dtype",
    "no_fabric",
    "no_estimate",
    "does_not_fit",
    "below_target_rate",
    "fractional_gpu",
)

COST_PARTS = ("compute", "startup", "storage", "egress", "interruption_overhead")


@dataclass(frozen=True)
class Constraints:
    """The workload's `[constraints]` (docs/workload.md); None does not constrain."""

    deadline_hours: float | None = None
    budget_usd: float | None = None
    interruptible: bool = True
    providers: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None  # shell-style patterns
    gpus: tuple[str, ...] | None = None  # canonical GPU names
    max_gpus: int | None = None
    max_nodes: int = 1
    # `--gpu NAME:N`: (canonical GPU, total GPU count or None for any count); None: no such request
    gpu_counts: tuple[tuple[str, int | None], ...] | None = None
    pricings: tuple[str, ...] | None = None  # `--spot` / `--on-demand`: the pricing models allowed
    # serving: one request's end-to-end time and time to first token at the workload's concurrency, s
    max_latency_s: float | None = None
    max_ttft_s: float | None = None


@dataclass(frozen=True)
class DataNeeds:
    """What the run stores and moves, independent of the provider."""

    dataset_gb: float = 0.0
    checkpoint_gb: float = 0.0  # one checkpoint
    checkpoints_kept: int = 2
    checkpoint_every_hours: float = 1.0
    egress_gb: float = 0.0
    assumptions: tuple[str, ...] = ()
    model_download_gb: float = 0.0  # weights fetched at start-up (a base model to fine-tune or serve)
    final_upload_gb: float = 0.0  # the last checkpoint and results, sent out at the end


@dataclass(frozen=True)
class Settings:
    today: date
    objective: str = "cost"
    # provider -> interruptions per hour; key "*" applies to every provider
    spot_rate_overrides: dict[str, float] = field(default_factory=dict)
    restart_hours: float = DEFAULT_RESTART_HOURS
    exchange_rates: dict[str, float] = field(default_factory=dict)  # currency -> USD per unit
    # currency -> where its rate comes from, for a rate the user did not give (plan --currency)
    exchange_rate_notes: dict[str, str] = field(default_factory=dict)
    boot_disk_gb: float = 100.0
    stale_after_days: int = 90
    single_gpu_only: bool = False  # --phase prototype
    # serving at a target rate for a fixed time: a configuration slower than the rate needs more hours than
    # this to serve the traffic, so it does not meet the target (None: no such target)
    service_hours: float | None = None
    # start-up figures per provider that replace the bundled defaults (tests, or a user who measured)
    startup_overrides: dict[str, StartupRates] = field(default_factory=dict)
    # reservations: shown only when the user says how long the machine is busy
    commitment_months: float | None = None
    utilization: float | None = None  # share of the commitment the reserved machine is busy (0–1]
    # the workload's units for per-unit costs: (label, amount), e.g. ("per 1M tokens", 10_000.0)
    units: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Option:
    """One costed configuration: an offer × node count × pricing model. Field names follow docs/json.md."""

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
    # extensions (issue 12)
    cost_usd_low: float | None = None  # from the estimate's time range (hours_low/hours_high)
    cost_usd_high: float | None = None
    hours_low: float | None = None
    hours_high: float | None = None
    startup_hours: float = 0.0
    price_age_days: int = 0
    price_over_limit: bool = False  # older than the stale limit, by source or collection date
    dtype_fallback: str | None = None  # e.g. "fp16": the dtype costed instead of the workload's
    interconnect: str | None = None  # multi-node: the fabric the nodes share
    unit_costs: dict[str, float] = field(default_factory=dict)  # label -> USD per unit
    worth_renting: bool = True  # False: a similar-cost option is far faster (never a headline pick)
    commitment_usd: float | None = None  # reserved: the whole commitment
    commitment_months: float | None = None
    break_even_hours_per_month: float | None = None  # reserved beats on-demand above this
    reserved_kind: str | None = None
    # serving: {"ttft_s", "tpot_s", "request_s"} at the workload's concurrency (None for other workloads)
    latency: dict[str, float] | None = None


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
    # the headline picks as ranks into `options` ("cheapest", "fastest", "balanced"); empty without options
    picks: dict[str, int] = field(default_factory=dict)
    # the absolute cheapest when it is not the cheapest pick, and the similar-cost option far faster than it
    passed_over: tuple[int, int] | None = None
    # (reason, gpu) -> configurations the constraints allowed that this fact removed (see FACTS)
    blocked: dict[tuple[str, str], int] = field(default_factory=dict)
    # gpu -> why the dtype rule rejects it
    dtype_why: dict[str, str] = field(default_factory=dict)
    stale_after_days: int = 90
    today: date | None = None
    # the fewest and most hours over every option, from the planner's plain numbers (None: read `options`,
    # which builds every one of them: 1.3 s on a 36k-offer catalog where the planner itself takes 0.3 s)
    hours_span: tuple[float, float] | None = None

    def source_date_text(self, provider: str) -> str:
        day = self.sources[provider].isoformat()
        return f"date unknown (collected {day})" if provider in self.undated_sources else day
