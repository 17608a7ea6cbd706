"""Bundled model presets (package data `data/presets.toml`), each citing its source.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any

from gpuwise.errors import NotFoundError
from gpuwise.locale import _


@cache
def _table() -> dict[str, dict[str, Any]]:
    text = resources.files("gpuwise.workload").joinpath("data/presets.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@cache
def _aliases() -> dict[str, str]:
    out: dict[str, str] = {}
    for name, row in _table().items():
        out[name.lower()] = name
        for alias in row.get("aliases", ()):
            out[str(alias).lower()] = name
    return out


def preset_names() -> list[str]:
    """Canonical preset names, in file order."""
    return list(_table())


def get_preset(name: str) -> dict[str, Any]:
    """The preset's `[model]` fields (with `preset` set to its canonical name). Raises NotFoundError."""
    key = _aliases().get(name.strip().lower())
    if key is None:
        raise NotFoundError(
            _("model preset"),
            name,
            list(_aliases()),
            fix=_("use a bundled preset or give params, layers, hidden, heads"),
        )
    row = {k: v for k, v in _table()[key].items() if k != "aliases"}
    row["preset"] = key
    return row


def preset_rows() -> list[dict[str, Any]]:
    """Every preset as `gpuwise presets` shows it: name, kind, parameter counts, aliases and source (the
    diffusion architectures last, their params being the trained denoiser's)."""
    from gpuwise.workload.diffusion_arch import diffusion_preset_rows

    rows = []
    for name, row in _table().items():
        rows.append(
            {
                "name": name,
                "kind": row.get("kind", "transformer"),
                "params": row.get("params"),
                "active_params": row.get("active_params", row.get("params")),
                "aliases": list(row.get("aliases", ())),
                "source": row.get("source", ""),
            }
        )
    return rows + diffusion_preset_rows()
