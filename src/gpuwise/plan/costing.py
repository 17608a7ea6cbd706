"""What one configuration costs: billed compute, start-up, storage, egress and spot losses, in USD.

Pure arithmetic over plain floats (no strings but the names of unknown parts): `cost` runs for every
configuration that passes the constraints checked before costing, tens of thousands on a large catalog.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from gpuwise.estimate.models import Estimate
from gpuwise.plan.interruption import interruption_cost
from gpuwise.plan.models import DataNeeds, Settings
from gpuwise.plan.rates import HOURS_PER_MONTH, ProviderRates


def billed_hours(hours: float, rates: ProviderRates) -> float:
    """Hours the provider bills for a run of `hours`: rounded up to its increment, at least its minimum."""
    if rates.billing_increment_s is None:
        return hours
    seconds = hours * 3600.0
    step = rates.billing_increment_s
    billed = math.ceil(seconds / step - 1e-9) * step
    return max(billed, rates.minimum_charge_s or 0.0) / 3600.0


class Costed(NamedTuple):
    """The numbers of one configuration (a NamedTuple: built for every configuration costed)."""

    price_per_hour: float  # USD, all nodes
    hours: float  # wall clock: start-up + run + spot losses
    compute: float
    startup: float
    storage: float
    egress: float
    interruption: float
    interruptions: float
    unknown: tuple[str, ...]
    total: float  # the parts added up


def cost(
    price_per_hour: float,
    *,
    nodes: int,
    run_hours: float,
    start_hours: float,
    rates: ProviderRates,
    list_rates: bool,
    spot_rate: float | None,
    data: DataNeeds,
    settings: Settings,
    gpu_only_price: bool,
    commitment_usd: float | None = None,
) -> Costed:
    """Cost parts. With `commitment_usd` (a reservation) compute + startup = the whole commitment."""
    lost_hours = 0.0
    interruptions = 0.0
    if spot_rate is not None:
        ic = interruption_cost(run_hours, spot_rate, data.checkpoint_every_hours, settings.restart_hours)
        lost_hours, interruptions = ic.lost_hours, ic.expected_preemptions
    hours = start_hours + run_hours + lost_hours
    startup = price_per_hour * start_hours
    if commitment_usd is not None:
        startup = min(startup, commitment_usd)
        compute = commitment_usd - startup
    else:
        # the instance is billed from boot to shutdown: round the whole stay, then split off start-up
        compute = price_per_hour * billed_hours(start_hours + run_hours, rates) - startup
    unknown: list[str] = []
    storage = _storage(
        nodes,
        hours / HOURS_PER_MONTH,
        rates=rates if list_rates else None,
        data=data,
        settings=settings,
        unknown=unknown,
    )
    egress = 0.0
    egress_rate = rates.egress_usd_per_gb if list_rates else None
    if data.egress_gb > 0:
        if egress_rate is None:
            unknown.append("egress")
        else:
            egress = data.egress_gb * egress_rate
    if gpu_only_price:
        unknown.append("host_vm")
    interruption = price_per_hour * lost_hours
    return Costed(
        price_per_hour=price_per_hour,
        hours=hours,
        compute=compute,
        startup=startup,
        storage=storage,
        egress=egress,
        interruption=interruption,
        interruptions=interruptions,
        unknown=tuple(unknown),
        total=compute + startup + storage + egress + interruption,
    )


def _storage(
    nodes: int,
    months: float,
    *,
    rates: ProviderRates | None,
    data: DataNeeds,
    settings: Settings,
    unknown: list[str],
) -> float:
    """Dataset, kept checkpoints and boot disks for the stay; `rates` None: the region has no list rates.
    Appends the parts whose rate is not known to `unknown` (counted as zero)."""
    storage = 0.0
    stored_gb = data.dataset_gb + data.checkpoint_gb * data.checkpoints_kept
    storage_rate = None if rates is None else rates.storage_usd_per_gb_month
    if stored_gb > 0:
        if storage_rate is None:
            unknown.append("storage")
        else:
            storage += stored_gb * storage_rate * months
    boot_rate = None if rates is None else rates.boot_disk_usd_per_gb_month
    if settings.boot_disk_gb > 0:
        if boot_rate is None:
            unknown.append("boot_disk")
        else:
            storage += settings.boot_disk_gb * nodes * boot_rate * months
    return storage


def hours_range(est: Estimate) -> tuple[float, float]:
    """The estimate's time range; `hours` both ways when the estimator gives none (NaN: no spread known)."""
    lo = est.hours_low if 0 < est.hours_low < math.inf else est.hours
    hi = est.hours_high if 0 < est.hours_high < math.inf else est.hours
    return min(lo, est.hours), max(hi, est.hours)
