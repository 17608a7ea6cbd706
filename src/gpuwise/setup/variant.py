"""A CUDA build asked for with the release (`--framework torch==2.8.0+cu126`), as pip and
`torch.__version__` spell it.

PyTorch publishes each release for several CUDA versions; the suffix names one. setup honours it by
choosing among that build alone: it is then held to the driver rules like any other choice (and refused with
the nearest working driver when the branch cannot run its CUDA). A suffix that is no CUDA build of the
release (`+cpu`, `+cu999`) is bad input. Pure.
"""

from __future__ import annotations

import re
from dataclasses import replace

from gpuwise.doctor.tables import Tables
from gpuwise.errors import NotFoundError
from gpuwise.locale import _

_SUFFIX = re.compile(r"\+\s*(?P<variant>[A-Za-z0-9_.]+)\s*$")


def framework_variant(text: str) -> str | None:
    """'torch==2.8.0+cu126' -> 'cu126'; None without a suffix."""
    match = _SUFFIX.search(text)
    return match.group("variant").lower() if match else None


def only_variant(tables: Tables, version: str, variant: str) -> Tables:
    """``tables`` with PyTorch ``version``'s builds narrowed to ``variant`` (other releases untouched, so the
    nearest-choice search can still propose them). NotFoundError when the release has no such build."""
    known = [r.variant for r in tables.frameworks if r.framework == "pytorch" and r.version == version]
    if variant not in known:
        raise NotFoundError(
            _("PyTorch {version} build").format(version=version),
            variant,
            known,
            why=_("PyTorch {version} has CUDA builds {variants}; setup installs CUDA builds only").format(
                version=version, variants=", ".join(known)
            ),
            fix=_(
                "give one of those, e.g. --framework torch=={version}+{variant}, or leave the suffix out"
            ).format(version=version, variant=known[-1]),
        )
    return replace(
        tables,
        frameworks=tuple(
            r
            for r in tables.frameworks
            if not (r.framework == "pytorch" and r.version == version and r.variant != variant)
        ),
    )
