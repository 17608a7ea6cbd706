"""The bundled reference tables (data/*.csv, provenance in data/README.md) and look-ups over them.

Loading reads package data once per call of `load_tables()`; the look-ups are pure. Must not import
anything heavy (no pydantic, no NVML).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cached_property
from importlib import resources

from gpuwise.doctor.versions import Version, major_minor, parse_version


@dataclass(frozen=True)
class CudaCompat:
    """One CUDA toolkit release and the Linux drivers it needs (cuda-compat.csv)."""

    cuda_version: Version
    min_driver: Version  # the toolkit's own ("corresponding") driver; may be branch-level, e.g. (615,)
    min_driver_minor_compat: Version  # lowest driver under Minor Version Compatibility
    source: str


@dataclass(frozen=True)
class FrameworkBuild:
    """One framework release × CUDA build variant (framework-cuda.csv)."""

    framework: str
    version: str
    variant: str
    cuda_version: str
    cudnn_version: str
    nccl_version: str
    arch_list: tuple[str, ...]
    source: str
    status: str = ""  # "stable", "experimental", … as the framework's matrix says (setup prefers stable)


@dataclass(frozen=True)
class XidInfo:
    """What an Xid code means and what to do (xid-errors.csv)."""

    xid: int
    mnemonic: str
    meaning: str
    immediate_action: str
    action_class: str  # app_bug, restart_app, reset_gpu, reboot, rma_candidate, informational, check_hardware
    recommended_action: str
    source: str


@dataclass(frozen=True)
class Tables:
    cuda: tuple[CudaCompat, ...]
    frameworks: tuple[FrameworkBuild, ...]
    xids: dict[int, XidInfo]

    def cuda_requirement(self, cuda_version: Version) -> CudaCompat | None:
        """The driver needs of a CUDA runtime version: the GA (lowest) release of its major.minor that the
        table holds, so '12.4' is judged by 12.4.0. None for a version the table does not know."""
        rows = self._cuda_by_major_minor.get(major_minor(cuda_version), ())
        if not rows:
            return None
        exact = [row for row in rows if row.cuda_version == cuda_version]
        return exact[0] if exact else min(rows, key=lambda row: row.cuda_version)

    @cached_property
    def _cuda_by_major_minor(self) -> dict[Version, tuple[CudaCompat, ...]]:
        """cuda-compat rows by major.minor: `gpuwise setup` asks thousands of times per test run."""
        index: dict[Version, list[CudaCompat]] = {}
        for row in self.cuda:
            index.setdefault(major_minor(row.cuda_version), []).append(row)
        return {key: tuple(rows) for key, rows in index.items()}

    def framework_build(self, framework: str, version: str, variant: str | None) -> FrameworkBuild | None:
        """The row for e.g. ('pytorch', '2.5.1+cu124', None): matched on major.minor and the cuXYZ suffix."""
        parsed = parse_version(version)
        if parsed is None:
            return None
        wanted = major_minor(parsed)
        if variant is None and "+" in version:
            variant = version.split("+", 1)[1]
        for row in self.frameworks:
            row_version = parse_version(row.version)
            if row.framework != framework or row_version is None or major_minor(row_version) != wanted:
                continue
            if variant is None or row.variant == variant:
                return row
        return None


def _read(name: str) -> list[dict[str, str]]:
    text = resources.files("gpuwise.doctor").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def parse_tables(
    cuda_rows: list[dict[str, str]], framework_rows: list[dict[str, str]], xid_rows: list[dict[str, str]]
) -> Tables:
    cuda: list[CudaCompat] = []
    for row in cuda_rows:
        version = parse_version(row["cuda_version"])
        driver = parse_version(row["min_driver_linux"])
        mvc = parse_version(row["min_driver_linux_minor_compat"]) or driver
        if version is None or driver is None or mvc is None:
            continue
        cuda.append(CudaCompat(version, driver, mvc, row["source"]))
    frameworks = tuple(
        FrameworkBuild(
            framework=row["framework"],
            version=row["framework_version"],
            variant=row["build_variant"],
            cuda_version=row["cuda_version"],
            cudnn_version=row["cudnn_version"],
            nccl_version=row["nccl_version"],
            arch_list=tuple(a.strip() for a in row["arch_list_linux_x86_64"].split(",") if a.strip()),
            source=row["source"],
            status=row.get("status", ""),
        )
        for row in framework_rows
    )
    xids: dict[int, XidInfo] = {}
    for row in xid_rows:
        try:
            code = int(row["xid"])
        except ValueError:
            continue
        xids[code] = XidInfo(
            xid=code,
            mnemonic=row["mnemonic"],
            meaning=row["meaning"],
            immediate_action=row["nvidia_immediate_action"],
            action_class=row["doctor_action_class"],
            recommended_action=row["recommended_action"],
            source=row["source"],
        )
    return Tables(cuda=tuple(cuda), frameworks=frameworks, xids=xids)


def load_tables() -> Tables:
    """The bundled tables (package data)."""
    return parse_tables(_read("cuda-compat.csv"), _read("framework-cuda.csv"), _read("xid-errors.csv"))
