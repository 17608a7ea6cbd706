"""Which CUDA base image and PyTorch wheel a container for a target should use.

The base image comes from the one table and the one chooser `gpuwise setup --container` uses
(gpuwise.setup.images), so the two commands name the same image for the same driver and GPU. The rule is
doctor's, at its strictest: the driver must meet the own driver of the image's exact CUDA release (12.4.1
needs 550.54.15), and of the torch build's CUDA (no `cuda.driver_too_old` finding at all); NVIDIA's images
set NVIDIA_REQUIRE_CUDA, and the NVIDIA Container Toolkit refuses to start one on an older driver. The torch
build must carry code for the GPU's architecture, and run on a driver that drives that architecture: setup's
rule (setup.choose.branch_problem and build_runs_on), so export never writes a container `gpuwise setup`
refuses, such as a CUDA 11.8 image for a Kepler GPU whose last driver branch, 470, predates CUDA 11.8's own
driver. A --driver newer than the architecture's last branch cannot lift that ceiling. The image's Ubuntu
must carry the build's CUDA (setup's OS rule, setup.tables.OsSupport.carries_cuda).

Given a driver, builds are ranked as setup ranks them on a driver branch: the newest PyTorch, stable before
experimental, the newest CUDA (setup.images.build_rank). Without one, the newest PyTorch with its oldest
CUDA (the widest range of drivers), and the driver it needs is stated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.doctor.rules.frameworks import arch_supported
from gpuwise.doctor.tables import FrameworkBuild, Tables, load_tables
from gpuwise.doctor.versions import Version, at_least, format_version, major_minor, parse_version
from gpuwise.errors import UsageError
from gpuwise.locale import _
from gpuwise.setup.choose import branch_problem, build_runs_on
from gpuwise.setup.images import (
    CudaImage,
    build_min_driver,
    build_rank,
    choose_base_image,
    image_min_driver,
    load_images,
)
from gpuwise.setup.tables import Architecture, DriverBranch, driver_text, load_setup_tables

PYTORCH_INDEX = "https://download.pytorch.org/whl/"


@dataclass(frozen=True)
class ImageChoice:
    """The base image and torch wheel for a target, with the figures that decided them."""

    image: CudaImage
    torch_version: str  # pip's pin, e.g. "2.14.0"
    torch_variant: str  # "cu128": the wheel index
    torch_cuda: Version  # the build's CUDA, major.minor (the image's may be older: the wheel brings its own)
    min_driver: Version  # the newer of the image's and the torch build's own drivers (doctor's rule)
    driver: Version | None  # the driver it was chosen for, when given
    gpu: str
    compute_capability: str | None
    # the given driver's branch no longer drives the GPU's architecture: (architecture, its last branch)
    dropped_by_driver: tuple[str, int] | None = None

    @property
    def base(self) -> str:
        return self.image.image

    @property
    def index_url(self) -> str:
        return PYTORCH_INDEX + self.torch_variant


@cache
def _tables() -> Tables:
    return load_tables()


def _candidates(tables: Tables, capability: str | None) -> list[FrameworkBuild]:
    """PyTorch CUDA builds the driver table knows that run on this GPU's architecture."""
    out = []
    for row in tables.frameworks:
        if row.framework != "pytorch" or not row.variant.startswith("cu"):
            continue
        if build_min_driver(row, tables) is None:
            continue
        if capability is not None and not arch_supported(capability, row.arch_list):
            continue
        out.append(row)
    return out


@cache  # pure given the bundled tables; export and its tests ask it for the same rows many times
def _need(row: FrameworkBuild, images: tuple[CudaImage, ...]) -> Version:
    """The oldest driver that runs ``row`` in a base image: its own CUDA's driver and the oldest image's."""
    tables = _tables()
    own = build_min_driver(row, tables)
    assert own is not None  # _candidates kept only rows the table knows
    image_needs = [
        need for image in _images_for(row, images) if (need := image_min_driver(image, tables)) is not None
    ]
    return max(own, min(image_needs)) if image_needs else own


def _images_for(row: FrameworkBuild, images: tuple[CudaImage, ...]) -> tuple[CudaImage, ...]:
    """The images whose Ubuntu's NVIDIA repository carries ``row``'s CUDA (setup's OS rule, as `setup`
    applies it to the machine's OS): no CUDA 11.7 build in an Ubuntu 24.04 image, whose repository starts at
    12.5. An image of unknown Ubuntu is kept."""
    setup_tables = load_setup_tables()
    return tuple(
        image
        for image in images
        if (system := setup_tables.system(f"ubuntu-{image.ubuntu}")) is None
        or system.carries_cuda(row.cuda_version)
    )


def _runs(row: FrameworkBuild, driver: Version, images: tuple[CudaImage, ...]) -> bool:
    return at_least(driver, _need(row, images))


def _architecture_of(capability: str | None) -> Architecture | None:
    return load_setup_tables().architecture_of(capability) if capability is not None else None


def _branches(capability: str | None) -> tuple[DriverBranch, ...] | None:
    """The driver branches setup installs that drive this GPU's architecture (setup's branch_problem);
    None when setup has no facts for the architecture (then no limit applies). Empty for Kepler: its last
    branch, 470, is older than every branch setup installs."""
    architecture = _architecture_of(capability)
    if architecture is None:
        return None
    return tuple(b for b in load_setup_tables().branches if branch_problem(b.branch, architecture) is None)


def _running(
    row: FrameworkBuild, branches: tuple[DriverBranch, ...], images: tuple[CudaImage, ...]
) -> list[DriverBranch]:
    """The branches among ``branches`` on whose every release ``row`` runs (setup's build_runs_on), in a
    base image that runs on the branch's lowest release."""
    tables = _tables()
    return [b for b in branches if build_runs_on(row, b, tables) and _runs(row, b.min_version, images)]


def _drives(
    row: FrameworkBuild, branches: tuple[DriverBranch, ...] | None, images: tuple[CudaImage, ...]
) -> bool:
    """Whether ``row`` runs on some branch that drives the GPU (always, when setup has no facts for it)."""
    return branches is None or bool(_running(row, branches, images))


def _ceiling(
    row: FrameworkBuild, branches: tuple[DriverBranch, ...] | None, images: tuple[CudaImage, ...]
) -> Version | None:
    """The newest driver the image for ``row`` must run on: the lowest release of the newest branch that
    drives the GPU and runs ``row`` (an image that runs there runs on a branch setup accepts)."""
    if branches is None:
        return None
    return max(b.min_version for b in _running(row, branches, images))


def _dropped(driver: Version | None, capability: str | None) -> tuple[str, int] | None:
    """(architecture, last branch) when ``driver``'s branch is past the architecture's last one (setup's
    branch_problem): the Dockerfile says so; its image was chosen for that last branch anyway."""
    architecture = _architecture_of(capability)
    if driver is None or architecture is None or architecture.last_driver_branch is None:
        return None
    past = driver[0] > architecture.last_driver_branch and branch_problem(driver[0], architecture) is not None
    return (architecture.name, architecture.last_driver_branch) if past else None


def _oldest_cuda_first(row: FrameworkBuild) -> tuple[Version, Version]:
    cuda = parse_version(row.cuda_version) or (0,)
    return parse_version(row.version) or (0,), tuple(-p for p in cuda)


def choose_image(gpu: str, *, driver: str | None = None, torch: str | None = None) -> ImageChoice:
    """The base image and torch wheel for ``gpu`` (canonical or alias), a driver version and a torch version.

    Raises UsageError with the nearest working choice when nothing satisfies all three.
    """
    tables, images = _tables(), load_images()
    spec = resolve_gpu(gpu)
    if spec.vendor != "NVIDIA":
        raise UsageError(
            _("{gpu} is an {vendor} GPU, and the Dockerfile export builds on NVIDIA's CUDA images").format(
                gpu=spec.name, vendor=spec.vendor
            ),
            fix=_(
                "write the Dockerfile by hand on the vendor's image (AMD: rocm/pytorch), or export for "
                "an NVIDIA GPU"
            ),
        )
    capability = spec.compute_capability
    wanted_driver = _parse_driver(driver)
    wanted_torch = _parse_torch(torch)
    branches = _branches(capability)
    fits_gpu = _candidates(tables, capability)
    fits_arch = [r for r in fits_gpu if _drives(r, branches, images)]
    fits_torch = [r for r in fits_arch if wanted_torch is None or _same_minor(r.version, wanted_torch)]
    fits_all = [r for r in fits_torch if wanted_driver is None or _runs(r, wanted_driver, images)]
    if not fits_all:
        raise _no_choice(
            spec.name,
            capability=capability,
            fits=(fits_gpu, fits_arch, fits_torch),
            driver=driver,
            torch=torch,
        )
    best = max(fits_all, key=build_rank if wanted_driver is not None else _oldest_cuda_first)
    torch_cuda = major_minor(parse_version(best.cuda_version) or (0,))
    # the image must run on the given driver and on a branch that drives the GPU: on the older of the two
    limits = [v for v in (wanted_driver, _ceiling(best, branches, images)) if v is not None]
    image = choose_base_image(
        torch_cuda, min(limits, default=None), tables=tables, images=_images_for(best, images)
    )
    assert image is not None  # _runs held (or no driver was given)
    own = build_min_driver(best, tables)
    image_own = image_min_driver(image, tables)
    assert own is not None and image_own is not None  # _candidates and choose_base_image keep known rows
    return ImageChoice(
        image=image,
        torch_version=format_version(wanted_torch)
        if wanted_torch and len(wanted_torch) >= 3
        else f"{best.version}.0",
        torch_variant=best.variant,
        torch_cuda=torch_cuda,
        min_driver=max(own, image_own),
        driver=wanted_driver,
        gpu=spec.name,
        compute_capability=capability,
        dropped_by_driver=_dropped(wanted_driver, capability),
    )


def _parse_driver(driver: str | None) -> Version | None:
    if driver is None:
        return None
    parsed = parse_version(driver)
    if parsed is None or parsed[0] < 300:
        raise UsageError(
            _("--driver {driver} is not an NVIDIA driver version").format(driver=repr(driver)),
            fix=_("give the version nvidia-smi shows, e.g. --driver 550.54.15 (or a branch: --driver 550)"),
        )
    return parsed


def _parse_torch(torch: str | None) -> Version | None:
    """X.Y or X.Y.Z (optionally written torch==…): it is pasted into the Dockerfile, so nothing else."""
    if torch is None:
        return None
    match = re.fullmatch(r"(?:torch==)?(\d+\.\d+(?:\.\d+)?)", torch.strip())
    if match is None:
        raise UsageError(
            _("--torch {torch} is not a PyTorch version").format(torch=repr(torch)),
            fix=_("give e.g. --torch 2.8 or --torch 2.8.0"),
        )
    return parse_version(match.group(1))


def _same_minor(version: str, wanted: Version) -> bool:
    parsed = parse_version(version)
    return parsed is not None and major_minor(parsed) == major_minor(wanted)


def _no_choice(
    gpu: str,
    *,
    capability: str | None,
    fits: tuple[list[FrameworkBuild], list[FrameworkBuild], list[FrameworkBuild]],
    driver: str | None,
    torch: str | None,
) -> UsageError:
    """Why nothing fits, and the nearest choice that does. ``fits``: the builds with code for the GPU, those
    of them that run on a driver branch that drives it, and those of them of the asked PyTorch."""
    fits_gpu, fits_arch, fits_torch = fits
    arch = _(" (compute capability {capability})").format(capability=capability) if capability else ""
    if not fits_gpu:
        return UsageError(
            _("No PyTorch CUDA build in gpuwise's tables runs on {gpu}{arch}").format(gpu=gpu, arch=arch),
            fix=_("export for an NVIDIA GPU the tables know (`gpuwise catalog gpus` lists them)"),
        )
    if not fits_arch:
        return _no_driver_drives(gpu, arch, capability, fits_gpu)
    if not fits_torch:
        versions = sorted({r.version for r in fits_arch}, key=lambda v: parse_version(v) or (0,))
        return UsageError(
            _("No PyTorch {torch} CUDA build with a base image runs on {gpu}{arch}").format(
                torch=torch, gpu=gpu, arch=arch
            ),
            fix=_("give a version from {first} to {last}, e.g. --torch {last}").format(
                first=versions[0], last=versions[-1]
            ),
        )
    images = load_images()
    oldest = min(fits_torch, key=lambda r: (_need(r, images), [-p for p in parse_version(r.version) or (0,)]))
    need = driver_text(_need(oldest, images))
    return UsageError(
        (
            _("Driver {driver} is too old for every PyTorch {torch} CUDA build that runs on {gpu}")
            if torch
            else _("Driver {driver} is too old for every PyTorch CUDA build that runs on {gpu}")
        ).format(driver=driver, torch=torch, gpu=gpu),
        why=_(
            "the build that needs the oldest driver, torch {build}, needs CUDA {cuda}'s driver {need} "
            "or newer"
        ).format(build=f"{oldest.version}+{oldest.variant}", cuda=oldest.cuda_version, need=need),
        fix=_("upgrade the driver to >= {need}, or drop --driver to target a new one").format(need=need),
    )


def _no_driver_drives(
    gpu: str, arch: str, capability: str | None, fits_gpu: list[FrameworkBuild]
) -> UsageError:
    """Every build with code for the GPU needs a driver newer than the GPU's architecture's last branch."""
    architecture = _architecture_of(capability)
    assert architecture is not None  # _branches limits only architectures setup has facts for
    last = architecture.last_driver_branch
    images = load_images()
    # the build needing the oldest driver; of those, the newest PyTorch
    oldest = min(fits_gpu, key=lambda r: (_need(r, images), [-p for p in parse_version(r.version) or (0,)]))
    return UsageError(
        _("No PyTorch CUDA build with a base image runs on {gpu}{arch} on a driver that drives it").format(
            gpu=gpu, arch=arch
        ),
        why=_(
            "{architecture}'s last driver branch is {last}, and every PyTorch build with code for it needs "
            "driver {need} or newer, counting the oldest base image gpuwise knows (torch {build} needs the "
            "least)"
        ).format(
            architecture=architecture.name,
            last=last if last is not None else "?",
            need=driver_text(_need(oldest, images)),
            build=f"{oldest.version}+{oldest.variant}",
        ),
        fix=_(
            "choose a newer GPU (`gpuwise catalog gpus` lists them), or write the Dockerfile by hand on "
            "a CUDA image and PyTorch build that driver branch {last} runs"
        ).format(last=last if last is not None else "?"),
    )
