"""The spot interruption model: how often a spot/preemptible instance is taken away, and what it costs.

Expected preemptions over a run = rate (per hour) × run hours. Each preemption loses the work since the
last checkpoint (on average half the checkpoint interval) plus the time to get a new instance and resume
(``restart_hours``). First order: the redone work is not itself interrupted again (an underestimate of
at most rate × lost-hours-per-preemption, a few per cent at the rates below).

Where the rates come from (an explicit, overridable assumption: ``--spot-interruptions-per-hour``):

* AWS: the Spot Instance Advisor's "frequency of interruption" bucket (<5%, 5-10%, 10-15%, 15-20%, >20%),
  which AWS defines as the rate at which Spot reclaimed capacity of that instance type in that region
  over the trailing month (aws.amazon.com/ec2/spot/instance-advisor). We read it as the probability that
  an instance kept for a whole month (730 h) is interrupted, take the bucket's middle (``<5%`` → 2.5%;
  ``>20%`` has no upper edge → 30%, an assumption), and turn it into a constant hourly hazard
  rate = −ln(1 − share) / 730 h, so that a month survives with probability 1 − share.
* Every other provider publishes no rate: an assumed rate, labelled as assumed, with its reason
  (``ASSUMED_RATES``).

Pure; must not import anything outside the standard library and gpuwise.plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwise.locale import N_, _
from gpuwise.plan.rates import HOURS_PER_MONTH  # the 730-h month AWS's trailing month is read as

SPOT_ADVISOR_SOURCE = "aws.amazon.com/ec2/spot/instance-advisor"

# AWS Spot Advisor buckets -> share of instances interrupted over the trailing month (bucket middle).
SPOT_ADVISOR_BUCKET_SHARE: dict[str, float] = {
    "<5%": 0.025,
    "5-10%": 0.075,
    "10-15%": 0.125,
    "15-20%": 0.175,
    ">20%": 0.30,
}

# Assumed rates (preemptions per hour) where the provider publishes none, each with its reason.
_CLOUD_REASON = N_(
    "deliberately pessimistic: about one preemption per 20 h, the order of GCP's legacy preemptible VMs, "
    "which always stop within 24 h (cloud.google.com/compute/docs/instances/create-use-preemptible); "
    "far above AWS's worst published bucket (>20%/month ≈ 0.0005/h), so an unmeasured spot market is "
    "never favoured over a measured one"
)
_MARKET_REASON = N_(
    "twice the cloud default: on a marketplace an interruptible (bid) instance is taken whenever someone "
    "bids or pays more, at any time"
)
DEFAULT_RATE_PER_HOUR = 0.05
ASSUMED_RATES: dict[str, tuple[float, str]] = {
    "gcp": (0.05, _CLOUD_REASON + N_("; GCP Spot VMs have no maximum run time and GCP publishes no rate")),
    "azure": (0.05, _CLOUD_REASON + N_("; Azure publishes no eviction rate per VM size")),
    "vast": (0.10, _MARKET_REASON),
    "primeintellect": (0.10, _MARKET_REASON),
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
    per_hour, _english = ASSUMED_RATES.get(provider, (DEFAULT_RATE_PER_HOUR, _CLOUD_REASON))
    return InterruptionRate(
        per_hour=per_hour,
        source=_(
            "assumed {rate} preemptions/h for {provider} spot (the provider publishes no rate; "
            "{why}; override with --spot-interruptions-per-hour)"
        ).format(rate=f"{per_hour:g}", provider=provider, why=_reason(provider)),
        assumed=True,
    )


def _reason(provider: str) -> str:
    """ASSUMED_RATES' reason for `provider`, in the current language."""
    cloud, market = _(_CLOUD_REASON), _(_MARKET_REASON)
    return {
        "gcp": cloud + _("; GCP Spot VMs have no maximum run time and GCP publishes no rate"),
        "azure": cloud + _("; Azure publishes no eviction rate per VM size"),
        "vast": market,
        "primeintellect": market,
    }.get(provider, cloud)


def model_note() -> str:
    """MODEL_NOTE in the current language."""
    return _(
        "spot preemption rates: AWS from its Spot Advisor bucket, the share of instances of that type and "
        "region interrupted over the trailing month ({source}), taken at the bucket's middle "
        "(<5% → 2.5%, >20% → 30%) and turned into a constant hourly rate −ln(1 − share)/730 h; other "
        "providers publish none, so their rate is an assumption stated on each option"
    ).format(source=SPOT_ADVISOR_SOURCE)


MODEL_NOTE = (
    "spot preemption rates: AWS from its Spot Advisor bucket, the share of instances of that type and "
    f"region interrupted over the trailing month ({SPOT_ADVISOR_SOURCE}), taken at the bucket's middle "
    "(<5% → 2.5%, >20% → 30%) and turned into a constant hourly rate −ln(1 − share)/730 h; other "
    "providers publish none, so their rate is an assumption stated on each option"
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
