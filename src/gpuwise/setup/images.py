"""The one `nvidia/cuda` base-image table and the one rule for which image a driver runs, shared by
`gpuwise setup --container` and `gpuwise export dockerfile` so the two can never name different images.

The driver rule (the stricter of the two the commands once had): an image runs on a driver when the driver
is at least the own driver of the image's exact CUDA release in the doctor's cuda-compat.csv (CUDA release
notes, "CUDA Toolkit and Corresponding Driver Versions"), so 12.4.1 needs 550.54.15, not 12.4.0's
550.54.14. Minor-version compatibility does not count: NVIDIA's images set NVIDIA_REQUIRE_CUDA, and the
NVIDIA Container Toolkit refuses to start them on a driver too old for their CUDA.

The choice: among the images the driver runs, the newest of the framework build's CUDA major.minor, else the
newest older one, else the newest of all (a PyTorch wheel brings its own CUDA runtime, so the image's CUDA
matters only for what else runs in it). Pure given the tables; standard library and gpuwise.doctor only.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuwise.doctor.tables import FrameworkBuild, Tables
from gpuwise.doctor.versions import Version, at_least, major_minor, parse_version


@dataclass(frozen=True)
class CudaImage:
    """One nvidia/cuda runtime tag (data/cuda-images.csv, provenance in data/README.md)."""

    cuda_version: Version  # the exact release, e.g. (12, 4, 1)
    tag: str  # without the repository, e.g. "12.4.1-runtime-ubuntu22.04"
    ubuntu: str  # "22.04"
    python: str  # the distribution package that gives Python >= 3.11 (gpuwise's floor)
    source: str

    @property
    def cuda(self) -> Version:
        return major_minor(self.cuda_version)

    @property
    def image(self) -> str:
        return f"nvidia/cuda:{self.tag}"


def parse_images(rows: list[dict[str, str]]) -> tuple[CudaImage, ...]:
    """Rows -> images. A tag that does not start with its row's CUDA release is a data error."""
    images = []
    for row in rows:
        version = parse_version(row["cuda_version"])
        if version is None or not row["tag"].startswith(row["cuda_version"] + "-"):
            raise ValueError(f"cuda-images.csv: tag {row['tag']!r} is not of CUDA {row['cuda_version']!r}")
        images.append(CudaImage(version, row["tag"], row["ubuntu"], row["python"], row["source"]))
    return tuple(images)


@cache
def load_images() -> tuple[CudaImage, ...]:
    """The bundled table (package data; cached)."""
    text = resources.files("gpuwise.setup").joinpath("data", "cuda-images.csv").read_text(encoding="utf-8")
    return parse_images(list(csv.DictReader(io.StringIO(text, newline=""))))


def image_min_driver(image: CudaImage, tables: Tables) -> Version | None:
    """The driver an image needs: its exact CUDA release's own driver; None when the table lacks it."""
    req = tables.cuda_requirement(image.cuda_version)
    return req.min_driver if req is not None else None


def image_runs_on(image: CudaImage, driver: Version, tables: Tables) -> bool:
    """THE driver rule for base images (module docstring)."""
    need = image_min_driver(image, tables)
    return need is not None and at_least(driver, need)


def choose_base_image(
    cuda_version: Version, driver: Version | None, *, tables: Tables, images: tuple[CudaImage, ...]
) -> CudaImage | None:
    """THE base-image choice for a framework build of ``cuda_version`` on ``driver`` (None: any driver, so
    the image of the build's own CUDA when the table has one). None when the driver runs no image."""
    runnable = [
        image
        for image in images
        if image_min_driver(image, tables) is not None
        and (driver is None or image_runs_on(image, driver, tables))
    ]
    want = major_minor(cuda_version)
    same = [i for i in runnable if i.cuda == want]
    older = [i for i in runnable if i.cuda < want]
    pool = same or older or runnable
    return max(pool, key=lambda i: i.cuda_version) if pool else None


def build_min_driver(build: FrameworkBuild, tables: Tables) -> Version | None:
    """The driver a framework build needs: its CUDA toolkit's own driver (a major.minor such as "12.4" is
    judged by its GA release, as the doctor does); None when the table lacks that CUDA."""
    cuda = parse_version(build.cuda_version)
    req = tables.cuda_requirement(cuda) if cuda is not None else None
    return req.min_driver if req is not None else None


def build_rank(build: FrameworkBuild) -> tuple[Version, bool, Version]:
    """How both commands rank framework builds that run: the newest release, stable before experimental,
    then the newest CUDA. A driver branch or a driver is fixed before this ranking applies."""
    return (
        parse_version(build.version) or (0,),
        build.status == "stable",
        parse_version(build.cuda_version) or (0,),
    )
