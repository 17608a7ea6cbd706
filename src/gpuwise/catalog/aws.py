"""AWS: offers from the vantage JSON (on-demand), the spot CSV (spot) and the AWS China JSON (CNY).

On-demand prices come from the newer source (vantage JSON, 2026-01-21) and spot prices from the spot CSV
(2025-11-30) with their own date in ``spot_price_as_of``; an instance only the spot CSV lists takes its
on-demand price from there. AWS lumps A100 40/80 GB and V100 16/32 GB under one model name, so the instance
family decides. AWS China prices stay in CNY, never converted. Pure: parsed JSON and CSV rows in, offers out.
"""

from __future__ import annotations

import re
from typing import Any

from gpuwise.catalog.models import Offer, SourceInfo
from gpuwise.catalog.normalise import Tally, clean_prices, gpu_memory_gib, json_number, safe_number
from gpuwise.catalog.specs import canonical_gpu_name

VANTAGE_FILE = "aws_vantage_gpu_instances.json"
SPOT_FILE = "aws-gpu-spot.csv"
CHINA_FILE = "aws_china_vantage_gpu_instances_raw.json"

# AWS lumps A100 40/80 GB and V100 16/32 GB under one model name; the instance family decides.
_AWS_FAMILY_GPU = {"p4de": "A100-80GB", "p3dn": "V100-32GB"}
_NOT_A_GPU = "aws: not a GPU in the spec table (Inferentia, Trainium, graphics GPUs…)"

# instance type -> (canonical GPU or None, GPUs, vCPUs, memory GiB)
_Meta = dict[str, tuple[str | None, float, float | None, float | None]]
_Key = tuple[str, str]  # (instance type, region)


def _aws_gpu(model: str) -> str | None:
    name = model
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    for suffix in (" Tensor Core", " Blackwell"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return canonical_gpu_name(name)


def _aws_memory_gib(text: Any) -> float | None:
    if isinstance(text, int | float):
        return float(text)
    if isinstance(text, str):
        m = re.match(r"\s*([0-9.]+)", text)
        if m:
            return float(m.group(1))
    return None


def aws_offers(
    vantage: list[dict[str, Any]] | None,
    spot_rows: list[dict[str, str]] | None,
    china: list[dict[str, Any]] | None,
    infos: dict[str, SourceInfo],
    tally: Tally,
) -> list[Offer]:
    """AWS offers: on-demand from the newer vantage JSON, spot from the older spot CSV, China in CNY."""
    od, meta = _vantage_index(vantage or [], tally)
    spot = _spot_index(spot_rows or [], meta, tally)
    offers = _global_offers(od, spot, meta, infos.get(VANTAGE_FILE), infos.get(SPOT_FILE), tally)
    offers.extend(_china_offers(china or [], infos.get(CHINA_FILE), tally))
    return offers


def _vantage_index(vantage: list[dict[str, Any]], tally: Tally) -> tuple[dict[_Key, float | None], _Meta]:
    """(on-demand price by (instance, region), each instance's GPU and shape) from the vantage JSON."""
    od: dict[_Key, float | None] = {}
    meta: _Meta = {}
    for rec in vantage:
        name = str(rec.get("name") or rec.get("apiName") or "")
        meta[name] = (
            _aws_gpu(str(rec.get("gpu", ""))),
            float(rec.get("gpuCount") or 0),
            json_number(rec.get("vcpu")),
            _aws_memory_gib(rec.get("memory")),
        )
        pricing = rec.get("pricing") or {}
        tally.rows[VANTAGE_FILE] += max(1, len(pricing))
        if not pricing:
            tally.skipped["no_price"] += 1
        for region, p in pricing.items():
            od[(name, region)] = json_number(p.get("onDemand")) if isinstance(p, dict) else None
    return od, meta


def _spot_index(spot_rows: list[dict[str, str]], meta: _Meta, tally: Tally) -> dict[_Key, dict[str, str]]:
    """The spot CSV's rows by (instance, region); fills ``meta`` for instances the vantage JSON lacks or
    whose GPU it does not name."""
    spot: dict[_Key, dict[str, str]] = {}
    for row in spot_rows:
        key = (row["instance_type"], row["region"])
        spot[key] = row
        tally.rows[SPOT_FILE] += 1
        if row["instance_type"] not in meta or meta[row["instance_type"]][0] is None:
            gpu_model = _aws_gpu(row.get("GPU_model", ""))
            if gpu_model is not None or row["instance_type"] not in meta:
                meta[row["instance_type"]] = (
                    gpu_model,
                    json_number(row.get("GPU")) or 0.0,
                    json_number(row.get("vCPU")),
                    json_number(row.get("memory")),
                )
    return spot


def _global_offers(  # noqa: PLR0917 - the two indexes, the instance table and their provenance
    od: dict[_Key, float | None],
    spot: dict[_Key, dict[str, str]],
    meta: _Meta,
    vinfo: SourceInfo | None,
    sinfo: SourceInfo | None,
    tally: Tally,
) -> list[Offer]:
    """One offer per (instance, region) either source prices, sorted by that key."""
    offers: list[Offer] = []
    for key in sorted(set(od) | set(spot)):
        instance, region = key
        gpu, count, vcpus, memory = meta.get(instance, (None, 0.0, None, None))
        family = instance.split(".")[0]
        if gpu is not None and family in _AWS_FAMILY_GPU:
            gpu = _AWS_FAMILY_GPU[family]
            tally.adjusted[f"aws: {family} -> {gpu}"] += 1
        if gpu is None or count <= 0:
            tally.skipped[_NOT_A_GPU] += 1
            continue
        notes: list[str] = []
        price = od.get(key)
        price_info = vinfo
        srow = spot.get(key)
        if key not in od and srow is not None:
            price = safe_number(srow.get("ondemand"))
            price_info = sinfo
        spot_price = safe_number(srow.get("spot_avg")) if srow else None
        if spot_price is not None:
            notes.append("spot price: average of the spot prices aws-gpu-spot.csv collected for the region")
        price, spot_price, skip = clean_prices(price, spot_price, count, tally, notes)
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
                gpu_memory_gib=gpu_memory_gib(gpu, None),
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
    return offers


def _china_offers(china: list[dict[str, Any]], cinfo: SourceInfo | None, tally: Tally) -> list[Offer]:
    """AWS China (ec2instances.info records): on-demand only, in CNY."""
    offers: list[Offer] = []
    for rec in china:
        instance = str(rec.get("instance_type", ""))
        gpu = _aws_gpu(str(rec.get("GPU_model", "")))
        family = instance.split(".", maxsplit=1)[0]
        if gpu is not None and family in _AWS_FAMILY_GPU:
            gpu = _AWS_FAMILY_GPU[family]
        count = json_number(rec.get("GPU")) or 0.0
        pricing = rec.get("pricing") or {}
        tally.rows[CHINA_FILE] += max(1, len(pricing))
        if not pricing:
            tally.skipped["no_price"] += 1
            continue
        for region, p in pricing.items():
            if gpu is None or count <= 0:
                tally.skipped[_NOT_A_GPU] += 1
                continue
            # ec2instances.info records: pricing[region]["linux"]["ondemand"], a string
            linux = p.get("linux") if isinstance(p, dict) else None
            value = linux.get("ondemand") if isinstance(linux, dict) else None
            notes = ["price in CNY as AWS China publishes it (converted only at a rate that is stated)"]
            price, _, skip = clean_prices(safe_number(value), None, count, tally, notes)
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
                    gpu_memory_gib=gpu_memory_gib(gpu, None),
                    vcpus=json_number(rec.get("vCPU")),
                    memory_gib=json_number(rec.get("memory")),
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
