"""The `[diffusion]` section of a workload: training or fine-tuning a diffusion model (SD 1.5, SDXL, SD3,
Flux) named by `[model] preset`, at a resolution, with the memory knobs users combine.

`merge_diffusion(data, source)` runs before validation: for a diffusion preset it fills `[model]` (kind,
the denoiser's parameters, forward FLOPs per image at the resolution, the source) and the `[diffusion]`
defaults (the architecture's native resolution and text length), turns `steps` into `[train] samples`, and
rejects what does not belong to a diffusion job with the key to write instead. The estimator
(gpuwise.estimate.diffusion) reads the architecture again from `[model] preset`.

Every knob is a plain field so a remedy can change it: `[train] micro_batch`, `activation_checkpointing`,
`optimizer`, `method`/`base_precision`, and here `resolution`, `fp8_base`, `cache_latents`,
`cache_text_embeddings`.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuwise.errors import ConfigError, close_matches
from gpuwise.locale import _
from gpuwise.workload.diffusion_arch import (
    DiffusionArch,
    denoiser_macs,
    diffusion_alias_names,
    diffusion_arch,
    diffusion_names,
)

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True, validate_default=True)

# [train] keys that describe a language model's job, and what a diffusion workload says instead.
_NOT_FOR_DIFFUSION = {
    "tokens": "images: [train] samples (images per epoch) or [diffusion] steps",
    "seq_len": "[diffusion] resolution (and text_tokens for the caption length)",
    "avg_tokens": "[diffusion] resolution",
    "packing": "nothing: images of one resolution need no packing",
    "group_by_length": "nothing: resolution buckets are not modelled",
    "lora_targets": "nothing: the adapters cover attention and MLP (see docs/workload.md)",
    "attention": "nothing: diffusion trainers use memory-efficient attention (SDPA/xformers)",
    "pipeline_schedule": "nothing: pipeline parallelism is not modelled for diffusion",
    "pipeline_parallel": "nothing: pipeline parallelism is not modelled for diffusion",
    "tensor_parallel": "nothing: tensor parallelism is not modelled for diffusion",
    "fused_kernels": "nothing: fused LLM kernels do not apply",
    "framework": "nothing: diffusion trainers (kohya, diffusers, SimpleTuner, ai-toolkit) share one model",
    "offload": '[diffusion] fp8_base, blocks_to_swap (SD3/Flux), a 4-bit base (method = "qlora") or a '
    "smaller resolution",
    "low_cpu_mem_usage": "nothing: loading is not modelled for diffusion",
}


class DiffusionSpec(BaseModel):
    """`[diffusion]`: resolution and what stays on the GPU besides the trained denoiser."""

    model_config = _STRICT

    # pixels: one side (square) or [width, height]; absent = the architecture's native resolution
    resolution: int | list[int] | None = None
    # VAE latents computed once before training (kohya --cache_latents, diffusers --cache_latents): the VAE
    # leaves the GPU and no image is encoded per step
    cache_latents: bool = False
    # caption embeddings computed once (kohya --cache_text_encoder_outputs, SimpleTuner's default): the text
    # encoders (T5-XXL: 9.5 GB in BF16) leave the GPU
    cache_text_embeddings: bool = False
    # LoRA on the CLIP text encoders as well (kohya's default for SD 1.5/SDXL unless network_train_unet_only)
    train_text_encoder: bool = False
    # the frozen denoiser stored in FP8 and cast to BF16 per layer (kohya --fp8_base, ai-toolkit/SimpleTuner
    # fp8 quantisation): 1 byte per weight, the same matmuls
    fp8_base: bool = False
    # DiT blocks of the frozen base kept in host RAM and copied to the GPU as they run (kohya sd-scripts
    # --blocks_to_swap, in its units: a Flux double block or two single blocks); LoRA only
    blocks_to_swap: int = Field(default=0, ge=0)
    # optimizer steps, instead of [train] samples: images = steps × global_batch (default micro_batch)
    steps: int | None = Field(default=None, ge=1)
    # the caption sequence the denoiser attends to (CLIP 77; T5 length for SD3/Flux); absent = default
    text_tokens: int | None = Field(default=None, ge=1, le=4096)

    @field_validator("resolution")
    @classmethod
    def _sides(cls, value: int | list[int] | None) -> int | list[int] | None:
        sides = [value] if isinstance(value, int) else value or []
        if isinstance(value, list) and len(value) != 2:
            raise ValueError(
                _("resolution is one side or [width, height], got {n} numbers").format(n=len(value))
            )
        for side in sides:
            if not 64 <= side <= 8192:
                raise ValueError(_("resolution sides are 64-8192 pixels, got {side}").format(side=side))
            if side % 8:
                raise ValueError(
                    _(
                        "resolution {side} is not a multiple of 8: the VAE downsamples 8×, so trainers crop "
                        "or bucket to multiples of 8 (write {lower} or {upper})"
                    ).format(side=side, lower=side - side % 8, upper=side - side % 8 + 8)
                )
        return value

    @property
    def width_height(self) -> tuple[int, int]:
        """(width, height) in pixels; the resolution must be filled (merge_diffusion does)."""
        r = self.resolution
        if isinstance(r, list):
            return r[0], r[1]
        assert r is not None
        return r, r


USER_KEYS = list(DiffusionSpec.model_fields)


def merge_diffusion(data: dict[str, Any], source: str) -> dict[str, Any]:
    """For a diffusion preset: `[model]` filled from the architecture at the resolution, `[diffusion]`
    defaults spelt out and `steps` turned into `[train] samples`; other workloads pass through, except a
    `[diffusion]` section without a diffusion preset (ConfigError)."""
    model = data.get("model")
    section = data.get("diffusion")
    name = model.get("preset") if isinstance(model, dict) else None
    arch = diffusion_arch(name) if isinstance(name, str) else None
    if arch is None:
        if section is not None:
            _no_architecture(name, source)
        if isinstance(name, str):
            _misspelt(name, source)
        return data
    if not isinstance(section, dict):
        section = {}
    _check_belongs(data, arch, source)
    spec = _validate(section, source)
    spec = _fill_defaults(spec, arch, source)
    width, height = spec.width_height
    text = spec.text_tokens or arch.text_tokens
    linear, attention = denoiser_macs(arch, width, height, text)
    merged_model = {
        "preset": arch.name,
        "kind": "diffusion",
        "params": arch.denoiser_params,
        "flops_per_sample": 2.0 * (linear + attention),
        "sample_unit": "image",
        "source": arch.source,
    }
    out = {**data, "model": merged_model, "diffusion": spec.model_dump()}
    train = data.get("train")
    if isinstance(train, dict):
        _check_fp8(train, spec, source)
        _check_swap(train, spec, arch, source)
        out["train"] = _amount(train, spec, source)
    return out


def _check_swap(train: dict[str, Any], spec: DiffusionSpec, arch: DiffusionArch, source: str) -> None:
    """blocks_to_swap: a DiT's frozen LoRA base, at most the architecture's limit."""
    n = spec.blocks_to_swap
    if not n:
        return
    if not arch.max_blocks_to_swap:
        raise ConfigError(
            _(
                "Workload file {source}: key 'diffusion.blocks_to_swap': {name} is a UNet; block swapping "
                "is modelled for the DiT models (SD3, Flux) as kohya sd-scripts swaps their blocks"
            ).format(source=source, name=arch.name),
            fix=_(
                'remove blocks_to_swap; fp8_base, method = "qlora" or a smaller resolution lower the memory'
            ),
        )
    if n > arch.max_blocks_to_swap:
        raise ConfigError(
            _(
                "Workload file {source}: key 'diffusion.blocks_to_swap': {n} is more than {name} can swap "
                "({most} of its {blocks} blocks; the rest stay on the GPU)"
            ).format(
                source=source, n=n, name=arch.name, most=arch.max_blocks_to_swap, blocks=arch.swap_units
            ),
            fix=_("write at most {most}").format(most=arch.max_blocks_to_swap),
        )
    if train.get("method") == "full":
        raise ConfigError(
            _(
                "Workload file {source}: blocks_to_swap moves a frozen base's blocks, but method = "
                '"full" trains every weight'
            ).format(source=source),
            fix=_('use method = "lora" with blocks_to_swap, or remove blocks_to_swap'),
        )


def _check_fp8(train: dict[str, Any], spec: DiffusionSpec, source: str) -> None:
    """fp8_base stores a frozen base: not with full training, nor with another base precision; cached
    caption embeddings cannot train the text encoders."""
    if spec.train_text_encoder and spec.cache_text_embeddings:
        raise ConfigError(
            _(
                "Workload file {source}: train_text_encoder needs the text encoders on the GPU, but "
                "cache_text_embeddings = true removes them"
            ).format(source=source),
            fix=_(
                "set one of them to false (kohya caches text encoder outputs only for U-Net-only training)"
            ),
        )
    if not spec.fp8_base:
        return
    if train.get("method") == "full":
        raise ConfigError(
            _(
                'Workload file {source}: fp8_base keeps a frozen base in FP8, but method = "full" '
                "trains every "
                "weight"
            ).format(source=source),
            fix=_('use method = "lora" with fp8_base = true, or remove fp8_base'),
        )
    if train.get("method") == "qlora" or "base_precision" in train:
        raise ConfigError(
            _(
                'Workload file {source}: fp8_base and a 4/8-bit base (method = "qlora" or base_precision) '
                "both set the frozen base's storage"
            ).format(source=source),
            fix=_('choose one: fp8_base = true with method = "lora", or remove fp8_base'),
        )


def _no_architecture(name: object, source: str) -> None:
    names = diffusion_names()
    if isinstance(name, str):
        hint = close_matches(name, diffusion_alias_names())
        close = diffusion_arch(hint[0]) if hint else None
        found = close.name if close is not None else None
        raise ConfigError(
            _(
                "Workload file {source}: [diffusion] needs a diffusion architecture, and preset {name} "
                "is not one"
            ).format(source=source, name=repr(name))
            + (_(" (did you mean {name}?)").format(name=repr(found)) if found else ""),
            why=_("the [diffusion] section describes training SD 1.5, SDXL, SD3 or Flux"),
            fix=_(
                "write [model] preset = one of {names}, or remove the [diffusion] section for a "
                "language model"
            ).format(names=", ".join(repr(n) for n in names)),
        )
    raise ConfigError(
        _("Workload file {source}: [diffusion] needs [model] preset = a diffusion architecture").format(
            source=source
        ),
        why=_(
            'a model given by params and flops_per_sample (kind = "diffusion") has no architecture to size '
            "its text encoders, VAE and activations from"
        ),
        fix=_(
            "write [model] preset = one of {names}, "
            'or remove [diffusion] and keep kind = "diffusion" with params + flops_per_sample'
        ).format(names=", ".join(repr(n) for n in names)),
    )


def _misspelt(name: str, source: str) -> None:
    """A name that is no preset at all but close to a diffusion architecture gets that suggestion."""
    from gpuwise.workload.presets import preset_names

    known = {n.lower() for n in preset_names()}
    if name.strip().lower() in known:
        return
    hint = close_matches(name, diffusion_alias_names())
    found = diffusion_arch(hint[0]) if hint else None
    if found is None or close_matches(name, preset_names()):
        return  # unknown everywhere, or closer to a language model: the preset error says it
    raise ConfigError(
        _("Workload file {source}: key 'model.preset': unknown preset {name} (did you mean {found}?)").format(
            source=source, name=repr(name), found=repr(found.name)
        ),
        fix=_(
            "use one of the diffusion architectures: {names} (`gpuwise presets` lists every preset)"
        ).format(names=", ".join(diffusion_names())),
    )


def _check_belongs(data: dict[str, Any], arch: DiffusionArch, source: str) -> None:
    """Keys that describe another kind of job get their diffusion counterpart named."""
    if data.get("task") == "inference":
        raise ConfigError(
            _(
                "Workload file {source}: preset {name} is a diffusion model; image generation "
                '(task = "inference") is not modelled from its preset'
            ).format(source=source, name=repr(arch.name)),
            why=_("the diffusion presets size training and fine-tuning"),
            fix=_(
                'use task = "finetune" or "train" with [train], or give kind = "diffusion" with params and '
                "flops_per_sample (forward FLOPs × sampling steps per image) instead of the preset"
            ),
        )
    model = data.get("model")
    extra = sorted(k for k in model if k != "preset") if isinstance(model, dict) else []
    if extra:
        raise ConfigError(
            _("Workload file {source}: [model] {keys} do not belong with diffusion preset {name}").format(
                source=source, keys=", ".join(extra), name=repr(arch.name)
            ),
            why=_("the preset fixes the architecture: its denoiser, text encoders and VAE"),
            fix=_("remove {keys} from [model]; set the resolution and caching in [diffusion]").format(
                keys=", ".join(extra)
            ),
        )
    train = data.get("train")
    if isinstance(train, dict):
        for key, instead in _NOT_FOR_DIFFUSION.items():
            if key in train:
                raise ConfigError(
                    _(
                        "Workload file {source}: key 'train.{key}' does not belong to a diffusion "
                        "workload ({name})"
                    ).format(source=source, key=key, name=arch.name),
                    why=_("instead, a diffusion workload uses {instead}").format(instead=instead),
                    fix=_("remove '{key}' from [train]").format(key=key),
                )


def _validate(section: dict[str, Any], source: str) -> DiffusionSpec:
    try:
        return DiffusionSpec.model_validate(section)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        raise ConfigError(
            _("Workload file {source}: key 'diffusion.{loc}': {msg} (got {got})").format(
                source=source, loc=loc, msg=msg, got=repr(err.get("input"))
            ),
            fix=_("correct the value (`gpuwise schema workload` lists every key, its type and its default)"),
        ) from exc


def _fill_defaults(spec: DiffusionSpec, arch: DiffusionArch, source: str) -> DiffusionSpec:
    """The native resolution and default text length spelt out; a DiT's sides checked against its patch."""
    resolution = spec.resolution if spec.resolution is not None else arch.native_resolution
    spec = spec.model_copy(
        update={"resolution": resolution, "text_tokens": spec.text_tokens or arch.text_tokens}
    )
    step = arch.pixel_multiple
    for side in spec.width_height:
        if side % step:
            raise ConfigError(
                _(
                    "Workload file {source}: key 'diffusion.resolution': {side} is not a multiple of "
                    "{step} for {name}"
                ).format(source=source, side=side, step=step, name=arch.name),
                why=_("{name} packs 2×2 latent patches after the VAE's 8× downsampling").format(
                    name=arch.name
                ),
                fix=_("write {lower} or {upper}").format(
                    lower=side - side % step, upper=side - side % step + step
                ),
            )
    return spec


def _amount(train: dict[str, Any], spec: DiffusionSpec, source: str) -> dict[str, Any]:
    """`steps` becomes `samples` (images = steps × global_batch, default micro_batch); one of the two."""
    if spec.steps is None:
        if "samples" not in train:
            raise ConfigError(
                _("Workload file {source}: a diffusion workload needs how many images it trains on").format(
                    source=source
                ),
                fix=_(
                    "give [train] samples (images per epoch, with epochs) or [diffusion] steps "
                    "(optimizer steps of global_batch images)"
                ),
            )
        return train
    if "samples" in train or "epochs" in train:
        raise ConfigError(
            _(
                "Workload file {source}: give [diffusion] steps or [train] samples (with epochs), not both"
            ).format(source=source),
            why=_("each says how many images the job trains on"),
            fix=_("remove one of them"),
        )
    batch = train.get("global_batch", train.get("micro_batch"))
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        return train  # the [train] validation reports micro_batch/global_batch
    return {**train, "samples": float(spec.steps * batch)}


__all__ = ["USER_KEYS", "DiffusionSpec", "merge_diffusion"]
