"""The spot interruption model: how often a spot/preemptible instance is taken away, and what it costs.

Expected preemptions over a run = rate (per hour) × run hours. Each preemption loses the work since the
last checkpoint (on average half the checkpoint interval) plus the time to get a new instance and resume
(``restart_hours``). The rate is an explicit, overridable assumption: AWS from its Spot Advisor bucket
(share of instances interrupted in the trailing month), every other provider from a stated default,
labelled as assumed because those providers publish no rate.

Pure; must not import anything outside the standard library and gpuwise.plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HOURS_PER_MONTH = 730.0

# AWS Spot Advisor "frequency of interruption" buckets (aws.amazon.com/ec2/spot/instance-advisor):
# share of instances of that type and region interrupted over the trailing month. We take the bucket's
# middle; ">20%" has no upper end, so we take 30% and say so.
SPOT_ADVISOR_BUCKET_SHARE: dict[str, float] = {
    "<5%": 0.025,
    "5-10%": 0.075,
    "10-15%": 0.125,
    "15-20%": 0.175,
    ">20%": 0.30,
}

# Assumed rates where the provider publishes none (interruptions per hour). One preemption per ~20 h of
# spot time is the order of magnitude users report for GCP Spot / Azure Spot GPUs; marketplaces with
# bid-based interruptible instances (Vast) are assumed twice as often. These are assumptions, not data.
DEFAULT_RATE_PER_HOUR = 0.05
ASSUMED_RATE_PER_HOUR: dict[str, float] = {
    "gcp": 0.05,
    "azure": 0.05,
    "vast": 0.10,
    "primeintellect": 0.10,
}

DEFAULT_RESTART_HOURS = 10 / 60  # get a new instance, pull the image, load the checkpoint (assumed)


@dataclass(frozen=True)
class InterruptionRate:
    per_hour: float
    source: str  # where the rate comes from, or "assumed: …"
    assumed: bool


def rate_from_monthly_share(share: float) -> float:
    """A monthly interruption probability -> a constant hourly hazard rate (Poisson)."""
    share = min(max(share, 0.0), 0.999)
    return -math.log1p(-share) / HOURS_PER_MONTH


def rate_from_bucket(bucket: str) -> float | None:
    share = SPOT_ADVISOR_BUCKET_SHARE.get(bucket.strip().replace(" ", ""))
    return None if share is None else rate_from_monthly_share(share)


def assumed_rate(provider: str) -> InterruptionRate:
    per_hour = ASSUMED_RATE_PER_HOUR.get(provider, DEFAULT_RATE_PER_HOUR)
    return InterruptionRate(
        per_hour=per_hour,
        source=(
            f"assumed {per_hour:g} preemptions/h for {provider} spot (the provider publishes no rate; "
            "override with --spot-interruptions-per-hour)"
        ),
        assumed=True,
    )


@dataclass(frozen=True)
class InterruptionCost:
    expected_preemptions: float
    lost_hours: float  # extra billed wall time


def interruption_cost(
    run_hours: float, rate_per_hour: float, checkpoint_every_hours: float, restart_hours: float
) -> InterruptionCost:
    """Expected preemptions and the hours they add (work redone since the last checkpoint + restart)."""
    preemptions = rate_per_hour * run_hours
    # Work lost since the last checkpoint is uniform over the interval: half of it on average, but never
    # more than the run itself.
    lost_per = min(checkpoint_every_hours, run_hours) / 2 + restart_hours
    return InterruptionCost(expected_preemptions=preemptions, lost_hours=preemptions * lost_per)
