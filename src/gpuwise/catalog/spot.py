"""AWS Spot Instance Advisor interruption buckets, from the bundled aws-gpu-spot.csv.

The planner turns a bucket into an interruption rate; this module only says which bucket AWS published
for an instance type in a region, with the source and its date. The data is a snapshot of about
2025-11-30 (tsaol/aws-gpu, see data/offers/README.md); buckets change daily, so callers should show the date.

Reads package data only; must not import the CLI or anything outside the standard library.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources

SPOT_FILE = "aws-gpu-spot.csv"
# The Spot Instance Advisor's frequency-of-interruption buckets, in percent per month: (low, high).
BUCKETS: dict[str, tuple[float, float | None]] = {
    "<5%": (0.0, 5.0),
    "5-10%": (5.0, 10.0),
    "10-15%": (10.0, 15.0),
    "15-20%": (15.0, 20.0),
    ">20%": (20.0, None),
}


@dataclass(frozen=True)
class SpotRate:
    """One Spot Advisor bucket: the monthly interruption frequency AWS reports for an instance and region."""

    provider: str
    instance_type: str
    region: str
    bucket: str  # "<5%", "5-10%", "10-15%", "15-20%", ">20%"
    low_pct: float  # lower edge of the bucket, percent of instances interrupted per month
    high_pct: float | None  # upper edge; None for ">20%"
    savings_pct: float | None  # the Advisor's savings over on-demand, percent
    source: str
    as_of: date


@cache
def _rates() -> dict[tuple[str, str], SpotRate]:
    from gpuwise.catalog.offers import bundled_source_infos

    info = next(i for i in bundled_source_infos() if i.file == SPOT_FILE)
    text = (
        resources.files("gpuwise.catalog").joinpath("data", "offers", SPOT_FILE).read_text(encoding="utf-8")
    )
    rates: dict[tuple[str, str], SpotRate] = {}
    for row in csv.DictReader(io.StringIO(text, newline="")):
        bucket = row.get("pct_interrupt", "").strip()
        if bucket not in BUCKETS:
            continue
        low, high = BUCKETS[bucket]
        savings_text = row.get("pct_savings_od", "").strip()
        try:
            savings = float(savings_text) if savings_text else None
        except ValueError:
            savings = None
        key = (row["instance_type"].strip(), row["region"].strip())
        rates[key] = SpotRate(
            provider="aws",
            instance_type=key[0],
            region=key[1],
            bucket=bucket,
            low_pct=low,
            high_pct=high,
            savings_pct=savings,
            source=f"{SPOT_FILE} ({info.origin})",
            as_of=info.price_as_of,
        )
    return rates


def interruption_rate(provider: str, instance_type: str, region: str) -> SpotRate | None:
    """The Spot Advisor bucket for an AWS instance type in a region; None where none is published
    (other providers, Local Zones, older types, or instances the snapshot lacks)."""
    if provider.strip().lower() != "aws":
        return None
    return _rates().get((instance_type.strip(), region.strip()))


def all_interruption_rates() -> list[SpotRate]:
    """Every bucket in the bundled snapshot (for listings and tests)."""
    return list(_rates().values())
