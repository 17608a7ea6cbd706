"""Normalisation rules every source shares: the GPU an offer really has, its per-GPU memory, and which
prices are kept; plus the tally of every skip, drop and adjustment the build reports in its stats.

The per-source normalisers (``skypilot.py``, ``aws.py``) apply these to their rows; ``build.py`` puts the
results together. Pure: no I/O beyond the cached GPU spec table.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from gpuwise.catalog.csvrows import parse_number
from gpuwise.catalog.specs import canonical_gpu_name, load_gpu_specs

# Providers whose GpuInfo SizeInMiB is the whole instance's GPU memory, not one GPU's
# (vast: "2x-H200" has 287542 = 2 x 143771; primeintellect: "8xA100_80GB" has 655360).
_GPUINFO_SIZE_IS_TOTAL = frozenset({"vast", "primeintellect"})
_SIZE_RE = re.compile(r"sizeinmib['\"]?\s*:\s*([0-9.]+)", re.IGNORECASE)
# Azure's NC A100 v4 sizes (Standard_NC24ads_A100_v4, …) are "up to 4 NVIDIA A100 PCIe GPUs with 80GB
# memory each" (Microsoft Docs, virtual-machines/nc-a100-v4-series); the ND ones are SXM.
_AZURE_NC_A100 = re.compile(r"^standard_nc\d+ads_a100_v4$")
PLACEHOLDER_PRICES = frozenset({700.0})  # GCP TPU rows carry 700.0 (README of the bundled files)


class Tally:
    """Counters the normalisers fill as they go; the build turns them into :class:`CatalogStats`."""

    def __init__(self) -> None:
        self.rows: Counter[str] = Counter()  # file -> rows read
        self.skipped: Counter[str] = Counter()  # reason -> rows not turned into an offer
        self.dropped: Counter[str] = Counter()  # reason -> price fields removed
        self.adjusted: Counter[str] = Counter()  # rule -> offers whose GPU or price was normalised


# ---------------------------------------------------------------- GPU names and memory


def gpuinfo_per_gpu_mib(provider: str, gpuinfo: str, count: float) -> float | None:
    """Per-GPU memory in MiB from a GpuInfo cell, or None when it does not say.

    GpuInfo differs by source: MiB per GPU (most), MiB for the whole instance (vast, primeintellect),
    GB (shadeform writes 80 for an 80 GB card), 0 (nebius) or just a name (azure, ibm).
    """
    match = _SIZE_RE.search(gpuinfo)
    if match is None:
        return None
    size = float(match.group(1))
    if size <= 0:
        return None
    if size < 1024:  # GB, not MiB: no GPU has less than 1 GiB
        return size * 1024
    if provider in _GPUINFO_SIZE_IS_TOTAL and count >= 1:
        return size / count
    return size


def offer_gpu(name: str, instance_type: str, per_gpu_mib: float | None) -> tuple[str, str | None]:
    """Canonical GPU of an offer and the variant rule that decided it (None when the name alone did)."""
    gpu = canonical_gpu_name(name) or name.strip()
    inst = instance_type.lower()
    if gpu == "H100":
        if "pcie" in inst:
            return "H100-PCIe", "H100 -> H100-PCIe (instance name says PCIe)"
        if per_gpu_mib is not None and 90 * 1024 <= per_gpu_mib <= 100 * 1024:
            return "H100-NVL", "H100 -> H100-NVL (94 GB per GPU in GpuInfo)"
    if gpu in ("A100", "A100-80GB") and _AZURE_NC_A100.search(inst):
        return "A100-80GB-PCIe", "A100 -> A100-80GB-PCIe (Azure NC A100 v4: A100 PCIe 80GB)"
    if gpu == "A100" and "pcie" in inst:  # the PCIe cards have less bandwidth and power than the SXM ones
        if (per_gpu_mib is not None and per_gpu_mib >= 70 * 1024) or re.search(r"80\s*g", inst) is not None:
            return "A100-80GB-PCIe", "A100 -> A100-80GB-PCIe (80 GB per GPU, instance name says PCIe)"
        return "A100-PCIe", "A100 -> A100-PCIe (instance name says PCIe)"
    if gpu == "A100" and (
        (per_gpu_mib is not None and per_gpu_mib >= 70 * 1024) or re.search(r"80\s*g", inst) is not None
    ):
        return "A100-80GB", "A100 -> A100-80GB (80 GB per GPU in GpuInfo or instance name)"
    if gpu == "V100" and ((per_gpu_mib is not None and per_gpu_mib >= 30 * 1024) or "32g" in inst):
        return "V100-32GB", "V100 -> V100-32GB (32 GB per GPU in GpuInfo or instance name)"
    return gpu, None


def gpu_memory_gib(gpu: str, per_gpu_mib: float | None) -> float | None:
    """Per-GPU memory in GiB: the spec table's for a known GPU, else what the source said (or None)."""
    spec = load_gpu_specs().get(gpu)
    if spec is not None:
        return spec.memory_gib
    return None if per_gpu_mib is None else round(per_gpu_mib / 1024, 2)


# ---------------------------------------------------------------- prices


def clean_prices(
    price: float | None, spot: float | None, count: float, tally: Tally, notes: list[str]
) -> tuple[float | None, float | None, str | None]:
    """(price, spot, skip_reason). Drops impossible fields and counts them; never invents a price."""
    if (
        price is not None
        and spot is not None
        and price == spot
        and (price in PLACEHOLDER_PRICES or price == count)
    ):
        # $1.00 per GPU-hour for on-demand and spot alike, or 700.0: the placeholders the sources use.
        return None, None, "placeholder_price"
    if price is not None and price in PLACEHOLDER_PRICES:
        return None, None, "placeholder_price"
    dropped_reason: str | None = None
    if price is not None and price <= 0:
        tally.dropped["price_not_positive"] += 1
        dropped_reason = "price_not_positive"
        price = None
    if spot is not None and spot <= 0:
        tally.dropped["spot_price_not_positive"] += 1
        dropped_reason = dropped_reason or "spot_price_not_positive"
        spot = None
        notes.append("spot price dropped: zero or negative in the source")
    if price is not None and spot is not None:
        if spot > price:
            tally.dropped["spot_above_on_demand"] += 1
            notes.append(f"spot price dropped: {spot:g} is above on-demand {price:g} in the source")
            spot = None
        elif spot == price:
            tally.dropped["spot_equals_on_demand"] += 1
            notes.append("spot price dropped: equal to on-demand in the source (not a real spot price)")
            spot = None
    if price is None and spot is None:
        return None, None, dropped_reason or "no_price"
    return price, spot, None


def cell_number(fields: dict[str, str], column: str) -> float | None:
    """The number in a CSV cell, None when empty or absent; ValueError when it is not a number."""
    raw = fields.get(column)
    return None if raw is None else parse_number(raw)


def json_number(value: Any) -> float | None:
    """A JSON value as a number: numbers and numeric strings; None for anything else (booleans too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return safe_number(value)
    return None


def safe_number(text: str | None) -> float | None:
    """A number from text, None when absent or not a number."""
    if text is None:
        return None
    try:
        return parse_number(text)
    except ValueError:
        return None
