"""The `machine` object of every bench result: GPUs, driver, CUDA, framework, CPU, host memory, and the
provider, instance type and price where the config or the cloud's metadata service says them.

The GPU part comes from a Snapshot read through the probe layer (live NVML/nvidia-smi, or a recording), so
it is the same on a real machine and in a replayed test. The provider and instance type come from the
config's `[machine]` section first, else from the metadata service the idle stopper already speaks (one
short attempt per provider). Unknown is null, never a guess.
"""

from __future__ import annotations

import platform
import socket
from collections.abc import Mapping
from typing import Any

from gpuwise.bench.cpu import CpuInfo
from gpuwise.gpu.sample import Snapshot, value_or_none

GIB = 2**30


def gpu_part(snapshot: Snapshot | None) -> dict[str, Any]:
    """gpu (canonical name or null), gpu_name (as the driver says it), gpus, gpu_memory_gib, driver, cuda."""
    from gpuwise.catalog.specs import canonical_gpu_name_from_driver

    samples = snapshot.samples if snapshot is not None else ()
    raw = value_or_none(samples[0].name) if samples else None
    total = value_or_none(samples[0].memory_total_bytes) if samples else None
    return {
        "gpu": canonical_gpu_name_from_driver(str(raw)) if raw else None,
        "gpu_name": str(raw) if raw else None,
        "gpus": len(samples),
        "gpu_memory_gib": round(total / GIB, 2) if total else None,
        "driver": value_or_none(snapshot.driver_version) if snapshot is not None else None,
        "cuda": value_or_none(snapshot.cuda_driver_version) if snapshot is not None else None,
    }


def host_part(cpu: CpuInfo, host_memory_bytes: int | None) -> dict[str, Any]:
    return {
        "hostname": socket.gethostname() or None,
        "cpu": cpu.model,
        "cpu_cores": cpu.cores,
        "cpu_sockets": cpu.sockets,
        "cpu_clock_ghz": round(cpu.clock_ghz, 3) if cpu.clock_ghz else None,
        "host_memory_gib": round(host_memory_bytes / GIB, 2) if host_memory_bytes else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def cloud_part(config_machine: Mapping[str, Any], cloud: tuple[str, str | None] | None) -> dict[str, Any]:
    """provider, instance_type and price_usd_per_hour: the config's [machine] wins over the metadata."""
    provider = config_machine.get("provider") or (cloud[0] if cloud else None)
    instance = config_machine.get("instance_type") or (cloud[1] if cloud else None)
    price = config_machine.get("price_usd_per_hour")
    return {
        "provider": str(provider) if provider else None,
        "instance_type": str(instance) if instance else None,
        "price_usd_per_hour": float(price) if isinstance(price, int | float) else None,
    }


def read_snapshot(replay: str | None = None) -> Snapshot | None:
    """One read of the GPUs, or None when this machine has none (no driver, no NVML, no nvidia-smi)."""
    from gpuwise.errors import GpuwiseError
    from gpuwise.gpu.probe import open_probe

    try:
        probe = open_probe(replay)
    except GpuwiseError:
        if replay is not None:
            raise  # a recording the user named that cannot be read is bad input, not "no GPU"
        return None
    try:
        return probe.read()
    except GpuwiseError:
        return None
    finally:
        probe.close()


def host_memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # psutil cannot read this platform: unknown
        return None


# Where each provider's metadata service names the instance type (their documented paths).
def cloud_instance(metadata_base: str | None, *, timeout_s: float = 1.0) -> tuple[str, str | None] | None:
    """(provider, instance type) from the cloud's metadata service, or None off a cloud. `metadata_base`
    sends every provider's request to one URL (a fake server in tests)."""
    from gpuwise.idle.providers.metadata import (
        MetadataEndpoints,
        MetadataError,
        detect_provider,
        metadata_text_or_none,
    )

    ep = (
        MetadataEndpoints.all_at(metadata_base, timeout_s=timeout_s)
        if metadata_base
        else MetadataEndpoints(timeout_s=timeout_s)
    )
    found = detect_provider(ep)
    if found is None:
        return None
    provider = found[0]
    try:
        if provider == "aws":
            token = metadata_text_or_none(
                ep.aws + "/latest/api/token",
                method="PUT",
                headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"},
                timeout_s=timeout_s,
                data=b"",
            )
            headers = {"X-aws-ec2-metadata-token": token or ""}
            kind = metadata_text_or_none(
                ep.aws + "/latest/meta-data/instance-type", headers=headers, timeout_s=timeout_s
            )
        elif provider == "gcp":
            kind = metadata_text_or_none(
                ep.gcp + "/computeMetadata/v1/instance/machine-type",
                headers={"Metadata-Flavor": "Google"},
                timeout_s=timeout_s,
            )
            kind = kind.rsplit("/", 1)[-1] if kind else None
        elif provider == "azure":
            kind = metadata_text_or_none(
                ep.azure + "/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text",
                headers={"Metadata": "true"},
                timeout_s=timeout_s,
            )
        else:
            kind = metadata_text_or_none(
                ep.alibaba + "/latest/meta-data/instance/instance-type", timeout_s=timeout_s
            )
    except MetadataError:
        kind = None
    return provider, (kind or None)


def machine_object(
    snapshot: Snapshot | None,
    cpu: CpuInfo,
    config_machine: Mapping[str, Any],
    cloud: tuple[str, str | None] | None,
) -> dict[str, Any]:
    """The whole `machine` object: GPU part, host part, cloud part."""
    return {**gpu_part(snapshot), **host_part(cpu, host_memory_bytes()), **cloud_part(config_machine, cloud)}
