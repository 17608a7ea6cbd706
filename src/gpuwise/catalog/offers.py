"""The offer catalog: every priced GPU instance, normalised, dated and queryable.

Sources are the bundled provider files (``catalog/data/offers``: the SkyPilot-schema CSVs, the AWS JSON
files, the AWS spot CSV; provenance in that folder's README.md and sources.csv) and, when present, the
user's catalog (written by ``gpuwise catalog import`` / ``update``), whose providers replace the bundled
providers of the same id.

Normalisation rules (each one counted in :class:`CatalogStats`):

- GCP accelerator rows price the GPUs only; they are combined with their host VM row (same zone, machine
  family by GCP's naming). GPUs on general N1 hosts (T4, V100, P100, P4) get gpuwise's default host shape,
  ``n1-standard-<8 x GPUs>``, named in ``instance_type``. Without a usable host row the price is GPU-only
  (``gpu_only_price``, with a note).
- The GPU variant follows the instance where a source lumps variants: ``H100`` on an instance named
  ``…pcie…`` is ``H100-PCIe``; ``A100`` with ≥ 70 GiB per GPU in GpuInfo (or ``80g`` in the instance name) is
  ``A100-80GB``; ``V100`` with ≥ 30 GiB is ``V100-32GB``; ``H100`` with 90–100 GiB is ``H100-NVL``.
- Prices that are missing or impossible are dropped (zero or negative, a spot price above or equal to
  on-demand) or the row is skipped (known placeholders, no price left); never guessed.
- AWS: on-demand prices from the newer source (vantage JSON, 2026-01-21), spot prices from the spot CSV
  (2025-11-30) with their own date in ``spot_price_as_of``. AWS China prices stay in CNY.
- Dates: the source's own date where known; otherwise the collection date with ``price_date_exact`` false.

Loading does file I/O (package data and the user catalog); the normalisation itself is pure
(:func:`build_catalog`). Must not import the CLI, pydantic or anything heavy.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

from gpuwise.catalog import cache
from gpuwise.catalog.csvrows import CsvRow, RowProblem, parse_number, read_vms_csv
from gpuwise.catalog.models import Offer
from gpuwise.catalog.specs import alias_key, canonical_gpu_name, load_gpu_specs
from gpuwise.errors import CatalogError, NotFoundError

STALE_AFTER_DAYS = 90
MANIFEST = "manifest.json"

# Providers whose GpuInfo SizeInMiB is the whole instance's GPU memory, not one GPU's
# (vast: "2x-H200" has 287542 = 2 x 143771; primeintellect: "8xA100_80GB" has 655360).
_GPUINFO_SIZE_IS_TOTAL = frozenset({"vast", "primeintellect"})
_SIZE_RE = re.compile(r"sizeinmib['\"]?\s*:\s*([0-9.]+)", re.IGNORECASE)
_PLACEHOLDER_PRICES = frozenset({700.0})  # GCP TPU rows carry 700.0 (README of the bundled files)

# GCP machine family that hosts each accelerator (GCP's naming; README "How to combine with gcp.csv").
_GCP_HOSTS: dict[str, dict[int, str]] = {
    "A100": {
        1: "a2-highgpu-1g",
        2: "a2-highgpu-2g",
        4: "a2-highgpu-4g",
        8: "a2-highgpu-8g",
        16: "a2-megagpu-16g",
    },
    "A100-80GB": {1: "a2-ultragpu-1g", 2: "a2-ultragpu-2g", 4: "a2-ultragpu-4g", 8: "a2-ultragpu-8g"},
    "H100": {1: "a3-highgpu-1g", 2: "a3-highgpu-2g", 4: "a3-highgpu-4g", 8: "a3-highgpu-8g"},
    "H100-MEGA": {8: "a3-megagpu-8g"},
    "H200": {8: "a3-ultragpu-8g"},
    "B200": {8: "a4-highgpu-8g"},
    # g2-standard-4 is the smallest one-L4 shape (4, 8, 12, 16 and 32 vCPUs all carry one L4).
    "L4": {1: "g2-standard-4", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"},
}
# GPUs that attach to general-purpose N1 VMs: gpuwise's stated default host, 8 vCPUs per GPU
# (within GCP's per-GPU vCPU limits for all four: V100 12, P100 16, P4 24, T4 48 vCPUs per GPU).
_GCP_N1_GPUS = frozenset({"T4", "V100", "P100", "P4"})
_N1_VCPUS_PER_GPU = 8


@dataclass(frozen=True)
class SourceInfo:
    """One source file and how far its prices can be trusted in time."""

    file: str
    provider: str
    price_as_of: date
    date_exact: bool
    origin: str


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


class _Tally:
    def __init__(self) -> None:
        self.rows: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.adjusted: Counter[str] = Counter()


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
    if gpu == "A100" and (
        (per_gpu_mib is not None and per_gpu_mib >= 70 * 1024) or re.search(r"80\s*g", inst) is not None
    ):
        return "A100-80GB", "A100 -> A100-80GB (80 GB per GPU in GpuInfo or instance name)"
    if gpu == "V100" and ((per_gpu_mib is not None and per_gpu_mib >= 30 * 1024) or "32g" in inst):
        return "V100-32GB", "V100 -> V100-32GB (32 GB per GPU in GpuInfo or instance name)"
    return gpu, None


def _gpu_memory_gib(gpu: str, per_gpu_mib: float | None) -> float | None:
    spec = load_gpu_specs().get(gpu)
    if spec is not None:
        return spec.memory_gib
    return None if per_gpu_mib is None else round(per_gpu_mib / 1024, 2)


# ---------------------------------------------------------------- prices


def _clean_prices(
    price: float | None, spot: float | None, count: float, tally: _Tally, notes: list[str]
) -> tuple[float | None, float | None, str | None]:
    """(price, spot, skip_reason). Drops impossible fields and counts them; never invents a price."""
    if (
        price is not None
        and spot is not None
        and price == spot
        and (price in _PLACEHOLDER_PRICES or price == count)
    ):
        # $1.00 per GPU-hour for on-demand and spot alike, or 700.0: the placeholders the sources use.
        return None, None, "placeholder_price"
    if price is not None and price in _PLACEHOLDER_PRICES:
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


def _num(fields: dict[str, str], column: str) -> float | None:
    raw = fields.get(column)
    return None if raw is None else parse_number(raw)


# ---------------------------------------------------------------- SkyPilot-schema providers


@dataclass
class _ProviderRows:
    provider: str
    infos: list[SourceInfo] = field(default_factory=list)
    rows: list[tuple[str, CsvRow]] = field(default_factory=list)  # (file, row)


def _source_text(infos: Sequence[SourceInfo]) -> str:
    return "; ".join(f"{i.file} ({i.origin})" for i in infos)


def _skypilot_offers(group: _ProviderRows, tally: _Tally) -> list[Offer]:
    provider = group.provider
    info = min(group.infos, key=lambda i: (i.date_exact, i.price_as_of))  # the least fresh date rules
    source = _source_text(group.infos)
    offers: list[Offer] = []
    hosts: dict[tuple[str, str], CsvRow] = {}
    accel_rows: list[tuple[str, CsvRow]] = []
    for file, row in group.rows:
        f = row.fields
        name = f.get("AcceleratorName", "").strip()
        if not name:
            if provider == "gcp" and f.get("InstanceType", "").strip():
                hosts[(f["InstanceType"].strip(), f.get("AvailabilityZone", "").strip())] = row
            else:
                tally.skipped["no_accelerator_name"] += 1
            continue
        if name.lower().startswith("tpu-"):
            # Google TPUs share gcp's vms.csv; they are not GPUs (and some carry a 700.0 placeholder).
            tally.skipped["not a GPU (TPU)"] += 1
            continue
        accel_rows.append((file, row))
    for _file, row in accel_rows:
        f = row.fields
        try:
            count = _num(f, "AcceleratorCount")
            price = _num(f, "Price")
            spot = _num(f, "SpotPrice")
            vcpus = _num(f, "vCPUs")
            memory = _num(f, "MemoryGiB")
        except ValueError:
            tally.skipped["malformed_row"] += 1
            continue
        if count is None or count <= 0:
            tally.skipped["malformed_row"] += 1
            continue
        instance = f.get("InstanceType", "").strip()
        per_gpu_mib = gpuinfo_per_gpu_mib(provider, f.get("GpuInfo", ""), count)
        gpu, rule = offer_gpu(f["AcceleratorName"], instance, per_gpu_mib)
        notes: list[str] = []
        if rule:
            tally.adjusted[rule] += 1
            notes.append(f"GPU variant: {rule}")
        zone = f.get("AvailabilityZone", "").strip() or None
        gpu_only = False
        if provider == "gcp" and not instance:
            combined = _combine_gcp_host(
                gpu,
                count=int(count),
                zone=zone,
                price=price,
                spot=spot,
                hosts=hosts,
                tally=tally,
                notes=notes,
            )
            instance, price, spot, host_vcpus, host_memory, gpu_only = combined
            vcpus = host_vcpus if host_vcpus is not None else vcpus
            memory = host_memory if host_memory is not None else memory
        price, spot, skip = _clean_prices(price, spot, count, tally, notes)
        if skip:
            tally.skipped[skip] += 1
            continue
        offers.append(
            Offer(
                provider=provider,
                instance_type=instance,
                region=f.get("Region", "").strip(),
                zone=zone,
                gpu=gpu,
                gpus=count,
                gpu_memory_gib=_gpu_memory_gib(gpu, per_gpu_mib),
                vcpus=vcpus,
                memory_gib=memory,
                price_usd_per_hour=price,
                spot_price_usd_per_hour=spot,
                currency="USD",
                price_as_of=info.price_as_of,
                price_date_exact=info.date_exact,
                source=source,
                notes=tuple(notes),
                gpu_only_price=gpu_only,
            )
        )
    return offers


def _combine_gcp_host(
    gpu: str,
    *,
    count: int,
    zone: str | None,
    price: float | None,
    spot: float | None,
    hosts: dict[tuple[str, str], CsvRow],
    tally: _Tally,
    notes: list[str],
) -> tuple[str, float | None, float | None, float | None, float | None, bool]:
    """GCP: (instance_type, price, spot, vcpus, memory_gib, gpu_only) for one accelerator row."""
    default_host = False
    host_name = _GCP_HOSTS.get(gpu, {}).get(count)
    if host_name is None and gpu in _GCP_N1_GPUS:
        host_name = f"n1-standard-{_N1_VCPUS_PER_GPU * count}"
        default_host = True
    if host_name is None:
        tally.adjusted["gcp: GPU-only price (no host family known)"] += 1
        notes.append(f"GPU-only price: no GCP host VM family known for {count}x {gpu}")
        return f"{count}x {gpu} (GPU only)", price, spot, None, None, True
    if spot is not None and price is not None and spot > price:
        # The accelerator's own spot price is above its on-demand price (77 source rows): drop it here so
        # the combined price does not hide the problem.
        tally.dropped["spot_above_on_demand"] += 1
        notes.append(
            f"spot price dropped: accelerator spot {spot:g} is above on-demand {price:g} in the source"
        )
        spot = None
    host = hosts.get((host_name, zone or ""))
    host_price = host_spot = host_vcpus = host_memory = None
    if host is not None:
        try:
            host_price = _num(host.fields, "Price")
            host_spot = _num(host.fields, "SpotPrice")
            host_vcpus = _num(host.fields, "vCPUs")
            host_memory = _num(host.fields, "MemoryGiB")
        except ValueError:
            host = None
    if host is None or host_price is None or host_price <= 0:
        why = "has a placeholder price 0.0" if host is not None else f"has no price row in zone {zone}"
        tally.adjusted["gcp: GPU-only price (host VM price missing)"] += 1
        notes.append(f"GPU-only price: host VM {host_name} {why}; the VM's own cost is not included")
        return host_name, price, spot, host_vcpus, host_memory, True
    if default_host:
        tally.adjusted["gcp: default N1 host shape"] += 1
        notes.append(
            f"host {host_name} is gpuwise's default N1 shape ({_N1_VCPUS_PER_GPU} vCPUs per GPU); "
            "price = host VM + accelerator"
        )
    else:
        tally.adjusted["gcp: host VM + accelerator combined"] += 1
        notes.append(f"price = host VM {host_name} + accelerator")
    total = None if price is None else round(price + host_price, 6)
    total_spot: float | None = None
    if spot is not None:
        if host_spot is not None and host_spot > 0:
            total_spot = round(spot + host_spot, 6)
        else:
            tally.dropped["host_spot_price_missing"] += 1
            notes.append(f"spot price dropped: host VM {host_name} has no spot price")
    return host_name, total, total_spot, host_vcpus, host_memory, False


# ---------------------------------------------------------------- AWS (JSON + spot CSV)


def _aws_gpu(model: str) -> str | None:
    name = model
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    for suffix in (" Tensor Core", " Blackwell"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return canonical_gpu_name(name)


# AWS lumps A100 40/80 GB and V100 16/32 GB under one model name; the instance family decides.
_AWS_FAMILY_GPU = {"p4de": "A100-80GB", "p3dn": "V100-32GB"}


def _aws_memory_gib(text: Any) -> float | None:
    if isinstance(text, int | float):
        return float(text)
    if isinstance(text, str):
        m = re.match(r"\s*([0-9.]+)", text)
        if m:
            return float(m.group(1))
    return None


def _aws_offers(
    vantage: list[dict[str, Any]] | None,
    spot_rows: list[dict[str, str]] | None,
    china: list[dict[str, Any]] | None,
    infos: dict[str, SourceInfo],
    tally: _Tally,
) -> list[Offer]:
    """AWS offers: on-demand from the newer vantage JSON, spot from the older spot CSV, China in CNY."""
    od: dict[tuple[str, str], float | None] = {}
    meta: dict[str, tuple[str | None, float, float | None, float | None]] = {}
    vinfo = infos.get("aws_vantage_gpu_instances.json")
    sinfo = infos.get("aws-gpu-spot.csv")
    cinfo = infos.get("aws_china_vantage_gpu_instances_raw.json")
    for rec in vantage or []:
        name = str(rec.get("name") or rec.get("apiName") or "")
        meta[name] = (
            _aws_gpu(str(rec.get("gpu", ""))),
            float(rec.get("gpuCount") or 0),
            _num_any(rec.get("vcpu")),
            _aws_memory_gib(rec.get("memory")),
        )
        pricing = rec.get("pricing") or {}
        tally.rows["aws_vantage_gpu_instances.json"] += max(1, len(pricing))
        if not pricing:
            tally.skipped["no_price"] += 1
        for region, p in pricing.items():
            od[(name, region)] = _num_any(p.get("onDemand")) if isinstance(p, dict) else None
    spot: dict[tuple[str, str], dict[str, str]] = {}
    for row in spot_rows or []:
        key = (row["instance_type"], row["region"])
        spot[key] = row
        tally.rows["aws-gpu-spot.csv"] += 1
        if row["instance_type"] not in meta or meta[row["instance_type"]][0] is None:
            gpu_model = _aws_gpu(row.get("GPU_model", ""))
            if gpu_model is not None or row["instance_type"] not in meta:
                meta[row["instance_type"]] = (
                    gpu_model,
                    _num_any(row.get("GPU")) or 0.0,
                    _num_any(row.get("vCPU")),
                    _num_any(row.get("memory")),
                )
    offers: list[Offer] = []
    for key in sorted(set(od) | set(spot)):
        instance, region = key
        gpu, count, vcpus, memory = meta.get(instance, (None, 0.0, None, None))
        family = instance.split(".")[0]
        if gpu is not None and family in _AWS_FAMILY_GPU:
            gpu = _AWS_FAMILY_GPU[family]
            tally.adjusted[f"aws: {family} -> {gpu}"] += 1
        if gpu is None or count <= 0:
            tally.skipped["aws: not a GPU in the spec table (Inferentia, Trainium, graphics GPUs…)"] += 1
            continue
        notes: list[str] = []
        price = od.get(key)
        price_info = vinfo
        srow = spot.get(key)
        if key not in od and srow is not None:
            price = _safe_num(srow.get("ondemand"))
            price_info = sinfo
        spot_price = _safe_num(srow.get("spot_avg")) if srow else None
        if spot_price is not None:
            notes.append("spot price: average of the spot prices aws-gpu-spot.csv collected for the region")
        price, spot_price, skip = _clean_prices(price, spot_price, count, tally, notes)
        if skip:
            tally.skipped[skip] += 1
            continue
        info = price_info if price is not None else sinfo
        if info is None:
            continue
        if key in od and srow is not None and srow.get("ondemand") and price is not None:
            tally.adjusted["aws: on-demand from the newer source (vantage 2026-01-21)"] += 1
        offers.append(
            Offer(
                provider="aws",
                instance_type=instance,
                region=region,
                zone=None,
                gpu=gpu,
                gpus=count,
                gpu_memory_gib=_gpu_memory_gib(gpu, None),
                vcpus=vcpus,
                memory_gib=memory,
                price_usd_per_hour=price,
                spot_price_usd_per_hour=spot_price,
                currency="USD",
                price_as_of=info.price_as_of,
                price_date_exact=info.date_exact,
                source=f"{info.file} ({info.origin})"
                + (f"; spot: {sinfo.file} ({sinfo.origin})" if spot_price is not None and sinfo else ""),
                spot_price_as_of=sinfo.price_as_of if spot_price is not None and sinfo else None,
                notes=tuple(notes),
            )
        )
    for rec in china or []:
        instance = str(rec.get("instance_type", ""))
        gpu = _aws_gpu(str(rec.get("GPU_model", "")))
        family = instance.split(".")[0]
        if gpu is not None and family in _AWS_FAMILY_GPU:
            gpu = _AWS_FAMILY_GPU[family]
        count = _num_any(rec.get("GPU")) or 0.0
        pricing = rec.get("pricing") or {}
        tally.rows["aws_china_vantage_gpu_instances_raw.json"] += max(1, len(pricing))
        if not pricing:
            tally.skipped["no_price"] += 1
            continue
        for region, p in pricing.items():
            if gpu is None or count <= 0:
                tally.skipped["aws: not a GPU in the spec table (Inferentia, Trainium, graphics GPUs…)"] += 1
                continue
            # ec2instances.info records: pricing[region]["linux"]["ondemand"], a string
            linux = p.get("linux") if isinstance(p, dict) else None
            value = linux.get("ondemand") if isinstance(linux, dict) else None
            notes = ["price in CNY (AWS China), not converted"]
            price, _, skip = _clean_prices(_safe_num(value), None, count, tally, notes)
            if skip or cinfo is None:
                tally.skipped[skip or "no_price"] += 1
                continue
            offers.append(
                Offer(
                    provider="aws",
                    instance_type=instance,
                    region=region,
                    zone=None,
                    gpu=gpu,
                    gpus=count,
                    gpu_memory_gib=_gpu_memory_gib(gpu, None),
                    vcpus=_num_any(rec.get("vCPU")),
                    memory_gib=_num_any(rec.get("memory")),
                    price_usd_per_hour=price,
                    spot_price_usd_per_hour=None,
                    currency="CNY",
                    price_as_of=cinfo.price_as_of,
                    price_date_exact=cinfo.date_exact,
                    source=f"{cinfo.file} ({cinfo.origin})",
                    notes=tuple(notes),
                )
            )
    return offers


def _num_any(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return _safe_num(value)
    return None


def _safe_num(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_number(text)
    except ValueError:
        return None


# ---------------------------------------------------------------- building and loading


@dataclass(frozen=True)
class SourceFile:
    """One input to :func:`build_catalog`: its provenance and its text."""

    info: SourceInfo
    text: str


def build_catalog(files: Iterable[SourceFile], *, location: str = "bundled") -> Catalog:
    """Normalise source files into a catalog. Pure: text in, catalog out."""
    tally = _Tally()
    groups: dict[str, _ProviderRows] = {}
    aws_json: dict[str, Any] = {}
    infos: dict[str, SourceInfo] = {}
    all_infos: list[SourceInfo] = []
    for src in files:
        info = src.info
        all_infos.append(info)
        infos[info.file] = info
        if info.file.endswith(".json"):
            aws_json[info.file] = json.loads(src.text)
            continue
        if info.file == "aws-gpu-spot.csv":
            aws_json[info.file] = list(csv.DictReader(io.StringIO(src.text, newline="")))
            continue
        rows, problems = read_vms_csv(src.text, info.file, strict=False)
        tally.rows[info.file] += len(rows) + len(problems)
        if problems:
            tally.skipped["malformed_row"] += len(problems)
        group = groups.setdefault(info.provider, _ProviderRows(info.provider))
        group.infos.append(info)
        group.rows.extend((info.file, r) for r in rows)
    offers: list[Offer] = []
    for group in groups.values():
        offers.extend(_skypilot_offers(group, tally))
    if aws_json and "aws" not in groups:
        offers.extend(
            _aws_offers(
                aws_json.get("aws_vantage_gpu_instances.json"),
                aws_json.get("aws-gpu-spot.csv"),
                aws_json.get("aws_china_vantage_gpu_instances_raw.json"),
                infos,
                tally,
            )
        )
    by_provider = Counter(o.provider for o in offers)
    sources: dict[str, date] = {}
    for o in offers:
        newest = o.price_as_of
        if o.spot_price_as_of is not None and o.spot_price_as_of > newest:
            newest = o.spot_price_as_of
        if o.provider not in sources or newest > sources[o.provider]:
            sources[o.provider] = newest
    stats = CatalogStats(
        rows_read=dict(tally.rows),
        offers_by_provider=dict(sorted(by_provider.items())),
        skipped_rows=dict(tally.skipped.most_common()),
        dropped_prices=dict(tally.dropped.most_common()),
        adjusted=dict(tally.adjusted.most_common()),
    )
    return Catalog(
        offers=tuple(offers),
        stats=stats,
        sources=dict(sorted(sources.items())),
        source_files=tuple(all_infos),
        location=location,
    )


def _bundled_dir() -> Any:
    return resources.files("gpuwise.catalog").joinpath("data", "offers")


def bundled_source_infos() -> list[SourceInfo]:
    """The bundled files and their dates (data/offers/sources.csv)."""
    text = _bundled_dir().joinpath("sources.csv").read_text(encoding="utf-8")
    return [
        SourceInfo(
            file=r["file"],
            provider=r["provider"],
            price_as_of=date.fromisoformat(r["price_as_of"]),
            date_exact=r["date_exact"].strip().lower() == "true",
            origin=r["origin"],
        )
        for r in csv.DictReader(io.StringIO(text, newline=""))
    ]


def _user_source_files(catalog_dir: Path) -> list[SourceFile]:
    """The user catalog's files, per its manifest. An unreadable manifest is a CatalogError.

    Every file is read bounded and only if regular (a FIFO or a link to /dev/zero must not hang a
    `plan`), and the manifest may name only files inside the catalog folder."""
    from gpuwise.errors import UsageError
    from gpuwise.files import read_regular

    manifest_path = catalog_dir / MANIFEST
    try:
        manifest = json.loads(read_regular(manifest_path, limit=_MAX_USER_FILE_BYTES))
        files: list[SourceFile] = []
        for provider, entry in sorted(manifest["providers"].items()):
            info = SourceInfo(
                file=str(entry["file"]),
                provider=provider,
                price_as_of=date.fromisoformat(entry["price_as_of"]),
                date_exact=bool(entry.get("date_exact", False)),
                origin=str(entry.get("origin", "user catalog")),
            )
            if Path(info.file).name != info.file or info.file in ("", ".", ".."):
                raise ValueError(f"{MANIFEST} names {info.file!r}, not a file in the catalog folder")
            data = read_regular(catalog_dir / info.file, limit=_MAX_USER_FILE_BYTES)
            files.append(SourceFile(info, data.decode("utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, UsageError) as exc:
        raise CatalogError(
            f"The user catalog in {catalog_dir} cannot be read: {exc}",
            why="its manifest.json or one of its files is missing or damaged",
            fix=f"run `gpuwise catalog import` or `gpuwise catalog update` again, or remove {catalog_dir}",
        ) from exc
    return files


_MAX_USER_FILE_BYTES = 64 << 20  # as catalog import's own bound (store.MAX_FILE_BYTES)
_CACHE: dict[tuple[str, str], Catalog] = {}


def _manifest_stamp(manifest: Path) -> str | None:
    """What changes whenever an import commits (a new inode per atomic rename; timestamps alone can
    repeat within one clock tick). None when there is no manifest."""
    try:
        st = manifest.stat()
    except OSError:
        return None
    return f"{st.st_mtime_ns}-{st.st_ino}-{st.st_size}"


def load_catalog(catalog_dir: Path | None = None) -> Catalog:
    """The bundled catalog, with the user catalog in ``catalog_dir`` (default: the user data dir) merged
    over it provider by provider. Cached per directory and manifest."""
    if catalog_dir is None:
        from gpuwise import paths

        catalog_dir = paths.user_catalog_dir()
    stamp = _manifest_stamp(catalog_dir / MANIFEST)
    key = (str(catalog_dir) if stamp else "", stamp or "")
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    disk_key = _disk_cache_key(catalog_dir, stamp or "")
    catalog = cache.read(_data_dir(), disk_key) if disk_key else None
    if catalog is None:
        try:
            user_files = _user_source_files(catalog_dir) if stamp else []
        except CatalogError:
            if _manifest_stamp(catalog_dir / MANIFEST) == stamp:
                raise
            # an import committed while we read: its old files are gone, so read the new catalog
            return load_catalog(catalog_dir)
        replaced = {f.info.provider for f in user_files}
        bundled = _bundled_dir()
        files = [
            SourceFile(info, bundled.joinpath(info.file).read_text(encoding="utf-8"))
            for info in bundled_source_infos()
            if info.provider not in replaced
        ]
        location = f"bundled + user catalog {catalog_dir}" if user_files else "bundled"
        catalog = build_catalog([*files, *user_files], location=location)
        if disk_key:
            cache.write(_data_dir(), disk_key, catalog)
    _CACHE[key] = catalog
    return catalog


# The built catalog is cached on disk as plain JSON (catalog/cache.py says why and what it costs).


def _data_dir() -> Path:
    from gpuwise import paths

    return paths.data_dir()


def _disk_cache_key(catalog_dir: Path, manifest_stamp: str) -> str | None:
    from gpuwise import __version__
    from gpuwise.catalog import specs

    bundled = _bundled_dir()
    if not isinstance(bundled, Path):  # installed in a zip: no cheap stat, no cache
        return None
    code = [Path(__file__), Path(specs.__file__), Path(cache.__file__)]
    return cache.cache_key(
        f"{__version__}|{catalog_dir}|{manifest_stamp}", [*code, *sorted(bundled.rglob("*"))]
    )


# ---------------------------------------------------------------- queries


def offer_price(offer: Offer, *, spot: bool = False) -> float | None:
    """The price a query sorts by: spot when asked for, else on-demand."""
    return offer.spot_price_usd_per_hour if spot else offer.price_usd_per_hour


def price_age_days(offer: Offer, today: date) -> int:
    return (today - offer.price_as_of).days


def is_stale(offer: Offer, today: date, *, max_age_days: int = STALE_AFTER_DAYS) -> bool:
    """An undated price (collection date only) counts as stale, like one older than ``max_age_days``."""
    return (not offer.price_date_exact) or price_age_days(offer, today) > max_age_days


def resolve_offer_gpu(catalog: Catalog, name: str) -> str:
    """Canonical GPU name for a query: the spec table's, or a name only the offers use (RTX4070)."""
    canonical = canonical_gpu_name(name)
    if canonical is not None:
        return canonical
    key = alias_key(name)
    for gpu in catalog.gpu_names():
        if alias_key(gpu) == key:
            return gpu
    raise NotFoundError(
        "GPU",
        name,
        [*load_gpu_specs(), *catalog.gpu_names()],
        fix="use a name from `gpuwise catalog gpus`, or list the GPUs with offers: `gpuwise catalog offers`",
    )


def query_offers(
    catalog: Catalog,
    *,
    gpu: str | None = None,
    count: int | None = None,
    provider: str | None = None,
    region: str | None = None,
    spot: bool = False,
) -> list[Offer]:
    """Offers matching every given filter, cheapest first (by spot price with ``spot``).

    ``gpu`` matches the canonical GPU exactly (an ``H100-PCIe`` offer is not an ``H100``); ``count`` means
    exactly that many GPUs per instance; ``region`` is a region or zone name, or a glob (``us-*``),
    case-insensitive; ``spot`` keeps offers that have a spot price. USD offers come before other currencies
    (never compared), offers without the sorted price last.
    """
    gpu_name = resolve_offer_gpu(catalog, gpu) if gpu else None
    prov = provider.strip().lower() if provider else None
    if prov is not None and prov not in catalog.stats.offers_by_provider:
        raise NotFoundError(
            "provider",
            prov,
            catalog.providers(),
            fix="use a provider id from `gpuwise catalog stats` (lowercase, as the catalog files are named)",
        )
    pattern = region.strip().lower() if region else None
    is_glob = pattern is not None and any(ch in pattern for ch in "*?[")
    result: list[Offer] = []
    for o in catalog.offers:
        if gpu_name is not None and o.gpu != gpu_name:
            continue
        if count is not None and o.gpus != count:
            continue
        if prov is not None and o.provider != prov:
            continue
        if pattern is not None:
            places = (o.region.lower(), (o.zone or "").lower())
            if is_glob:
                if not any(fnmatch.fnmatchcase(p, pattern) for p in places if p):
                    continue
            elif pattern not in places:
                continue
        if spot and o.spot_price_usd_per_hour is None:
            continue
        result.append(o)

    def sort_key(o: Offer) -> tuple[bool, bool, float, str, str, str]:
        price = offer_price(o, spot=spot)
        return (
            o.currency != "USD",
            price is None,
            price if price is not None else 0.0,
            o.provider,
            o.instance_type,
            o.region,
        )

    result.sort(key=sort_key)
    return result


__all__ = [
    "STALE_AFTER_DAYS",
    "Catalog",
    "CatalogStats",
    "RowProblem",
    "SourceFile",
    "SourceInfo",
    "build_catalog",
    "bundled_source_infos",
    "gpuinfo_per_gpu_mib",
    "is_stale",
    "load_catalog",
    "offer_gpu",
    "offer_price",
    "price_age_days",
    "query_offers",
    "resolve_offer_gpu",
]
