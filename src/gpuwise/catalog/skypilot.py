"""The SkyPilot-schema providers (one ``vms.csv`` each): their rows as offers.

GCP's accelerator rows price the GPUs only; each is combined with its host VM row (same zone, machine family
by GCP's naming). GPUs on general N1 hosts (T4, V100, P100, P4) get gpuwise's default host shape,
``n1-standard-<8 x GPUs>``, named in ``instance_type``. Without a usable host row the price is GPU-only
(``gpu_only_price``, with a note). Pure: rows in, offers out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuwise.catalog.csvrows import CsvRow
from gpuwise.catalog.models import Offer, SourceInfo
from gpuwise.catalog.normalise import (
    Tally,
    cell_number,
    clean_prices,
    gpu_memory_gib,
    gpuinfo_per_gpu_mib,
    offer_gpu,
)

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


@dataclass
class ProviderRows:
    """One provider's rows from all its files (GCP: accelerators and host VMs), with the files' provenance."""

    provider: str
    infos: list[SourceInfo] = field(default_factory=list)
    rows: list[tuple[str, CsvRow]] = field(default_factory=list)  # (file, row)


def _source_text(infos: Sequence[SourceInfo]) -> str:
    return "; ".join(f"{i.file} ({i.origin})" for i in infos)


def place_text(region: str) -> str:
    """A region as the file writes it, without its empty parts: vast writes "City, CC, Continent" and leaves
    the city out on some rows (", CN, AS"), shown as a region starting with a stray comma; it is "CN, AS"."""
    if "," not in region:
        return region.strip()
    return ", ".join(part.strip() for part in region.split(",") if part.strip())


def skypilot_offers(group: ProviderRows, tally: Tally) -> list[Offer]:
    """The provider's offers, in row order; every row not turned into one is counted in ``tally``."""
    info = min(group.infos, key=lambda i: (i.date_exact, i.price_as_of))  # the least fresh date rules
    source = _source_text(group.infos)
    hosts, accel_rows = _split_rows(group, tally)
    offers: list[Offer] = []
    for row in accel_rows:
        offer = _row_offer(group.provider, row, hosts, info, source, tally)
        if offer is not None:
            offers.append(offer)
    return offers


def _split_rows(group: ProviderRows, tally: Tally) -> tuple[dict[tuple[str, str], CsvRow], list[CsvRow]]:
    """(GCP host VM rows by (instance type, zone), the GPU rows); rows that are neither are counted."""
    hosts: dict[tuple[str, str], CsvRow] = {}
    accel_rows: list[CsvRow] = []
    for _file, row in group.rows:
        f = row.fields
        name = f.get("AcceleratorName", "").strip()
        if not name:
            if group.provider == "gcp" and f.get("InstanceType", "").strip():
                hosts[(f["InstanceType"].strip(), f.get("AvailabilityZone", "").strip())] = row
            else:
                tally.skipped["no_accelerator_name"] += 1
            continue
        if name.lower().startswith("tpu-"):
            # Google TPUs share gcp's vms.csv; they are not GPUs (and some carry a 700.0 placeholder).
            tally.skipped["not a GPU (TPU)"] += 1
            continue
        accel_rows.append(row)
    return hosts, accel_rows


def _row_offer(  # noqa: PLR0917 - one row and the context it is read in
    provider: str,
    row: CsvRow,
    hosts: dict[tuple[str, str], CsvRow],
    info: SourceInfo,
    source: str,
    tally: Tally,
) -> Offer | None:
    """One GPU row as an offer, or None (counted in ``tally``) when it is malformed or has no price left."""
    f = row.fields
    try:
        count = cell_number(f, "AcceleratorCount")
        price = cell_number(f, "Price")
        spot = cell_number(f, "SpotPrice")
        vcpus = cell_number(f, "vCPUs")
        memory = cell_number(f, "MemoryGiB")
    except ValueError:
        tally.skipped["malformed_row"] += 1
        return None
    if count is None or count <= 0:
        tally.skipped["malformed_row"] += 1
        return None
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
    price, spot, skip = clean_prices(price, spot, count, tally, notes)
    if skip:
        tally.skipped[skip] += 1
        return None
    return Offer(
        provider=provider,
        instance_type=instance,
        region=place_text(f.get("Region", "")),
        zone=zone,
        gpu=gpu,
        gpus=count,
        gpu_memory_gib=gpu_memory_gib(gpu, per_gpu_mib),
        vcpus=vcpus,
        memory_gib=memory,
        price_usd_per_hour=price,
        spot_price_usd_per_hour=spot,
        # the Currency column `catalog fetch` writes for clouds that bill in yuan; absent or empty: USD
        currency=f.get("Currency", "").strip().upper() or "USD",
        price_as_of=info.price_as_of,
        price_date_exact=info.date_exact,
        source=source,
        notes=tuple(notes),
        gpu_only_price=gpu_only,
    )


def _combine_gcp_host(
    gpu: str,
    *,
    count: int,
    zone: str | None,
    price: float | None,
    spot: float | None,
    hosts: dict[tuple[str, str], CsvRow],
    tally: Tally,
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
            host_price = cell_number(host.fields, "Price")
            host_spot = cell_number(host.fields, "SpotPrice")
            host_vcpus = cell_number(host.fields, "vCPUs")
            host_memory = cell_number(host.fields, "MemoryGiB")
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
