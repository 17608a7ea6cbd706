"""Catalog data models: a GPU's datasheet figures, one priced instance offer, and the built offer catalog
with its sources and stats.

Pure data; loading lives in the loader modules. Consumers (estimate, plan) depend only on these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date


@dataclass(frozen=True)
class Figure:
    """One datasheet figure with where it came from. `value` None means the vendor does not publish it."""

    value: float | None
    source: str


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model under its canonical name (SkyPilot's AcceleratorName convention)."""

    name: str  # canonical, e.g. "H100", "A100-80GB"
    vendor: str  # "NVIDIA" | "AMD" | "Intel"
    architecture: str  # "Hopper", "Ampere", "CDNA3", …
    memory_gib: float  # as nvidia-smi reports the total (GiB)
    memory_bandwidth_gbs: Figure  # GB/s (10**9 bytes per second)
    # dense tensor TFLOPS by dtype: "fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"
    tflops: dict[str, Figure]
    nvlink_bidir_gbs: Figure  # per GPU, both directions together; None = no NVLink
    pcie_gen: int | None
    tdp_watts: Figure
    compute_capability: str | None  # "9.0"; None for non-NVIDIA
    form_factor: str  # "SXM", "PCIe", …
    aliases: tuple[str, ...] = ()
    notes: str = ""

    def peak_tflops(self, dtype: str) -> float | None:
        fig = self.tflops.get(dtype)
        return None if fig is None else fig.value


@dataclass(frozen=True)
class Offer:
    """One instance type in one region/zone at one provider, with its dated prices.

    Prices are per instance per hour in `currency` (USD for all providers but AWS China, CNY).
    The field names say `usd` because that is the contract (docs/json.md); `currency` rules.
    """

    provider: str  # lowercase id: "aws", "gcp", "lambda", …
    instance_type: str
    region: str
    zone: str | None
    gpu: str  # canonical GPU name
    gpus: float  # per instance (fractional for shared GPUs some marketplaces list)
    gpu_memory_gib: float | None  # per GPU
    vcpus: float | None
    memory_gib: float | None  # host RAM
    price_usd_per_hour: float | None  # on-demand
    spot_price_usd_per_hour: float | None
    currency: str
    price_as_of: date
    price_date_exact: bool  # False: price_as_of is the collection date, not the source's own
    source: str  # file and origin, e.g. "lambda.csv (skypilot-catalog v8, commit …)"
    spot_price_as_of: date | None = None  # when the spot price comes from another, dated source
    notes: tuple[str, ...] = field(default_factory=tuple)  # e.g. "GPU-only price: host VM not included"
    gpu_only_price: bool = False  # GCP accelerator rows without a host VM price


@dataclass(frozen=True)
class SourceInfo:
    """One source file and how far its prices can be trusted in time."""

    file: str
    provider: str
    price_as_of: date
    date_exact: bool
    origin: str


@dataclass(frozen=True)
class SourceFile:
    """One input to the catalog build: its provenance and its text."""

    info: SourceInfo
    text: str


@dataclass(frozen=True)
class CatalogStats:
    """What loading did: rows read per file, offers per provider, and every skip, drop and adjustment."""

    rows_read: dict[str, int]
    offers_by_provider: dict[str, int]
    skipped_rows: dict[str, int]  # reason -> rows not turned into an offer
    dropped_prices: dict[str, int]  # reason -> price fields removed from offers that were kept
    adjusted: dict[str, int]  # rule -> offers whose GPU or price was normalised

    @property
    def offers(self) -> int:
        return sum(self.offers_by_provider.values())


@dataclass(frozen=True)
class Catalog:
    """All offers with their stats and the date of each provider's newest price."""

    offers: tuple[Offer, ...]
    stats: CatalogStats
    sources: dict[str, date]  # provider -> newest price date
    source_files: tuple[SourceInfo, ...] = ()
    location: str = "bundled"  # "bundled", or the user catalog directory merged over it

    def providers(self) -> list[str]:
        return sorted(self.offers_by_provider())

    def offers_by_provider(self) -> dict[str, int]:
        return dict(self.stats.offers_by_provider)

    def gpu_names(self) -> list[str]:
        return sorted({o.gpu for o in self.offers})
