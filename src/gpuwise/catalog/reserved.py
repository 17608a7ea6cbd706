"""Reserved and committed prices: a rate you pay for every hour of a fixed term, busy or not.

Sources:

* **AWS**: the bundled ``offers/aws_vantage_gpu_instances.json`` carries, per instance type and region,
  ``reserved`` next to ``onDemand``. Its producer (tsaol/aws-gpu ``scripts/utils.py``, ``convert_pricing``)
  takes it from instances.vantage.sh's ``yrTerm1Standard.noUpfront``: a **1-year Standard Reserved
  Instance, no upfront payment**, Linux, as an hourly rate billed for all 8,760 hours of the term
  (aws.amazon.com/ec2/pricing/reserved-instances/pricing). Same date as the on-demand prices.
* **Left out, and why**: GCP's resource-based committed-use discounts cover GPUs
  (cloud.google.com/compute/docs/instances/signing-up-committed-use-discounts), but no per-GPU 1-year
  discount for A2/A3/A4/G2 could be read from a public page we could check, so none is applied. Lambda
  (reserved 1-Click Clusters) and Nebius (reserved capacity) quote commitments on request only. A figure
  we could not verify is not invented.

Loading reads package data (file I/O); the parsing is pure (:func:`reserved_from_vantage`).
Must not import the CLI, pydantic or anything heavy. Additive: the offer loaders are untouched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from typing import Any

AWS_FILE = "aws_vantage_gpu_instances.json"
AWS_AS_OF = date(2026, 1, 21)  # the source file's "Last updated" (offers/README.md)
AWS_KIND = "1-year Standard Reserved Instance, no upfront (Linux)"
AWS_SOURCE = (
    f"{AWS_FILE} (instances.vantage.sh yrTerm1Standard.noUpfront via tsaol/aws-gpu; "
    "aws.amazon.com/ec2/pricing/reserved-instances/pricing)"
)


@dataclass(frozen=True)
class ReservedRate:
    """One commitment price for one instance type in one region (per instance, USD)."""

    provider: str
    instance_type: str
    region: str
    term_months: int
    usd_per_hour: float  # billed for every hour of the term
    upfront_usd: float
    kind: str
    source: str
    as_of: date

    @property
    def term_hours(self) -> float:
        return self.term_months * 730.0  # the 730-h month the providers' rates use

    @property
    def term_cost_usd(self) -> float:
        """One instance for the whole term, busy or not."""
        return self.upfront_usd + self.usd_per_hour * self.term_hours


def reserved_from_vantage(records: list[dict[str, Any]]) -> dict[tuple[str, str], ReservedRate]:
    """(instance type, region) -> the 1-year no-upfront rate, from the vantage JSON's records."""
    out: dict[tuple[str, str], ReservedRate] = {}
    for rec in records:
        if not isinstance(rec, dict):
            continue
        name = str(rec.get("name") or rec.get("apiName") or "")
        pricing = rec.get("pricing")
        if not name or not isinstance(pricing, dict):
            continue
        for region, prices in pricing.items():
            if not isinstance(prices, dict):
                continue
            value = prices.get("reserved")
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                continue
            out[(name, str(region))] = ReservedRate(
                provider="aws",
                instance_type=name,
                region=str(region),
                term_months=12,
                usd_per_hour=float(value),
                upfront_usd=0.0,
                kind=AWS_KIND,
                source=AWS_SOURCE,
                as_of=AWS_AS_OF,
            )
    return out


@cache
def load_reserved_rates() -> dict[tuple[str, str, str], ReservedRate]:
    """(provider, instance type, region) -> rate, from the bundled data. Empty when the file is unreadable."""
    try:
        text = resources.files("gpuwise.catalog").joinpath("data", "offers", AWS_FILE).read_text("utf-8")
        records = json.loads(text)
    except (OSError, ValueError):
        return {}
    if not isinstance(records, list):
        return {}
    return {("aws", k[0], k[1]): v for k, v in reserved_from_vantage(records).items()}
