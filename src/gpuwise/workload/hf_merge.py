"""`[model] hf_config`: a workload's config.json read and laid under the user's `[model]` keys.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.locale import _


def merge_hf_config(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The workload dict with `[model]` filled from its `hf_config` file (keys given in `[model]` win).

    The path is relative to the workload file (`source`); `model.source` says which file and which of its
    fields were read, and the estimate's assumptions carry it."""
    from gpuwise.workload.hf_config import load_hf_config, read_hf_config

    model = data.get("model")
    if not isinstance(model, dict) or "hf_config" not in model:
        return data
    name = model["hf_config"]
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            _("Workload file {source}: key 'model.hf_config' must be a path (a string), got {got}").format(
                source=source, got=repr(name)
            ),
            fix=_('write e.g. hf_config = "models/llama-3-8b/config.json" (relative to the workload file)'),
        )
    if "preset" in model:
        raise ConfigError(
            _("Workload file {source}: [model] gives both preset and hf_config").format(source=source),
            why=_("each describes the whole architecture; gpuwise would not know which to believe"),
            fix=_("keep one of them (keys written beside it still override what it gives)"),
        )
    path = _config_path(name, source)
    arch = read_hf_config(load_hf_config(path), str(path))
    fields = arch.model_fields()
    if "params" in model and "active_params" not in model:
        # the counted active figure belongs to the counted total: with the user's total, derive it anew
        del fields["active_params"]
    overridden = sorted(k for k in fields if k in model)
    note = (
        f"hf_config {name} ({arch.model_type}): read {', '.join(dict.fromkeys(arch.used))}; "
        f"{arch.params / 1e9:.3g}B params"
        + (f", {arch.active_params / 1e9:.3g}B active per token" if arch.experts > 1 else "")
        + " counted from the architecture (embeddings"
        + (", tied output head" if arch.tied_embeddings else " and output head")
        + ", attention, MLP"
        + (f", {arch.experts} routed experts" if arch.experts > 1 else "")
        + (f" + {arch.shared_experts} shared" if arch.shared_experts else "")
        + ", norms)"
    )
    if arch.encoder_decoder:
        note += (
            f"; encoder-decoder: encoder, decoder and cross-attention counted; inference estimated per "
            f"stack, training as one stack of {arch.layers} layers (encoder + decoder)"
        )
    if overridden:
        note += "; overridden in [model]: " + ", ".join(overridden)
    merged = {**fields, **model, "source": note}
    return {**data, "model": merged}


def _config_path(name: str, source: str) -> Path:
    """The config.json `hf_config` names, relative to the workload file: a folder holding one (what
    `huggingface-cli download` leaves) stands for it; a Hugging Face repo id is not a file, and says so."""
    path = Path(name).expanduser()
    if not path.is_absolute():
        path = Path(source).parent / path
    if path.is_dir() and (path / "config.json").is_file():
        return path / "config.json"
    if not path.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", name) and not name.endswith(".json"):
        raise ConfigError(
            _(
                "Workload file {source}: hf_config '{name}' looks like a Hugging Face repo id, not a file"
            ).format(source=source, name=name),
            why=_("the file is read locally: gpuwise never downloads"),
            fix=_(
                "download https://huggingface.co/{name}/resolve/main/config.json next to the workload file "
                'and write hf_config = "config.json"'
            ).format(name=name),
        )
    return path
