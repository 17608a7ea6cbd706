"""The bundled diffusion architectures (package data `data/diffusion.toml`) and the arithmetic of one image
through them: multiply-accumulates of the denoiser's forward at a resolution, of the frozen text encoders and
of the VAE encoder, and the LoRA width (what one unit of LoRA rank adds in parameters).

Pure: the UNet count walks the diffusers UNet2DConditionModel layout (resnets, Transformer2DModel blocks,
down/up-sampling convs) from its config; for SD 1.5 at 512 px it gives 338.6 G multiply-accumulates in the
convolutions and linear layers, BK-SDM's published 338.7 G (Kim et al. 2023, Table 1), plus 63 G in the
attention products that module-level counters leave out. A DiT block costs 12·hidden² per token (q, k, v,
out and a 4× MLP; Flux's fused single-stream block has the same 12·hidden²) plus 2·tokens·hidden per token
of attention products (QKᵀ and AV).

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class DiffusionArch:
    """One architecture from data/diffusion.toml (its comment says what each field means)."""

    name: str
    family: str  # "unet" | "dit"
    denoiser_params: float
    native_resolution: int
    latent_channels: int
    text_tokens: int
    text_encoders: tuple[tuple[str, float], ...]
    vae_params: float
    source: str
    aliases: tuple[str, ...] = ()
    # unet
    block_channels: tuple[int, ...] = ()
    transformer_depth: tuple[int, ...] = ()
    mid_transformer_depth: int = 0
    layers_per_block: int = 2
    cross_attention_dim: int = 0
    # dit
    hidden: int = 0
    blocks: int = 0
    stream_blocks: int = 0  # blocks × weight sets a token meets (an MMDiT block has one per stream)
    patch: int = 2
    clip_sequence_tokens: int = (
        0  # CLIP tokens inside the DiT's text sequence (SD3: 77; Flux: 0, pooled only)
    )
    max_blocks_to_swap: int = 0  # kohya's --blocks_to_swap limit; 0: block swapping not modelled

    @property
    def swap_units(self) -> int:
        """What kohya's blocks_to_swap counts: a DiT's blocks of one weight set's size (a Flux double block,
        two single blocks, an SD3 joint block)."""
        return self.stream_blocks // 2

    @property
    def text_encoder_params(self) -> float:
        return sum(p for _, p in self.text_encoders)

    @property
    def pixel_multiple(self) -> int:
        """Sides must be a multiple of this: the VAE's 8× downsampling, times the DiT's latent patch."""
        return 8 * (self.patch if self.family == "dit" else 1)


@cache
def _table() -> dict[str, DiffusionArch]:
    text = resources.files("gpuwise.workload").joinpath("data/diffusion.toml").read_text(encoding="utf-8")
    out: dict[str, DiffusionArch] = {}
    for name, row in tomllib.loads(text).items():
        fields: dict[str, Any] = dict(row)
        fields["text_encoders"] = tuple((str(n), float(p)) for n, p in row["text_encoders"])
        for key in ("aliases", "block_channels", "transformer_depth"):
            if key in fields:
                fields[key] = tuple(fields[key])
        out[name] = DiffusionArch(name=name, **fields)
    return out


@cache
def _aliases() -> dict[str, str]:
    out: dict[str, str] = {}
    for name, arch in _table().items():
        out[name.lower()] = name
        for alias in arch.aliases:
            out[alias.lower()] = name
    return out


def diffusion_arch(name: str) -> DiffusionArch | None:
    """The architecture a preset name (or alias, any case) names; None when it is not a diffusion model."""
    key = _aliases().get(name.strip().lower())
    return _table()[key] if key is not None else None


def diffusion_names() -> list[str]:
    """Canonical names, in file order."""
    return list(_table())


def diffusion_alias_names() -> list[str]:
    """Every accepted spelling (for close-match suggestions)."""
    return list(_aliases())


def diffusion_preset_rows() -> list[dict[str, Any]]:
    """The architectures as `gpuwise presets` lists them (params = the trained denoiser)."""
    return [
        {
            "name": a.name,
            "kind": "diffusion",
            "params": a.denoiser_params,
            "active_params": a.denoiser_params,
            "aliases": list(a.aliases),
            "source": a.source,
        }
        for a in _table().values()
    ]


# --- the arithmetic of one image ------------------------------------------------------------------------
def image_tokens(arch: DiffusionArch, width: int, height: int) -> int:
    """Latent positions the denoiser attends over: (side/8)² for a UNet's top level, (side/16)² for a DiT."""
    return (width // arch.pixel_multiple) * (height // arch.pixel_multiple)


def denoiser_macs(arch: DiffusionArch, width: int, height: int, text_tokens: int) -> tuple[float, float]:
    """(convolution + linear, attention products) multiply-accumulates of one forward of one image."""
    if arch.family == "dit":
        n = image_tokens(arch, width, height) + text_tokens  # joint attention over image and text tokens
        linear = 12.0 * arch.hidden**2 * arch.blocks * n
        attention = 2.0 * n * n * arch.hidden * arch.blocks
        return linear, attention
    return _unet_macs(arch, width // 8, height // 8, text_tokens)


def _resnet(hw: int, c_in: int, c_out: int) -> float:
    """Two 3×3 convolutions and a 1×1 shortcut when the width changes."""
    return float(hw * (9 * c_in * c_out + 9 * c_out * c_out + (c_in * c_out if c_in != c_out else 0)))


def _transformer(hw: int, c: int, depth: int, text: int, ctx: int) -> tuple[float, float]:
    """A Transformer2DModel: proj in/out, then per layer self-attention (q, k, v, out), cross-attention
    (q, out on the image; k, v on the text) and a GEGLU MLP (c → 8c, 4c → c)."""
    if depth == 0:
        return 0.0, 0.0
    linear = 2 * hw * c * c + depth * (4 * hw * c * c + 2 * hw * c * c + 2 * text * ctx * c + 12 * hw * c * c)
    attention = depth * (2 * hw * hw * c + 2 * hw * text * c)
    return float(linear), float(attention)


def _unet_macs(arch: DiffusionArch, lat_w: int, lat_h: int, text: int) -> tuple[float, float]:
    chans, depths, layers, ctx = (
        arch.block_channels,
        arch.transformer_depth,
        arch.layers_per_block,
        arch.cross_attention_dim,
    )
    w, h = lat_w, lat_h
    linear = float(w * h * 9 * arch.latent_channels * chans[0])  # conv_in
    attention = 0.0
    skips = [chans[0]]
    prev = chans[0]
    for i, c in enumerate(chans):  # down path
        for j in range(layers):
            linear += _resnet(w * h, prev if j == 0 else c, c)
            lin, att = _transformer(w * h, c, depths[i], text, ctx)
            linear, attention, prev = linear + lin, attention + att, c
            skips.append(c)
        if i < len(chans) - 1:
            w, h = w // 2, h // 2
            linear += w * h * 9 * c * c
            skips.append(c)
    c = chans[-1]
    lin, att = _transformer(w * h, c, arch.mid_transformer_depth, text, ctx)
    linear += 2 * _resnet(w * h, c, c) + lin
    attention += att
    for i, c in enumerate(reversed(chans)):  # up path: one more resnet per level, each fed a skip
        depth = depths[len(chans) - 1 - i]
        for j in range(layers + 1):
            linear += _resnet(w * h, (prev if j == 0 else c) + skips.pop(), c)
            lin, att = _transformer(w * h, c, depth, text, ctx)
            linear, attention = linear + lin, attention + att
        prev = c
        if i < len(chans) - 1:
            w, h = w * 2, h * 2
            linear += w * h * 9 * c * c
    linear += w * h * 9 * chans[0] * arch.latent_channels  # conv_out
    return linear, attention


def activation_elements(
    arch: DiffusionArch, width: int, height: int, text_tokens: int
) -> tuple[float, float, float]:
    """16-bit values one image keeps for the backward: (without checkpointing, block inputs only, the largest
    block's own set, recomputed under checkpointing).

    A transformer layer keeps 17·width values per token (Korthikanti et al. 2022's 34·s·b·h bytes, attention
    by SDPA/flash so no score matrix); a UNet transformer layer 25·C (its GEGLU MLP is 8C wide) and a resnet
    7·C per position (group norms, SiLUs and the two conv inputs)."""
    if arch.family == "dit":
        n = image_tokens(arch, width, height) + text_tokens
        layer = 17.0 * arch.hidden * n
        return layer * arch.blocks, float(arch.hidden * n * arch.blocks), layer
    saved = inputs = largest = 0.0
    last = len(arch.block_channels) - 1
    for i, c in enumerate(arch.block_channels):
        hw = (width // 8 >> i) * (height // 8 >> i)
        resnets = 2 * arch.layers_per_block + 1 + (2 if i == last else 0)
        layers = (2 * arch.layers_per_block + 1) * arch.transformer_depth[i]
        layers += arch.mid_transformer_depth if i == last else 0
        saved += hw * c * (7.0 * resnets + 25.0 * layers)
        inputs += hw * c * float(resnets + layers)
        largest = max(largest, hw * c * (25.0 if layers else 7.0))
    return saved, inputs, largest


def layer_count(arch: DiffusionArch) -> int:
    """Blocks a micro batch runs through (DiT blocks; a UNet's resnets and transformer layers): what the
    per-layer launch overhead is counted over."""
    if arch.family == "dit":
        return arch.blocks
    levels = len(arch.block_channels)
    resnets = levels * (2 * arch.layers_per_block + 1) + 2
    layers = (2 * arch.layers_per_block + 1) * sum(arch.transformer_depth) + arch.mid_transformer_depth
    return resnets + layers


def lora_width(arch: DiffusionArch) -> float:
    """Σ (d_in + d_out) over the linear layers LoRA adapts, so parameters = rank × this.

    DiT: q, k, v, out and the MLP of every weight set (16·hidden each: SimpleTuner's "all+ffs", ai-toolkit's
    default); UNet: the Transformer2DModel linears (kohya's default LoRA targets: attention, cross-attention
    k/v from the text width, GEGLU MLP, proj in/out)."""
    if arch.family == "dit":
        return 16.0 * arch.hidden * arch.stream_blocks
    total = 0.0
    chans, depths = arch.block_channels, arch.transformer_depth
    per_layer = [28 * c + 2 * arch.cross_attention_dim for c in chans]
    for i, c in enumerate(chans):
        if depths[i]:
            n_blocks = arch.layers_per_block + (arch.layers_per_block + 1)  # down + up
            total += n_blocks * (depths[i] * per_layer[i] + 4 * c)
    if arch.mid_transformer_depth:
        total += arch.mid_transformer_depth * per_layer[-1] + 4 * chans[-1]
    return total


def vae_encoder_macs(width: int, height: int) -> float:
    """The SD/SDXL/SD3/Flux VAE encoder (128-256-512-512 channels, two resnets per level): about 0.56 T
    multiply-accumulates at 512×512 counted from its diffusers config, scaling with the pixel count."""
    return 0.56e12 * (width * height) / (512 * 512)


# (layers, width) of the CLIP text towers, from their published configs (Radford et al. 2021, CLIP ViT-L/14's
# text transformer; OpenCLIP ViT-bigG/14's text tower): what LoRA on the text encoders adapts and keeps.
_CLIP_SHAPES = {"CLIP ViT-L/14": (12, 768), "OpenCLIP ViT-bigG/14": (32, 1280)}


def clip_lora_width(arch: DiffusionArch) -> float:
    """Σ (d_in + d_out) of q, k, v, out and the 4× MLP of every CLIP text layer (18·width per layer): the
    text-encoder LoRA kohya trains with the UNet unless network_train_unet_only."""
    return float(sum(18 * w * layers for _, (layers, w) in _clip_shapes(arch)))


def clip_activation_elements(arch: DiffusionArch) -> float:
    """16-bit values the CLIP text layers keep for a backward over a 77-token caption (17·width per token)."""
    return float(sum(17 * w * 77 * layers for _, (layers, w) in _clip_shapes(arch)))


def clip_macs(arch: DiffusionArch) -> float:
    """Forward multiply-accumulates of the CLIP text encoders for one 77-token caption."""
    return sum(p * 77 for n, p in arch.text_encoders if n in _CLIP_SHAPES)


def _clip_shapes(arch: DiffusionArch) -> list[tuple[str, tuple[int, int]]]:
    return [(n, _CLIP_SHAPES[n]) for n, _ in arch.text_encoders if n in _CLIP_SHAPES]


def text_encoder_macs(arch: DiffusionArch, text_tokens: int) -> float:
    """Forward multiply-accumulates of the frozen text encoders for one caption: CLIPs read 77 tokens, T5
    reads the rest of the denoiser's text sequence."""
    total = 0.0
    for name, params in arch.text_encoders:
        clip = name.startswith(("CLIP", "OpenCLIP"))
        tokens = 77 if clip else max(1, text_tokens - arch.clip_sequence_tokens)
        total += params * tokens
    return total


__all__ = [
    "DiffusionArch",
    "activation_elements",
    "clip_activation_elements",
    "clip_lora_width",
    "clip_macs",
    "denoiser_macs",
    "diffusion_alias_names",
    "diffusion_arch",
    "diffusion_names",
    "diffusion_preset_rows",
    "image_tokens",
    "layer_count",
    "lora_width",
    "text_encoder_macs",
    "vae_encoder_macs",
]
