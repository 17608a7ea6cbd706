"""The words of a remedy: one short phrase per changed key, joined, with the GPU count last.

Pure text over the updates of estimate/remedies.py; a key this table does not know is written as
`section.key = value`, so a new workload key still reads.
"""

from __future__ import annotations

from gpuwise.locale import N_, _
from gpuwise.workload.spec import Workload


def _method() -> dict[str, str]:  # built per call: the language is chosen after import
    return {
        "lora": _("LoRA instead of full fine-tuning (16-bit frozen base)"),
        "qlora": _("QLoRA instead of full fine-tuning (4-bit NF4 frozen base)"),
    }


def _sharding() -> dict[str, str]:
    return {
        "fsdp": _("FSDP (ZeRO-3) sharding"),
        "zero3": _("ZeRO-3 sharding"),
        "zero2": _("ZeRO-2 sharding"),
        "zero1": _("ZeRO-1 sharding"),
    }


def _offload() -> dict[str, str]:
    return {
        "optimizer": _("CPU offload of the optimizer (ZeRO-Offload; the step runs on the CPU)"),
        "optimizer+params": _("CPU offload of parameters and optimizer"),
    }


def describe(updates: dict[str, str | int | bool], w: Workload, count: int, *, largest: str = "") -> str:
    """`updates` in words, e.g. "micro_batch 2 (largest that fits)" or "FSDP (ZeRO-3) sharding on 4 GPUs";
    `largest` names the key whose value is the largest that fits with the rest."""
    parts = []
    for key, value in updates.items():
        if key == "count":
            continue
        head, note = _phrase(key, value, w)
        notes = [n for n in (_("largest that fits") if key == largest else "", note) if n]
        parts.append(head + (_(" ({notes})").format(notes=_("; ").join(notes)) if notes else ""))
    text = " + ".join(parts)
    n = updates.get("count")
    if isinstance(n, int) and not isinstance(n, bool) and n != count:
        gpus = _("{count} GPUs").format(count=n)
        limit = w.constraints.max_gpus
        if limit is not None and n > limit:
            gpus += _(" (above the workload's max_gpus = {limit})").format(limit=limit)
        text = _("{change} on {gpus}").format(change=text, gpus=gpus) if text else gpus
    return text or _("no change")


def _phrase(key: str, value: str | int | bool, w: Workload) -> tuple[str, str]:
    """(what the change is, a note on what it costs or keeps: "" for none)."""
    t = w.train
    if key == "train.micro_batch":
        keeps = _("gradient accumulation keeps global_batch") if t is not None and t.global_batch else ""
        return f"micro_batch {value}", keeps
    if key == "train.seq_len":
        return f"seq_len {value}", _("longer samples are truncated")
    if key == "train.activation_checkpointing":
        return _('activation checkpointing "{value}"').format(value=value), _(
            "recomputes in the backward: slower"
        )
    if key == "train.fused_kernels":
        return _("fused kernels"), _("Liger/Unsloth chunked cross-entropy")
    if key == "train.optimizer":
        return "8-bit AdamW", "bitsandbytes"
    if key == "train.base_precision":
        return _("{value} frozen base").format(value=value), "QLoRA" if value == "nf4" else ""
    if key == "train.method":
        return _method().get(str(value), _("method {value}").format(value=value)), ""
    if key == "train.sharding":
        return _sharding().get(str(value), f"sharding {value}"), ""
    if key == "train.offload":
        return _offload().get(str(value), f"offload {value}"), ""
    if key in ("train.tensor_parallel", "inference.tensor_parallel"):
        return _("tensor parallelism {value}").format(value=value), ""
    if key.startswith("diffusion."):
        return _diffusion_phrase(key, value)
    if key == "inference.concurrency":
        return _("concurrency {value}").format(value=value), ""
    if key == "inference.weights_precision":
        return _("{value} weights").format(value=value), ""
    if key == "inference.kv_precision":
        return _("{value} KV cache").format(value=value), ""
    return f"{key} = {value}", ""


_DIFFUSION = {
    "diffusion.cache_text_embeddings": (
        N_("caption embeddings cached before training"),
        N_("the text encoders leave the GPU"),
    ),
    "diffusion.cache_latents": (N_("latents cached before training"), N_("the VAE leaves the GPU")),
    "diffusion.fp8_base": (N_("FP8 frozen base"), N_("fp8_base: cast to BF16 per layer")),
}


def _diffusion_phrase(key: str, value: str | int | bool) -> tuple[str, str]:
    if key == "diffusion.resolution":
        return _("resolution {value} px").format(value=value), _("trains on smaller images")
    if key == "diffusion.blocks_to_swap":
        return (
            _("{value} blocks swapped to host RAM").format(value=value),
            _("kohya blocks_to_swap: PCIe copies every step"),
        )
    if value is False:
        return _("no {key}").format(key=key.removeprefix("diffusion.")), ""
    if key not in _DIFFUSION:
        return f"{key} = {value}", ""
    change, how = _DIFFUSION[key]
    return _(change), _(how)
