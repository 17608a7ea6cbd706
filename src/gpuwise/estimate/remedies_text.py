"""The words of a remedy: one short phrase per changed key, joined, with the GPU count last.

Pure text over the updates of estimate/remedies.py; a key this table does not know is written as
`section.key = value`, so a new workload key still reads.
"""

from __future__ import annotations

from gpuwise.workload.spec import Workload

_METHOD = {
    "lora": "LoRA instead of full fine-tuning (16-bit frozen base)",
    "qlora": "QLoRA instead of full fine-tuning (4-bit NF4 frozen base)",
}
_SHARDING = {
    "fsdp": "FSDP (ZeRO-3) sharding",
    "zero3": "ZeRO-3 sharding",
    "zero2": "ZeRO-2 sharding",
    "zero1": "ZeRO-1 sharding",
}
_OFFLOAD = {
    "optimizer": "CPU offload of the optimizer (ZeRO-Offload; the step runs on the CPU)",
    "optimizer+params": "CPU offload of parameters and optimizer",
}


def describe(updates: dict[str, str | int | bool], w: Workload, count: int, *, largest: str = "") -> str:
    """`updates` in words, e.g. "micro_batch 2 (largest that fits)" or "FSDP (ZeRO-3) sharding on 4 GPUs";
    `largest` names the key whose value is the largest that fits with the rest."""
    parts = []
    for key, value in updates.items():
        if key == "count":
            continue
        head, note = _phrase(key, value, w)
        notes = [n for n in ("largest that fits" if key == largest else "", note) if n]
        parts.append(head + (f" ({'; '.join(notes)})" if notes else ""))
    text = " + ".join(parts)
    n = updates.get("count")
    if isinstance(n, int) and not isinstance(n, bool) and n != count:
        gpus = f"{n} GPUs"
        limit = w.constraints.max_gpus
        if limit is not None and n > limit:
            gpus += f" (above the workload's max_gpus = {limit})"
        text = f"{text} on {gpus}" if text else gpus
    return text or "no change"


def _phrase(key: str, value: str | int | bool, w: Workload) -> tuple[str, str]:
    """(what the change is, a note on what it costs or keeps: "" for none)."""
    t = w.train
    if key == "train.micro_batch":
        keeps = "gradient accumulation keeps global_batch" if t is not None and t.global_batch else ""
        return f"micro_batch {value}", keeps
    if key == "train.seq_len":
        return f"seq_len {value}", "longer samples are truncated"
    if key == "train.activation_checkpointing":
        return f'activation checkpointing "{value}"', "recomputes in the backward: slower"
    if key == "train.fused_kernels":
        return "fused kernels", "Liger/Unsloth chunked cross-entropy"
    if key == "train.optimizer":
        return "8-bit AdamW", "bitsandbytes"
    if key == "train.base_precision":
        return f"{value} frozen base", "QLoRA" if value == "nf4" else ""
    if key == "train.method":
        return _METHOD.get(str(value), f"method {value}"), ""
    if key == "train.sharding":
        return _SHARDING.get(str(value), f"sharding {value}"), ""
    if key == "train.offload":
        return _OFFLOAD.get(str(value), f"offload {value}"), ""
    if key in ("train.tensor_parallel", "inference.tensor_parallel"):
        return f"tensor parallelism {value}", ""
    if key.startswith("diffusion."):
        return _diffusion_phrase(key, value)
    if key == "inference.concurrency":
        return f"concurrency {value}", ""
    if key == "inference.weights_precision":
        return f"{value} weights", ""
    if key == "inference.kv_precision":
        return f"{value} KV cache", ""
    return f"{key} = {value}", ""


_DIFFUSION = {
    "diffusion.cache_text_embeddings": (
        "caption embeddings cached before training",
        "the text encoders leave the GPU",
    ),
    "diffusion.cache_latents": ("latents cached before training", "the VAE leaves the GPU"),
    "diffusion.fp8_base": ("FP8 frozen base", "fp8_base: cast to BF16 per layer"),
}


def _diffusion_phrase(key: str, value: str | int | bool) -> tuple[str, str]:
    if key == "diffusion.resolution":
        return f"resolution {value} px", "trains on smaller images"
    if key == "diffusion.blocks_to_swap":
        return f"{value} blocks swapped to host RAM", "kohya blocks_to_swap: PCIe copies every step"
    if value is False:
        return f"no {key.removeprefix('diffusion.')}", ""
    return _DIFFUSION.get(key, (f"{key} = {value}", ""))
