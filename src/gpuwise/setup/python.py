"""Which Python the script's venv is made with on each distribution, and which PyTorch releases it can
install.

pip finds no wheel of a PyTorch release for a Python older than the release supports, so a script that
chose PyTorch 2.14 for Debian 11 (Python 3.9; 2.14 needs 3.10) failed at its last step, after the driver
and the toolkit were in. Each distribution's interpreter (data/python.csv: its stock `python3`, or where
that is too old for current PyTorch and the distribution packages a newer one beside it, that one) and each
release's lowest Python (data/pytorch-python.csv, from PyTorch's release matrix) are tables with their
sources. A container installs PyTorch in the image, so none of this applies there. Pure: package data only.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuwise.doctor.versions import Version, format_version, major_minor, parse_version
from gpuwise.locale import _


@dataclass(frozen=True)
class OsPython:
    command: str  # "python3", "python3.11": the interpreter the venv is made with
    version: Version  # its major.minor
    packages: tuple[str, ...]  # what provides it and its venv/pip
    source: str


def _read(name: str) -> list[dict[str, str]]:
    text = resources.files("gpuwise.setup").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _major_minor(text: str) -> Version:
    parsed = parse_version(text)
    if parsed is None:
        raise ValueError(f"not a version: {text!r}")
    return major_minor(parsed)


@cache
def os_pythons() -> dict[str, OsPython]:
    return {
        r["os"]: OsPython(
            r["python"], _major_minor(r["python_version"]), tuple(r["packages"].split()), r["source"]
        )
        for r in _read("python.csv")
    }


@cache
def torch_min_python() -> dict[str, Version]:
    return {r["pytorch"]: _major_minor(r["min_python"]) for r in _read("pytorch-python.csv")}


def os_python(os_id: str) -> OsPython:
    """The interpreter of a distribution setup knows; another one is assumed to be a `python3` of unknown
    version (never refused on a guess)."""
    return os_pythons().get(os_id) or OsPython("python3", (0, 0), ("python3",), "not in setup's table")


def min_python(torch_version: str) -> Version | None:
    return torch_min_python().get(torch_version)


def runs_on(torch_version: str, os_id: str) -> bool:
    """Whether pip can install this PyTorch release with the distribution's interpreter (unknown: yes)."""
    need, have = min_python(torch_version), os_python(os_id).version
    return need is None or have == (0, 0) or have >= need


def python_too_old(os_id: str, os_name: str, versions: list[str], *, asked: bool) -> tuple[str, str, str]:
    """(what, why, fix) when every PyTorch release that fits the GPU (or the one asked for) needs a newer
    Python than the distribution's: setup raises it as an impossible combination."""
    python = os_python(os_id)
    oldest = min(versions, key=lambda v: min_python(v) or (0, 0))
    have = format_version(python.version)
    what = (
        _("PyTorch {version} cannot be installed with {os}'s Python {python}").format(
            version=oldest, os=os_name, python=have
        )
        if asked
        else _(
            "No PyTorch release with kernels for this GPU can be installed with {os}'s Python {python}"
        ).format(os=os_name, python=have)
    )
    why = _(
        "PyTorch {version} needs Python {need} or newer (PyTorch's release matrix); {os} has {command} "
        "{python} ({source})"
    )
    fix = _("choose another OS, e.g. --os ubuntu-22.04, or use --container (PyTorch goes in the image)")
    return (
        what,
        why.format(
            version=oldest,
            need=format_version(min_python(oldest) or (0, 0)),
            os=os_name,
            command=python.command,
            python=have,
            source=python.source,
        ),
        fix,
    )
