"""Reading a workload file: TOML loading, key checks, preset merging and one clear message for bad input.

`load_workload(path)` reads a TOML file; `parse_workload(data, source)` validates an already-parsed dict.
Both return a `Workload` (gpuwise.workload.spec) whose model section is resolved (preset or `hf_config`
merged with the user's overrides, defaults filled), so the estimator never looks anything up again. Every
problem becomes one `ConfigError` naming the file, the key path (`train.micro_batch`), what was expected
and, for a misspelt key or a Hugging Face name pasted in, the key to write instead.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gpuwise.errors import ConfigError, NotFoundError, close_matches
from gpuwise.locale import _
from gpuwise.workload.diffusion import USER_KEYS as _DIFFUSION_KEYS
from gpuwise.workload.diffusion import DiffusionSpec, merge_diffusion
from gpuwise.workload.hf_merge import merge_hf_config
from gpuwise.workload.measured import USER_KEYS as _MEASURED_KEYS
from gpuwise.workload.measured import MeasuredSpec, attach_measurement
from gpuwise.workload.spec import Constraints, DataSpec, InferenceSpec, ModelSpec, TrainSpec, Workload

# Keys of a Hugging Face config.json and of HF TrainingArguments users paste into a workload: the gpuwise key
# to write instead, and the section it belongs in.
HF_KEYS: dict[str, tuple[str, str]] = {
    "num_hidden_layers": ("model", "layers"),
    "n_layer": ("model", "layers"),
    "hidden_size": ("model", "hidden"),
    "n_embd": ("model", "hidden"),
    "num_attention_heads": ("model", "heads"),
    "n_head": ("model", "heads"),
    "num_key_value_heads": ("model", "kv_heads"),
    "vocab_size": ("model", "vocab"),
    "intermediate_size": ("model", "ffn_hidden"),
    "num_local_experts": ("model", "experts"),
    "num_experts_per_tok": ("model", "experts_per_token"),
    "tie_word_embeddings": ("model", "tied_embeddings"),
    "max_position_embeddings": ("train", "seq_len"),
    "max_seq_length": ("train", "seq_len"),
    "cutoff_len": ("train", "seq_len"),
    "per_device_train_batch_size": ("train", "micro_batch"),
    "micro_batch_size": ("train", "micro_batch"),
    "gradient_checkpointing": ("train", "activation_checkpointing"),
    "num_train_epochs": ("train", "epochs"),
    "lora_r": ("train", "lora_rank"),
    "load_in_4bit": ("train", "base_precision"),
    "load_in_8bit": ("train", "base_precision"),
    "sample_packing": ("train", "packing"),
    "bf16": ("train", "precision"),
    "fp16": ("train", "precision"),
    "params": ("model", "params"),
    "layers": ("model", "layers"),
    "hidden": ("model", "hidden"),
    "heads": ("model", "heads"),
    "seq_len": ("train", "seq_len"),
    "micro_batch": ("train", "micro_batch"),
    "framework": ("train", "framework"),
    "base_precision": ("train", "base_precision"),
    "avg_tokens": ("train", "avg_tokens"),
    "offload_optimizer": ("train", "offload"),
    "offload_param": ("train", "offload"),
    "cpu_offload": ("train", "offload"),
    "use_liger_kernel": ("train", "fused_kernels"),
}
# What to write for a HF key whose gpuwise value is not the same number.
_HF_VALUE_HINT = {
    "gradient_checkpointing": 'activation_checkpointing = "full"',
    "load_in_4bit": 'base_precision = "nf4"',
    "load_in_8bit": 'base_precision = "int8"',
    "bf16": 'precision = "bf16"',
    "fp16": 'precision = "fp16"',
    "offload_optimizer": 'offload = "optimizer"',
    "offload_param": 'offload = "optimizer+params"',
    "cpu_offload": 'offload = "optimizer+params"',
    "use_liger_kernel": "fused_kernels = true",
}

_SECTIONS: dict[str, type[BaseModel]] = {
    "model": ModelSpec,
    "train": TrainSpec,
    "inference": InferenceSpec,
    "data": DataSpec,
    "constraints": Constraints,
    "measured": MeasuredSpec,
    "diffusion": DiffusionSpec,
}
_MODEL_USER_KEYS = [k for k in ModelSpec.model_fields if k != "source"]


def _check_keys(data: dict[str, Any], source: str) -> None:
    """Unknown keys first, so a misspelling gets "did you mean" rather than a missing-field message."""
    top = ["name", "task", *_SECTIONS]
    for key, value in data.items():
        if key not in top:
            _unknown(source, key, top)
        if key in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(
                    _("Workload file {source}: key '{key}' must be a table [{key}], got {type}").format(
                        source=source, key=key, type=type(value).__name__
                    ),
                    fix=_("write it as a section: [{key}] followed by key = value lines").format(key=key),
                )
            allowed = _section_keys(key)
            for sub in value:
                if sub not in allowed:
                    _unknown(source, f"{key}.{sub}", allowed, section=key)


def _unknown(source: str, path: str, allowed: list[str], section: str = "") -> None:
    leaf = path.rsplit(".", 1)[-1]
    if leaf in HF_KEYS:
        home, key = HF_KEYS[leaf]
        write = _HF_VALUE_HINT.get(leaf, f"{key} = …")
        same = leaf == key
        if not same:
            message = _(
                "Workload file {source}: key '{path}' is a Hugging Face config/training-argument name, "
                "not a workload key"
            )
            fix = _("move it: under [{home}] write {write} (the value of {leaf}); remove '{path}'")
        elif section:
            message = _("Workload file {source}: key '{path}' belongs in [{home}], not [{section}]")
            fix = _("move it: under [{home}] write {write}")
        else:
            message = _("Workload file {source}: key '{path}' belongs in [{home}], not the top level")
            fix = _("move it: under [{home}] write {write}")
        raise ConfigError(
            message.format(source=source, path=path, home=home, section=section),
            why=_("gpuwise reads '{key}' from the [{home}] section").format(key=key, home=home),
            fix=fix.format(home=home, write=write, leaf=leaf, path=path),
        )
    homes = [name for name in _SECTIONS if name != section and leaf in _section_keys(name)]
    if homes and leaf not in ("name", "task"):
        _misplaced(source, path, leaf, section, homes)
    hint = close_matches(leaf, allowed)
    where = f"[{section}]" if section else _("the top level")
    message = _("Workload file {source}: unknown key '{path}'").format(source=source, path=path)
    if hint:
        message += _(" (did you mean '{key}'?)").format(key=f"{(section + '.') if section else ''}{hint[0]}")
    raise ConfigError(
        message,
        why=_("keys allowed in {where}: {keys}").format(where=where, keys=", ".join(allowed)),
        fix=_("correct or remove the key (`gpuwise schema workload` lists every key)"),
    )


def _section_keys(section: str) -> list[str]:
    special = {"model": _MODEL_USER_KEYS, "measured": _MEASURED_KEYS, "diffusion": _DIFFUSION_KEYS}
    return special.get(section, list(_SECTIONS[section].model_fields))


def _misplaced(source: str, path: str, leaf: str, section: str, homes: list[str]) -> None:
    """A workload key written in the wrong section: a key typed before any [section] header, or after the
    wrong one, lands there in TOML ('deadline_hours' above [model] is a top-level key)."""
    home = " / ".join(f"[{h}]" for h in homes)
    where = f"[{section}]" if section else _("the top level")
    raise ConfigError(
        _("Workload file {source}: key '{path}' belongs in {home}, not {where}").format(
            source=source, path=path, home=home, where=where
        ),
        why=_("in TOML a key belongs to the last [section] header above it (none: the top level)"),
        fix=_("move '{leaf} = …' under the {home} header").format(leaf=leaf, home=home),
    )


def _merge_preset(data: dict[str, Any], source: str) -> dict[str, Any]:
    from gpuwise.workload.presets import get_preset

    model = data.get("model")
    if not isinstance(model, dict) or "preset" not in model or "diffusion" in data:
        return data  # a diffusion preset was resolved by merge_diffusion
    name = model["preset"]
    if not isinstance(name, str):
        raise ConfigError(
            _("Workload file {source}: key 'model.preset' must be a string, got {type}").format(
                source=source, type=type(name).__name__
            ),
            fix=_(
                'write e.g. preset = "llama-3-8b" (gpuwise lists presets in the error for an unknown name)'
            ),
        )
    try:
        base = get_preset(name)
    except NotFoundError as exc:
        hint = ""
        if exc.matches:
            hint = _(" (did you mean {names}?)").format(names=_(" or ").join(repr(m) for m in exc.matches))
        raise ConfigError(
            _("Workload file {source}: key 'model.preset': unknown preset {name}{hint}").format(
                source=source, name=repr(name), hint=hint
            ),
            fix=_("use one of: {names}").format(names=", ".join(sorted(_preset_names()))),
        ) from exc
    merged = {**base, **model}
    merged["preset"] = base.get("preset", name)
    return {**data, "model": merged}


def _preset_names() -> list[str]:
    from gpuwise.workload.presets import preset_names

    return preset_names()


def _describe_error(err: dict[str, Any]) -> tuple[str, str]:
    loc = ".".join(str(p) for p in err.get("loc", ()) if not str(p).startswith("function-after"))
    typ = err.get("type", "")
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    given = err.get("input")
    got = repr(given)
    ctx = err.get("ctx", {})
    if typ == "missing":
        return loc, _("is required but missing")
    if typ == "literal_error":
        return loc, _("must be one of {expected}, got {got}").format(
            expected=ctx.get("expected", ""), got=got
        )
    if typ in ("int_parsing", "int_type", "int_from_float"):
        return loc, _("must be a whole number, got {got}").format(got=got) + _number_hint(
            given, suffixes=False
        )
    if typ in ("float_parsing", "float_type"):
        return loc, _("must be a number, got {got}").format(got=got) + _number_hint(given)
    if typ in ("bool_parsing", "bool_type"):
        return loc, _("must be true or false, got {got}").format(got=got)
    if typ in ("string_type",):
        return loc, _("must be a string, got {got}").format(got=got)
    if typ in ("list_type",):
        return loc, _('must be a list, e.g. ["a", "b"], got {got}').format(got=got)
    if typ == "greater_than":
        return loc, _("must be greater than {limit}, got {got}").format(limit=ctx.get("gt"), got=got)
    if typ == "greater_than_equal":
        return loc, _("must be at least {limit}, got {got}").format(limit=ctx.get("ge"), got=got)
    if typ != "value_error" and given is not None:
        return loc, msg + _(" (got {got})").format(got=got)
    return loc, msg


def _check_task_section(data: dict[str, Any], source: str) -> None:
    """The other task's section, before its own required keys: an inference job's `[train] tensor_parallel`
    was answered "train.method is required", as if a training section were wanted."""
    task = data.get("task")
    if task == "inference" and isinstance(data.get("train"), dict):
        message = _('task = "inference" takes [inference], not [train]')
        right, wrong = "inference", "train"
    elif task in ("train", "finetune") and isinstance(data.get("inference"), dict):
        message = _('task = "{task}" takes [train], not [inference]').format(task=task)
        right, wrong = "train", "inference"
    else:
        return
    raise ConfigError(
        _("Workload file {source}: {problems}").format(source=source, problems=message),
        fix=_("move the keys of [{wrong}] under [{right}], or change task").format(wrong=wrong, right=right),
    )


_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def _number_hint(given: Any, *, suffixes: bool = True) -> str:
    """What to write for a number given as text ("8k", "1e6", "2,000"): TOML numbers take no quotes or
    suffixes. Whole-number keys get no suffix reading: "2k" tokens of context usually mean 2048."""
    if not isinstance(given, str):
        return ""
    text = given.strip().replace(",", "").replace("_", "")
    try:
        float(text)
        value = text
    except ValueError:
        scale = _SUFFIXES.get(text[-1:].lower()) if suffixes and text else None
        try:
            number = float(text[:-1]) * scale if scale else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            return ""
        value = f"{number:.0f}" if number < 1e7 else f"{number:.3g}".replace("e+0", "e").replace("e+", "e")
    return _(" (write {value} without quotes: TOML numbers take no quotes or unit suffixes)").format(
        value=value
    )


def parse_workload(data: dict[str, Any], source: str) -> Workload:
    """Validate a workload dict (as read from TOML); `source` names the file in messages.

    A `task = "measured"` workload's result file is read here, relative to `source`'s folder."""
    _check_keys(data, source)
    merged = merge_diffusion(merge_hf_config(data, source), source)
    _check_task_section(merged, source)  # after the diffusion check's own word on image generation
    merged = attach_measurement(_merge_preset(merged, source), source)
    if "name" not in merged:
        merged = {"name": Path(source).stem, **merged}
    try:
        return Workload.model_validate(merged)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            loc, what = _describe_error(dict(err))
            if loc in _SECTIONS:  # a rule over the whole section: "[train]: give exactly one of …"
                problems.append(f"[{loc}]: {what}")
                continue
            problems.append((_("key '{key}' ").format(key=loc) if loc else "") + what)
        more = _("; and {n} more").format(n=len(exc.errors()) - 5) if len(exc.errors()) > 5 else ""
        raise ConfigError(
            _("Workload file {source}: {problems}").format(
                source=source, problems="; ".join(problems) + more
            ),
            fix=_("correct the value (`gpuwise schema workload` lists every key, its type and its default)"),
        ) from exc


def load_workload(path: Path) -> Workload:
    """Read and validate a workload TOML file. Raises ConfigError (exit 2) for any problem: a missing,
    binary, oversized or too deeply nested file included (gpuwise.safe_read)."""
    from gpuwise.safe_read import load_toml

    data = load_toml(
        path,
        what=_("Workload file"),
        fix=_("correct the file (TOML: key = value, [section], strings in quotes; see examples/)"),
    )
    return parse_workload(data, str(path))
