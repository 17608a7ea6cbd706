"""The start-up cost part: hours paid before the first step and after the last one.

start-up hours = boot + environment set-up (image pull or install) + (dataset + model) download
+ final upload (last checkpoint and results), the transfers at the instance's effective network rate.
All nodes pay it together (they boot and download in parallel). It is billed like any other hour of the
instance, so ``cost_breakdown_usd["startup"]`` = hourly price (all nodes) × start-up hours, and the
option's ``hours`` include it.

Figures (``STARTUP``): where a provider publishes a boot time it is cited; everything else is a stated
default (``DEFAULT_*``), labelled "assumed" on the option. Effective rates are what one pull from a
registry or Hugging Face over the internet sustains, not the NIC's line rate (p5's 3,200 Gbps EFA does
not make a registry serve faster).

Pure; standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwise.locale import _

# A CUDA + PyTorch image: NVIDIA's NGC PyTorch container is about 10 GB compressed, 20 GB unpacked
# (catalog.ngc.nvidia.com/orgs/nvidia/containers/pytorch, "Compressed Image Size"); a plain pip install of
# torch with its CUDA wheels pulls ~3 GB. 10 GB is the default.
DEFAULT_IMAGE_GB = 10.0
DEFAULT_BOOT_MINUTES = 5.0  # assumed: request to SSH-ready on a GPU VM
DEFAULT_SETUP_MINUTES = 5.0  # assumed: unpacking the image / installing the stack, beyond the download
DEFAULT_DOWNLOAD_GBPS = 1.0  # assumed effective download rate, gigabits per second
DEFAULT_UPLOAD_GBPS = 0.5  # assumed effective upload rate


@dataclass(frozen=True)
class StartupRates:
    """One provider's start-up figures. `source` says which are published and which assumed."""

    provider: str
    boot_minutes: float
    setup_minutes: float
    download_gbps: float  # effective, gigabits per second
    upload_gbps: float
    image_gb: float
    source: str


def _assumed() -> str:
    return _(
        "assumed: boot {boot} min, set-up {setup} min, {down} Gbps down / {up} Gbps up effective, "
        "{image} GB image (NGC PyTorch, compressed)"
    ).format(
        boot=f"{DEFAULT_BOOT_MINUTES:g}",
        setup=f"{DEFAULT_SETUP_MINUTES:g}",
        down=f"{DEFAULT_DOWNLOAD_GBPS:g}",
        up=f"{DEFAULT_UPLOAD_GBPS:g}",
        image=f"{DEFAULT_IMAGE_GB:g}",
    )


# Providers with a published figure that differs from the defaults. Empty: no provider's boot time or
# effective download rate could be verified from a public page (searched: Lambda, AWS, GCP docs), so every
# provider uses the stated defaults until one is; a user can override them per provider.
STARTUP: dict[str, StartupRates] = {}


def startup_rates(provider: str, overrides: dict[str, StartupRates] | None = None) -> StartupRates:
    """The provider's figures: an override (key "*" for every provider), the table, or the defaults."""
    if overrides:
        found_override = overrides.get(provider, overrides.get("*"))
        if found_override is not None:
            return found_override
    found = STARTUP.get(provider)
    if found is not None:
        return found
    return StartupRates(
        provider,
        boot_minutes=DEFAULT_BOOT_MINUTES,
        setup_minutes=DEFAULT_SETUP_MINUTES,
        download_gbps=DEFAULT_DOWNLOAD_GBPS,
        upload_gbps=DEFAULT_UPLOAD_GBPS,
        image_gb=DEFAULT_IMAGE_GB,
        source=_("{provider}: no published start-up figures; {assumed}").format(
            provider=provider, assumed=_assumed()
        ),
    )


@dataclass(frozen=True)
class Startup:
    hours: float
    text: str  # the parts, for the option's notes


def startup_hours(rates: StartupRates, *, dataset_gb: float, model_gb: float, upload_gb: float) -> Startup:
    """Boot + set-up + image, dataset and model download + final upload, in hours."""
    down_gb = rates.image_gb + dataset_gb + model_gb
    down_h = down_gb * 8.0 / rates.download_gbps / 3600.0 if rates.download_gbps > 0 else 0.0
    up_h = upload_gb * 8.0 / rates.upload_gbps / 3600.0 if rates.upload_gbps > 0 else 0.0
    fixed_h = (rates.boot_minutes + rates.setup_minutes) / 60.0
    hours = fixed_h + down_h + up_h
    text = _(
        "start-up {minutes} min: boot {boot} min + set-up {setup} min + download {down} GB (image {image}, "
        "dataset {dataset}, model {model}) at {down_rate} Gbps + upload {up} GB at {up_rate} Gbps ({source})"
    ).format(
        minutes=f"{hours * 60:,.0f}",
        boot=f"{rates.boot_minutes:g}",
        setup=f"{rates.setup_minutes:g}",
        down=f"{down_gb:,.1f}",
        image=f"{rates.image_gb:g}",
        dataset=f"{dataset_gb:g}",
        model=f"{model_gb:,.1f}",
        down_rate=f"{rates.download_gbps:g}",
        up=f"{upload_gb:,.1f}",
        up_rate=f"{rates.upload_gbps:g}",
        source=rates.source,
    )
    return Startup(hours=hours, text=text)
