"""The setup tables (data/*.csv, provenance in data/README.md), parsed into frozen rows.

Pure parsing of package data; the doctor's tables (CUDA ↔ driver, framework builds) are loaded by
`gpuwise.doctor.tables` and passed alongside. Standard library and gpuwise.doctor only.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuwise.doctor.versions import Version, parse_version


@dataclass(frozen=True)
class Architecture:
    name: str
    capabilities: tuple[str, ...]  # "9.0", "8.6", …
    first_driver_branch: int | None  # None: older than every branch setup installs
    last_driver_branch: int | None  # None: still supported
    open_modules: str  # "unsupported" | "supported" | "required"
    source: str


@dataclass(frozen=True)
class DriverBranch:
    branch: int
    min_version: Version  # the lowest release of the branch a repository can install
    min_version_text: str  # as NVIDIA writes it ("580.65.06": the tuple drops the leading zero)
    cuda_version: Version  # the CUDA toolkit that shipped with it
    designation: str  # "ltsb" | "pb" | "nfb" | "unknown"
    end_of_life: str
    source: str


@dataclass(frozen=True)
class OsSupport:
    os: str  # "ubuntu-22.04"
    name: str
    os_release_id: str  # the ID= of /etc/os-release
    family: str  # "apt" | "dnf"
    nvidia_repo: str  # NVIDIA's codename: "ubuntu2204", "rhel9", …
    min_cuda: Version | None  # the oldest CUDA the distribution's NVIDIA repository carries (None: not known)
    max_driver_branch: int | None
    source: str


@dataclass(frozen=True)
class CudaImage:
    cuda_version: Version
    image: str
    source: str


@dataclass(frozen=True)
class SetupTables:
    architectures: tuple[Architecture, ...]
    branches: tuple[DriverBranch, ...]
    systems: tuple[OsSupport, ...]
    images: tuple[CudaImage, ...]

    def architecture_of(self, capability: str) -> Architecture | None:
        return next((a for a in self.architectures if capability in a.capabilities), None)

    def system(self, os_id: str) -> OsSupport | None:
        return next((s for s in self.systems if s.os == os_id), None)

    def branch(self, number: int) -> DriverBranch | None:
        return next((b for b in self.branches if b.branch == number), None)


def _read(name: str) -> list[dict[str, str]]:
    text = resources.files("gpuwise.setup").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip() else None


def _version(text: str) -> Version:
    parsed = parse_version(text)
    if parsed is None:
        raise ValueError(f"not a version: {text!r}")
    return parsed


@cache
def load_setup_tables() -> SetupTables:
    """The bundled tables (package data; cached)."""
    architectures = tuple(
        Architecture(
            name=r["architecture"],
            capabilities=tuple(c.strip() for c in r["compute_capabilities"].split("|")),
            first_driver_branch=_int_or_none(r["first_driver_branch"]),
            last_driver_branch=_int_or_none(r["last_driver_branch"]),
            open_modules=r["open_kernel_modules"],
            source=r["source"],
        )
        for r in _read("architectures.csv")
    )
    branches = tuple(
        DriverBranch(
            branch=int(r["branch"]),
            min_version=_version(r["min_version"]),
            min_version_text=r["min_version"],
            cuda_version=_version(r["cuda_version"]),
            designation=r["designation"],
            end_of_life=r["end_of_life"],
            source=r["source"],
        )
        for r in _read("driver-branches.csv")
    )
    systems = tuple(
        OsSupport(
            os=r["os"],
            name=r["name"],
            os_release_id=r["os_release_ids"],
            family=r["family"],
            nvidia_repo=r["nvidia_repo"],
            min_cuda=parse_version(r["min_cuda"]) if r["min_cuda"].strip() else None,
            max_driver_branch=_int_or_none(r["max_driver_branch"]),
            source=r["source"],
        )
        for r in _read("os-support.csv")
    )
    images = tuple(
        CudaImage(_version(r["cuda_version"]), r["image"], r["source"]) for r in _read("cuda-images.csv")
    )
    return SetupTables(architectures, branches, systems, images)
