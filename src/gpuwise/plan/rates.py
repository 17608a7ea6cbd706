"""Storage, egress and billing rules per provider: the small, cited table the cost model reads.

Each row names the public page its figures come from and the date they were taken. A figure that we
could not take from a public page is ``None``: the planner then lists that cost part in
``unknown_costs`` and counts it as 0, so the user sees the gap instead of a silently cheaper total.
Figures are list prices of the provider's main region (free tiers and volume discounts ignored).

Pure data; must not import anything outside the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cache

from gpuwise.locale import N_, _

GB_PER_GIB = 1.073741824  # 2**30 / 10**9: for prices quoted per GiB


@dataclass(frozen=True)
class ProviderRates:
    """What a provider charges around the GPU: storage for data and checkpoints, egress, billing rules."""

    provider: str
    # object / shared storage that holds the dataset and the checkpoints (USD per GB-month, 730 h)
    storage_usd_per_gb_month: float | None
    storage_kind: str
    # the boot disk of every node, where billed separately (0.0: included in the instance price)
    boot_disk_usd_per_gb_month: float | None
    # data out to the internet (USD per GB)
    egress_usd_per_gb: float | None
    # billing granularity and minimum charge of the instance; None: not published (charged exactly)
    billing_increment_s: float | None
    minimum_charge_s: float | None
    source: str
    as_of: date
    note: str = ""
    # why the None figures above are unknown (shown to the user beside "+?")
    unknown_why: str = ""

    def billing_text(self) -> str:
        if self.billing_increment_s is None:
            return _(
                "{provider}: billing granularity not known to gpuwise; counted as the exact run time"
            ).format(provider=self.provider)
        unit = _unit(self.billing_increment_s)
        minimum = _unit(self.minimum_charge_s or self.billing_increment_s)
        if not minimum[0].isdigit():
            minimum = _("1 {unit}").format(unit=minimum)
        return _("{provider}: billed per {unit}, minimum {minimum} ({source}, {as_of})").format(
            provider=self.provider, unit=unit, minimum=minimum, source=self.source, as_of=self.as_of
        )


def _unit(seconds: float) -> str:
    """'second', 'minute', 'hour', or an amount ('10 min') when not one of those."""
    if seconds >= 3600:
        return _("hour") if seconds == 3600 else f"{seconds / 3600:g} h"
    if seconds >= 60:
        return _("minute") if seconds == 60 else f"{seconds / 60:g} min"
    return _("second") if seconds == 1 else f"{seconds:g} s"


HOURS_PER_MONTH = 730.0  # the month every provider below prices storage over

# Date each row was taken. The pages were read through a stored copy of the public web, not live.
_TAKEN = date(2026, 11, 30)

PROVIDER_RATES: dict[str, ProviderRates] = {
    "aws": ProviderRates(
        provider="aws",
        storage_usd_per_gb_month=0.023,  # S3 Standard, us-east-1, first 50 TB
        storage_kind="S3 Standard",
        boot_disk_usd_per_gb_month=0.08,  # EBS gp3, us-east-1
        egress_usd_per_gb=0.09,  # data transfer out to the internet, first 10 TB/month
        billing_increment_s=1,
        minimum_charge_s=60,  # Linux on-demand and spot: per second, 60 s minimum
        source=(
            "aws.amazon.com/s3/pricing, aws.amazon.com/ebs/pricing, aws.amazon.com/ec2/pricing/on-demand "
            "(data transfer; per-second billing)"
        ),
        as_of=_TAKEN,
        note=N_("us-east-1 list prices; other regions differ by a few per cent"),
    ),
    "gcp": ProviderRates(
        provider="gcp",
        storage_usd_per_gb_month=0.020,  # Cloud Storage Standard, regional us-central1
        storage_kind="Cloud Storage Standard",
        boot_disk_usd_per_gb_month=0.10,  # pd-balanced, us-central1
        egress_usd_per_gb=0.12 / GB_PER_GIB,  # Premium Tier internet egress, first 1 TiB/month, per GiB
        billing_increment_s=1,
        minimum_charge_s=60,
        source=(
            "cloud.google.com/storage/pricing, cloud.google.com/compute/disks-image-pricing, "
            "cloud.google.com/vpc/network-pricing, cloud.google.com/compute/vm-instance-pricing"
        ),
        as_of=_TAKEN,
        note=N_("us-central1 list prices"),
    ),
    "azure": ProviderRates(
        provider="azure",
        storage_usd_per_gb_month=0.018,  # Blob Storage Hot LRS, East US, first 50 TB (approximate)
        storage_kind="Blob Storage Hot LRS",
        boot_disk_usd_per_gb_month=0.075,  # Standard SSD managed disk (E10, 128 GiB ≈ $9.60/month)
        egress_usd_per_gb=0.087,  # internet egress, Microsoft premium network, next 10 TB after 100 GB free
        billing_increment_s=60,
        minimum_charge_s=60,  # billed per minute; under a minute is not charged (we round up: cautious)
        source=(
            "azure.microsoft.com/pricing/details/storage/blobs, .../managed-disks, .../bandwidth, "
            "docs.azure.cn/billing (per-minute VM billing)"
        ),
        as_of=_TAKEN,
        note=N_("East US list prices"),
    ),
    "lambda": ProviderRates(
        provider="lambda",
        storage_usd_per_gb_month=0.20 / GB_PER_GIB,  # persistent filesystem, $0.20 per GiB-month
        storage_kind="Lambda filesystem",
        boot_disk_usd_per_gb_month=0.0,  # local NVMe included in the instance price
        egress_usd_per_gb=0.0,  # "you are not charged for ingress or egress"
        billing_increment_s=60,
        minimum_charge_s=60,  # on-demand instances bill in one-minute increments
        source="docs.lambda.ai/public-cloud/billing",
        as_of=_TAKEN,
        note=N_("the filesystem rate is the page's worked example; the console shows the current one"),
    ),
    "nebius": ProviderRates(
        provider="nebius",
        storage_usd_per_gb_month=0.0147 / GB_PER_GIB,  # Object Storage Standard, per GiB per 730 h
        storage_kind="Object Storage Standard",
        boot_disk_usd_per_gb_month=None,  # network SSD boot disk is billed; rate not taken
        # docs.nebius.com/legal/specific-terms/compute §2.5 names outgoing traffic among what may be
        # charged; the stored copy stops before any rate, so egress stays unknown
        egress_usd_per_gb=None,
        billing_increment_s=1,
        minimum_charge_s=1,  # "for GPUs on running VMs, the billing unit is 1 second"
        source="docs.nebius.com/object-storage/resources/pricing",
        as_of=_TAKEN,
        unknown_why=N_("egress and boot-disk rates not found in the stored Nebius pages"),
    ),
    "vast": ProviderRates(
        provider="vast",
        storage_usd_per_gb_month=None,  # each host sets its own storage price ($/GB/month)
        storage_kind="host disk",
        boot_disk_usd_per_gb_month=None,
        egress_usd_per_gb=None,  # each host sets its own bandwidth price ($/TB)
        billing_increment_s=1,
        minimum_charge_s=1,
        source="docs.vast.ai/documentation/instances/pricing",
        as_of=_TAKEN,
        note=N_("a marketplace: storage and bandwidth are priced per host, not in the catalog"),
        unknown_why=N_(
            "a marketplace: each host sets its own storage ($/GB-month) and bandwidth ($/TB) price"
        ),
    ),
    "runpod": ProviderRates(
        provider="runpod",
        storage_usd_per_gb_month=0.07,  # network volume, under 1 TB
        storage_kind="network volume",
        boot_disk_usd_per_gb_month=None,
        egress_usd_per_gb=0.0,  # no ingress/egress fees
        billing_increment_s=1,
        minimum_charge_s=1,
        source="runpod.io/pricing",
        as_of=_TAKEN,
        unknown_why=N_("the pod's container/boot disk rate was not taken from runpod.io/pricing"),
    ),
    "hyperstack": ProviderRates(
        provider="hyperstack",
        # Cloud-SSD shared storage volume: $0.000096774 per GB per hour (× 730 h ≈ $0.0706/GB-month)
        storage_usd_per_gb_month=0.000096774 * 730,
        storage_kind="Cloud-SSD volume",
        # the VM flavour includes its root and ephemeral disks; a hibernated VM pays only for the root
        # disk's saved data (docs.hyperstack.cloud/docs/billing/states-and-billing)
        boot_disk_usd_per_gb_month=0.0,
        egress_usd_per_gb=0.0,  # "egress / ingress traffic: free"
        billing_increment_s=60,
        minimum_charge_s=60,  # billed per minute (rates quoted per hour)
        source=(
            "hyperstack.cloud/gpu-pricing (as transcribed from the page on 2026-08-26 in "
            "api-evangelist/nexgen-cloud plans/nexgen-cloud-plans-pricing.yml)"
        ),
        as_of=date(2026, 8, 26),
        note=N_("storage rate per GB-hour on the page, times 730 h"),
    ),
    "do": ProviderRates(
        provider="do",
        storage_usd_per_gb_month=None,  # Volumes Block Storage rate not in the stored pages read
        storage_kind="Volumes Block Storage",
        boot_disk_usd_per_gb_month=None,  # GPU Droplet plans include disks; not stated on the pages read
        # outbound transfer beyond the plan's pooled free allowance, per GiB (allowance ignored: cautious)
        egress_usd_per_gb=0.01 / GB_PER_GIB,
        billing_increment_s=1,
        minimum_charge_s=60,  # per second, minimum 60 s or $0.01, since 2026-01-01
        source=(
            "docs.digitalocean.com/products/droplets/details/pricing (validated 28 May 2026; "
            "per-second billing stated for Droplets, the page's GPU section was cut in the stored copy)"
        ),
        as_of=date(2026, 5, 28),
        note=N_("egress $0.01/GiB beyond the included transfer pool"),
        unknown_why=N_("the Volumes rate and GPU Droplet disk terms are not in the stored pages read"),
    ),
    "cudo": ProviderRates(
        provider="cudo",
        storage_usd_per_gb_month=None,  # disks are charged ("all resources are chargeable"); rate not found
        storage_kind="disk",
        boot_disk_usd_per_gb_month=None,
        egress_usd_per_gb=None,
        billing_increment_s=1,
        minimum_charge_s=1,  # usage recalculated hourly "with precision to the nearest second"
        source="cudocompute.com/docs/billing",
        as_of=_TAKEN,
        unknown_why=N_("storage and network are charged, but no rate was found in the stored pages read"),
    ),
    "jarvislabs": ProviderRates(
        provider="jarvislabs",
        storage_usd_per_gb_month=None,
        storage_kind="persistent storage",
        boot_disk_usd_per_gb_month=None,
        egress_usd_per_gb=None,
        billing_increment_s=60,
        minimum_charge_s=60,  # "pay per minute billing"
        source="github.com/jarvislabsai (the provider's own profile README)",
        as_of=_TAKEN,
        unknown_why=(
            N_(
                "storage and egress rates appear only in a third-party summary marked unverified "
                "(api-evangelist/jarvislabs), so they are not used"
            )
        ),
    ),
}

# Providers whose storage, egress and billing stay unknown, and why (shown in every such option's notes).
UNKNOWN_WHY: dict[str, str] = {
    "verda": (
        N_(
            "Verda (formerly DataCrunch): docs.verda.com/welcome-to-verda/pricing-and-billing links to "
            "datacrunch.io/products for prices; no storage, egress or billing-increment figure was found in "
            "the stored pages (third-party summaries disagree and are not used)"
        )
    ),
    "primeintellect": (
        N_(
            "Prime Intellect is a marketplace reselling other clouds (the instance id names them: "
            "datacrunch__, hyperstack__, lambdalabs__ …); it bills from its own wallet and publishes no "
            "storage/egress rate in the stored pages; the underlying cloud's rates need not apply"
        )
    ),
    "shadeform": (
        N_(
            "Shadeform is a marketplace over other clouds; volume prices come per cloud and region from its "
            "API (docs.shadeform.ai/api-reference/volumes/volumes-types), not as one published rate"
        )
    ),
    "paperspace": (
        N_(
            "Paperspace: storage is a monthly subscription by size ('starting at 50GB for $5/month', "
            "support.paperspace.com VM billing overview), not a per-GB-hour rate; egress not found"
        )
    ),
    "hyperbolic": (
        N_(
            "Hyperbolic is a marketplace where each supplier sets its own price "
            "(docs.hyperbolic.xyz/docs/gpu-marketplace-pricing); no storage or egress rate is published there"
        )
    ),
    "fluidstack": N_("Fluidstack: no storage, egress or billing figure found in the stored pages searched"),
    "ibm": (
        N_(
            "IBM Cloud: the stored block-storage price page found is a 2019 copy for an older VPC "
            "generation, so it is not used; no current GPU-server billing granularity or egress rate found"
        )
    ),
    "seeweb": N_("Seeweb: no storage, egress or billing figure found in the stored pages searched"),
    # The Chinese clouds price storage and traffic in CNY on their own pages; none was taken into this (USD)
    # table, so those parts stay unknown rather than borrowed from another provider.
    "aliyun": (
        N_(
            "Alibaba Cloud: OSS storage, ESSD disk and internet traffic are priced in CNY on its own price "
            "pages; no rate was taken into gpuwise's table, and ECS billing granularity was not confirmed"
        )
    ),
    "tencent": (
        N_(
            "Tencent Cloud: COS storage, cloud disk and traffic are priced in CNY on its own pages; no rate "
            "was taken into gpuwise's table"
        )
    ),
    "huawei": (
        N_(
            "Huawei Cloud: OBS storage, EVS disk and traffic are priced on its own pages; no rate was taken "
            "into gpuwise's table"
        )
    ),
    "baidu": N_("Baidu AI Cloud: no storage, egress or billing figure taken into gpuwise's table"),
}
NOT_LOOKED_UP = N_("no public rate looked up for this provider yet")


def rates_for(provider: str) -> ProviderRates:
    """The provider's row, or an all-unknown row that says so."""
    found = PROVIDER_RATES.get(provider)
    return found if found is not None else _unknown_rates(provider)


@cache
def _unknown_rates(provider: str) -> ProviderRates:
    return ProviderRates(
        provider=provider,
        storage_usd_per_gb_month=None,
        storage_kind="storage",
        boot_disk_usd_per_gb_month=None,
        egress_usd_per_gb=None,
        billing_increment_s=None,
        minimum_charge_s=None,
        source="no public rate taken for this provider",
        as_of=_TAKEN,
        unknown_why=UNKNOWN_WHY.get(provider, NOT_LOOKED_UP),
    )


def unknown_text(rates: ProviderRates) -> str | None:
    """Why some of the provider's rates are unknown, for the option's notes (None: all known)."""
    if None not in (
        rates.storage_usd_per_gb_month,
        rates.boot_disk_usd_per_gb_month,
        rates.egress_usd_per_gb,
    ):
        return None
    return _("{provider}: some rates unknown: {why}").format(
        provider=rates.provider, why=_(rates.unknown_why or NOT_LOOKED_UP)
    )


def region_has_list_rates(provider: str, region: str) -> bool:
    """False where the table's rates do not apply: AWS China regions price in CNY on another site."""
    return not (provider == "aws" and region.startswith("cn-"))
