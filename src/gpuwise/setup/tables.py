"""The setup tables (data/*.csv, provenance in data/README.md), parsed into frozen rows.

Pure parsing of package data. Facts the doctor's tables already hold are not repeated here (one home per
fact): a branch's lowest release and an architecture's first branch are the own drivers of their CUDA
toolkits in the doctor's cuda-compat.csv. The base images are parsed by images.py (shared with `export`).
Standard library, gpuwise.doctor, gpuwise.locale and gpuwise.setup.images only.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuwise.doctor.tables import Tables, load_tables
from gpuwise.doctor.versions import Version, major_minor, parse_version
from gpuwise.locale import N_
from gpuwise.locale import _ as _translate  # a value marked with N_() (the extractor refuses _(variable))
from gpuwise.setup.images import CudaImage, parse_images


@dataclass(frozen=True)
class Architecture:
    name: str
    capabilities: tuple[str, ...]  # "9.0", "8.6", …
    first_driver_branch: int | None  # the branch of its first CUDA's own driver; None: older than the table
    last_driver_branch: int | None  # None: still supported
    open_modules: str  # "unsupported" | "supported" | "required"
    source: str

    def branch_span(self, *, translated: bool = False) -> str:
        """The driver branches that run it, in words: "520 or newer", "up to 470", "450 to 580" (English for
        the script's comments, the user's language for messages)."""
        first, last = self.first_driver_branch, self.last_driver_branch
        text = _SPANS["both" if first and last else "up" if last else "from" if first else "any"]
        return (_translate(text) if translated else text).format(first=first, last=last)


_SPANS = {
    "both": N_("{first} to {last}"),
    "up": N_("up to {last}"),
    "from": N_("{first} or newer"),
    "any": N_("any branch"),
}


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

    def carries_cuda(self, cuda_version: str) -> bool:
        """Whether the distribution's NVIDIA repository carries this CUDA (min_cuda): setup's OS rule,
        which export applies to a base image's Ubuntu."""
        cuda = parse_version(cuda_version)
        return self.min_cuda is None or (cuda is not None and major_minor(cuda) >= major_minor(self.min_cuda))


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


def driver_text(version: Version) -> str:
    """A driver version as NVIDIA writes it: the third field has two digits (580.65.06, not 580.65.6)."""
    parts = [str(p) for p in version]
    if len(parts) >= 3:
        parts[2] = parts[2].zfill(2)
    return ".".join(parts)


def _own_driver(tables: Tables, cuda: Version) -> Version | None:
    req = tables.cuda_requirement(cuda)
    return req.min_driver if req is not None else None


@cache
def load_setup_tables() -> SetupTables:
    """The bundled tables (package data; cached), completed from the doctor's cuda-compat table."""
    return parse_setup_tables(
        load_tables(),
        _read("architectures.csv"),
        _read("driver-branches.csv"),
        _read("os-support.csv"),
        _read("cuda-images.csv"),
    )


def parse_setup_tables(
    tables: Tables,
    architecture_rows: list[dict[str, str]],
    branch_rows: list[dict[str, str]],
    system_rows: list[dict[str, str]],
    image_rows: list[dict[str, str]],
) -> SetupTables:
    """Rows -> tables. A branch whose CUDA's own driver is of another branch is a data error."""
    architectures = []
    for r in architecture_rows:
        first = _own_driver(tables, _version(r["first_cuda"]))
        architectures.append(
            Architecture(
                name=r["architecture"],
                capabilities=tuple(c.strip() for c in r["compute_capabilities"].split("|")),
                first_driver_branch=first[0] if first else None,
                last_driver_branch=_int_or_none(r["last_driver_branch"]),
                open_modules=r["open_kernel_modules"],
                source=r["source"],
            )
        )
    branches = []
    for r in branch_rows:
        own = _own_driver(tables, _version(r["cuda_version"]))
        if own is None or own[0] != int(r["branch"]):
            raise ValueError(f"driver-branches.csv: CUDA {r['cuda_version']} is not of branch {r['branch']}")
        branches.append(
            DriverBranch(
                branch=int(r["branch"]),
                min_version=own,
                min_version_text=driver_text(own),
                cuda_version=_version(r["cuda_version"]),
                designation=r["designation"],
                end_of_life=r["end_of_life"],
                source=r["source"],
            )
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
        for r in system_rows
    )
    return SetupTables(tuple(architectures), tuple(branches), systems, parse_images(image_rows))
