"""Which CUDA base image and PyTorch wheel a container for a target should use.

A small, pure chooser over the compatibility tables `doctor` checks machines against (doctor/data/
cuda-compat.csv and framework-cuda.csv) and the nvidia/cuda tags in data/cuda-images.csv. The base image's
CUDA version matters beyond the libraries: NVIDIA's images set NVIDIA_REQUIRE_CUDA, and the NVIDIA Container
Toolkit refuses to start such a container on a driver older than that CUDA needs. So the rule is doctor's:
the image's CUDA must be one the driver supports in full (driver >= that toolkit's own driver, no
`cuda.driver_too_old` finding at all), and the torch build must carry code for the GPU's architecture.

Given a driver, the newest PyTorch with the newest CUDA that driver supports is chosen; without one, the
newest PyTorch with its oldest CUDA (the widest range of drivers), and the driver it needs is stated.
(A chooser for set-up scripts over the same tables is being built beside this one; they should become one.)
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.doctor.rules.frameworks import arch_supported
from gpuwise.doctor.tables import FrameworkBuild, Tables, load_tables
from gpuwise.doctor.versions import Version, at_least, format_version, major_minor, parse_version
from gpuwise.errors import UsageError

PYTORCH_INDEX = "https://download.pytorch.org/whl/"


@dataclass(frozen=True)
class CudaImage:
    """One nvidia/cuda runtime tag (data/cuda-images.csv)."""

    cuda: Version  # major.minor
    tag: str  # without the repository, e.g. "12.8.1-runtime-ubuntu24.04"
    python: str  # the distribution's Python the image installs (gpuwise needs 3.11 or newer)
    source: str


@dataclass(frozen=True)
class ImageChoice:
    """The base image and torch wheel for a target, with the figures that decided them."""

    image: CudaImage
    torch_version: str  # pip's pin, e.g. "2.14.0"
    torch_variant: str  # "cu128": the wheel index
    min_driver: Version  # the toolkit's own driver for the image's CUDA (doctor's rule)
    driver: Version | None  # the driver it was chosen for, when given
    gpu: str
    compute_capability: str | None

    @property
    def base(self) -> str:
        return f"nvidia/cuda:{self.image.tag}"

    @property
    def index_url(self) -> str:
        return PYTORCH_INDEX + self.torch_variant


def format_driver(version: Version) -> str:
    """A driver version as NVIDIA writes it: the third field has two digits (535.104.05, not 535.104.5)."""
    parts = [str(part) for part in version[:2]] + [f"{part:02d}" for part in version[2:]]
    return ".".join(parts)


@cache
def _tables() -> Tables:
    return load_tables()


@cache
def cuda_images() -> dict[Version, CudaImage]:
    text = resources.files("gpuwise.export").joinpath("data", "cuda-images.csv").read_text(encoding="utf-8")
    images: dict[Version, CudaImage] = {}
    for row in csv.DictReader(io.StringIO(text)):
        version = parse_version(row["cuda"])
        if version is not None:
            images[major_minor(version)] = CudaImage(
                major_minor(version), row["tag"], row["python"], row["source"]
            )
    return images


def _candidates(
    tables: Tables, images: dict[Version, CudaImage], capability: str | None
) -> list[FrameworkBuild]:
    """PyTorch CUDA builds that have a base image and run on this GPU's architecture."""
    out = []
    for row in tables.frameworks:
        cuda = parse_version(row.cuda_version)
        if row.framework != "pytorch" or not row.variant.startswith("cu") or cuda is None:
            continue
        if major_minor(cuda) not in images or _own_driver(row.cuda_version) is None:
            continue
        if capability is not None and not arch_supported(capability, row.arch_list):
            continue
        out.append(row)
    return out


@cache
def _own_driver(cuda_version: str) -> Version | None:
    """The driver a CUDA version's toolkit ships with (its GA release's), None when the table lacks it."""
    req = _tables().cuda_requirement(parse_version(cuda_version) or (0,))
    return None if req is None else req.min_driver


def _min_driver(row: FrameworkBuild) -> Version:
    driver = _own_driver(row.cuda_version)
    assert driver is not None  # _candidates kept only rows the table knows
    return driver


def _key(row: FrameworkBuild, *, newest_cuda: bool) -> tuple[Version, Version]:
    cuda = parse_version(row.cuda_version) or (0,)
    version = parse_version(row.version) or (0,)
    return version, cuda if newest_cuda else tuple(-p for p in cuda)


def choose_image(gpu: str, *, driver: str | None = None, torch: str | None = None) -> ImageChoice:
    """The base image and torch wheel for ``gpu`` (canonical or alias), a driver version and a torch version.

    Raises UsageError with the nearest working choice when nothing satisfies all three.
    """
    tables, images = _tables(), cuda_images()
    spec = resolve_gpu(gpu)
    if spec.vendor != "NVIDIA":
        raise UsageError(
            f"{spec.name} is an {spec.vendor} GPU, and the Dockerfile export builds on NVIDIA's CUDA images",
            fix="write the Dockerfile by hand on the vendor's image (AMD: rocm/pytorch), or export for "
            "an NVIDIA GPU",
        )
    capability = spec.compute_capability
    wanted_driver = _parse_driver(driver)
    wanted_torch = _parse_torch(torch)
    fits_gpu = _candidates(tables, images, capability)
    fits_torch = [r for r in fits_gpu if wanted_torch is None or _same_minor(r.version, wanted_torch)]
    fits_all = [r for r in fits_torch if wanted_driver is None or at_least(wanted_driver, _min_driver(r))]
    if not fits_all:
        raise _no_choice(
            spec.name,
            capability=capability,
            fits_gpu=fits_gpu,
            fits_torch=fits_torch,
            driver=driver,
            torch=torch,
        )
    best = max(fits_all, key=lambda r: _key(r, newest_cuda=wanted_driver is not None))
    cuda = major_minor(parse_version(best.cuda_version) or (0,))
    return ImageChoice(
        image=images[cuda],
        torch_version=format_version(wanted_torch)
        if wanted_torch and len(wanted_torch) >= 3
        else f"{best.version}.0",
        torch_variant=best.variant,
        min_driver=_min_driver(best),
        driver=wanted_driver,
        gpu=spec.name,
        compute_capability=capability,
    )


def _parse_driver(driver: str | None) -> Version | None:
    if driver is None:
        return None
    parsed = parse_version(driver)
    if parsed is None or parsed[0] < 300:
        raise UsageError(
            f"--driver {driver!r} is not an NVIDIA driver version",
            fix="give the version nvidia-smi shows, e.g. --driver 550.54.15 (or a branch: --driver 550)",
        )
    return parsed


def _parse_torch(torch: str | None) -> Version | None:
    """X.Y or X.Y.Z (optionally written torch==…): it is pasted into the Dockerfile, so nothing else."""
    if torch is None:
        return None
    match = re.fullmatch(r"(?:torch==)?(\d+\.\d+(?:\.\d+)?)", torch.strip())
    if match is None:
        raise UsageError(
            f"--torch {torch!r} is not a PyTorch version", fix="give e.g. --torch 2.8 or --torch 2.8.0"
        )
    return parse_version(match.group(1))


def _same_minor(version: str, wanted: Version) -> bool:
    parsed = parse_version(version)
    return parsed is not None and major_minor(parsed) == major_minor(wanted)


def _no_choice(
    gpu: str,
    *,
    capability: str | None,
    fits_gpu: list[FrameworkBuild],
    fits_torch: list[FrameworkBuild],
    driver: str | None,
    torch: str | None,
) -> UsageError:
    """Why nothing fits, and the nearest choice that does."""
    arch = f" (compute capability {capability})" if capability else ""
    if not fits_gpu:
        return UsageError(
            f"No PyTorch CUDA build in gpuwise's tables runs on {gpu}{arch}",
            fix="export for an NVIDIA GPU the tables know (`gpuwise catalog gpus` lists them)",
        )
    if not fits_torch:
        versions = sorted({r.version for r in fits_gpu}, key=lambda v: parse_version(v) or (0,))
        return UsageError(
            f"No PyTorch {torch} CUDA build with a base image runs on {gpu}{arch}",
            fix=f"give a version from {versions[0]} to {versions[-1]}, e.g. --torch {versions[-1]}",
        )
    oldest = min(fits_torch, key=lambda r: (_min_driver(r), [-p for p in parse_version(r.version) or (0,)]))
    need = format_driver(_min_driver(oldest))
    return UsageError(
        f"Driver {driver} is too old for every PyTorch{' ' + torch if torch else ''} CUDA build that "
        f"runs on {gpu}",
        why=f"the build that needs the oldest driver, torch {oldest.version}+{oldest.variant}, needs "
        f"CUDA {oldest.cuda_version}'s driver {need} or newer",
        fix=f"upgrade the driver to >= {need}, or drop --driver to target a new one",
    )
