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


# Fine-tuned releases keep their base model's architecture: what a newcomer copies from the model page.
_VARIANT_SUFFIXES = ("-instruct", "-chat", "-it", "-hf", "-base")
_FINE_TUNED = ("-instruct", "-chat", "-it")


def _resolve(name: str) -> tuple[str | None, str]:
    """(canonical preset, how it was reached: "" by name, "repo" from a Hugging Face repo id, "variant"
    from a fine-tuned release's name): 'meta-llama/Llama-3.1-8B-Instruct' is llama-3.1-8b."""
    aliases = _aliases()
    text = name.strip().lower()
    if text in aliases:
        return aliases[text], ""
    text = text.rsplit("/", 1)[-1]
    how = "repo"
    for _round in range(3):  # '…-chat-hf' drops both suffixes
        if text in aliases:
            return aliases[text], how
        suffix = next((s for s in _VARIANT_SUFFIXES if text.endswith(s)), "")
        how = "variant" if suffix in _FINE_TUNED else how
        text = text.removesuffix(suffix) if suffix else text
    return None, how


def get_preset(name: str) -> dict[str, Any]:
    """The preset's `[model]` fields (with `preset` set to its canonical name). Raises NotFoundError."""
    key, variant = _resolve(name)
    if key is None:
        raise NotFoundError(
            _("model preset"),
            name,
            list(_aliases()),
            fix=_("use a bundled preset or give params, layers, hidden, heads"),
        )
    row = {k: v for k, v in _table()[key].items() if k != "aliases"}
    row["preset"] = key
    if variant:
        said = (
            _("'{name}' read as preset {key} (a fine-tuned release keeps its base's architecture)")
            if variant == "variant"
            else _("'{name}' read as preset {key}")
        )
        row["source"] = f"{row.get('source', '')}; {said.format(name=name.strip(), key=key)}"
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
