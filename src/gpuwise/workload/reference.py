"""The workload file's reference, generated from the pydantic models so it cannot drift from them.

`render_markdown()` writes docs/workload.md (a test compares the shipped file with it); `json_schema()` is
what `gpuwise schema workload` prints for editors (VS Code's "Even Better TOML" and taplo read JSON Schema).
Types, defaults and bounds come from the models; each key's meaning comes from DESCRIPTIONS below, and a test
fails when a key has no description or a description names no key.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from gpuwise.workload.spec import Workload

# section.key -> what it means (one sentence or two, units named). "" is the top level.
DESCRIPTIONS: dict[str, str] = {
    "name": "Free text, shown in reports.",
    "task": "What the workload does: training from scratch, fine-tuning, serving, or `measured` work (a "
    "task timed by `gpuwise bench task`: rendering, simulation, a custom model).",
    "model": 'The model: a bundled preset, or its architecture (not for `task = "measured"`).',
    "train": 'Training settings (for `task = "train"` or `"finetune"`).',
    "inference": 'Serving settings (for `task = "inference"`).',
    "data": "Data moved and stored: dataset, checkpoints, egress.",
    "constraints": "What `gpuwise plan` may choose from (an absent constraint does not constrain).",
    "measured": 'Measured work (for `task = "measured"`): a `gpuwise bench task` result and how much of '
    "that work the whole job is. Projected to other GPUs by datasheet ratios: compute-bound by dense "
    "FLOPs, memory-bound by memory bandwidth, unknown by the more conservative of the two.",
    "measured.result": "The `gpuwise bench task` result JSON, relative to the workload file. It must have "
    "been measured on a GPU.",
    "measured.units": "The whole job, in the unit of the measurement (frames, samples, steps, …).",
    "measured.unit": "The unit's name; checked against the result's unit when both are given.",
    "measured.gpus": "GPUs the measured task used; default: every GPU of the measured machine.",
    "measured.precision": "The precision family the task computes in, for the compute-bound ratio; "
    "absent: the more conservative of the fp32 and bf16 ratios.",
    "measured.measurement": "What gpuwise read from `result` (filled in when the file is loaded; not "
    "written by hand).",
    "model.preset": "A bundled preset (`llama-3-8b`, `mixtral-8x7b`, `qwen2.5-72b`, …); keys given beside it "
    "override the preset's.",
    "model.hf_config": "A Hugging Face `config.json` (a local file, or the folder holding one, relative to "
    "the workload file; never downloaded): its architecture fills the keys below and its parameters are "
    "counted from it; keys given beside it override what it read. Llama, Mistral, Qwen2/3, Gemma, Phi, "
    "GPT-2, GPT-NeoX, Falcon, StarCoder2, Mixtral, DeepSeek-V2/V3, T5 and Whisper configs.",
    "model.kind": "`transformer`, or `cnn` / `diffusion` / `generic` for models described by "
    "`params` and `flops_per_sample`.",
    "model.params": "Total parameters.",
    "model.layers": "Transformer layers (blocks); for `cnn` / `diffusion` / `generic` models, the blocks "
    "FSDP/ZeRO-3 and parameter offload gather one at a time (absent: the whole model at once).",
    "model.hidden": "Hidden size (model width).",
    "model.heads": "Attention heads.",
    "model.kv_heads": "Key/value heads (grouped-query or multi-query attention); default: `heads`.",
    "model.head_dim": "Width of one attention head, where it is not `hidden / heads` (Gemma 2).",
    "model.vocab": "Vocabulary size.",
    "model.ffn_hidden": "MLP inner width; default 4 × `hidden`.",
    "model.gated_mlp": "SwiGLU/GeGLU MLP with three matrices (Llama, Mistral, Qwen, Gemma); false for "
    "GPT-2-style.",
    "model.tied_embeddings": "The input embedding is shared with the output head.",
    "model.experts": "Mixture of experts: experts per MoE layer (1 = dense).",
    "model.experts_per_token": "Experts active per token.",
    "model.active_params": "Parameters a token passes through; default: derived from the two keys above.",
    "model.flops_per_sample": "Forward FLOPs per sample (one multiply-add = 2 FLOPs); required when "
    "`kind` is not `transformer`.",
    "model.sample_unit": "What one sample is, for reports (`image`, `clip`, …).",
    "model.source": "Where a preset's numbers come from (filled in by presets and `hf_config`).",
    "model.encoder_layers": "Encoder-decoder models (T5, Whisper): how many of `layers` are the encoder; "
    "inference and training are then estimated per stack (the encoder over its input, the decoder per "
    "target token).",
    "model.encoder_tokens": "Encoder positions per input (Whisper: 1500 per 30-s window; T5 training: the "
    "input length, else `seq_len`; `seq_len` and `tokens` then count the decoder's target tokens).",
    "model.audio_window_s": "Seconds of audio one encoder input holds (Whisper: 30); makes the model a "
    "speech model, whose `[inference]` takes `audio_hours`.",
    "model.mel_bins": "Input channels of a speech model's convolutional front end (Whisper: 80, "
    "large-v3: 128).",
    "model.decoder_max_tokens": "The decoder's positions (Whisper: 448): prompt + output tokens per window.",
    "train.method": "`full` fine-tuning or training, `lora`, or `qlora` (LoRA on a 4-bit base).",
    "train.precision": "Compute dtype of mixed-precision training (fp32 master weights).",
    "train.pure_low_precision": "Keep weights, gradients and optimizer states in the compute dtype too.",
    "train.optimizer": "Optimizer; sets the bytes of state per trainable parameter.",
    "train.tokens": "Total tokens to process (transformers). Give this or `samples`.",
    "train.samples": "Samples per epoch. Give this or `tokens`.",
    "train.epochs": "Passes over `samples`.",
    "train.seq_len": "Sequence length in tokens (required for transformers).",
    "train.micro_batch": "Sequences or samples per GPU per forward/backward pass.",
    "train.global_batch": "Sequences or samples per optimizer step (sets gradient accumulation and data "
    "parallelism).",
    "train.activation_checkpointing": "Recompute activations in the backward pass: none, selective "
    "(attention only in a transformer; every other block in a CNN or other model) or full.",
    "train.sharding": "Data-parallel sharding: ZeRO stage 1/2/3, or FSDP (= ZeRO-3).",
    "train.tensor_parallel": "Tensor-parallel degree (GPUs per layer).",
    "train.pipeline_parallel": "Pipeline-parallel degree (stages).",
    "train.lora_rank": "LoRA rank r.",
    "train.attention": "`flash` (memory-efficient kernels) or `eager` (keeps the s² attention matrix).",
    "train.lora_targets": "Layers carrying adapters: `all` linear layers, or `attention` (q, k, v, o) only.",
    "train.framework": "The training stack (Hugging Face Trainer, axolotl, LLaMA-Factory, Unsloth, "
    "Accelerate FSDP, DeepSpeed, Lightning, torchtitan, Megatron/NeMo, nanoGPT-style PyTorch, or `tuned`): "
    "it sets the efficiencies and what is stored. Absent: the common stack for the task and method, stated "
    "in the assumptions.",
    "train.avg_tokens": "Mean tokens per sample (with `samples`); default: every sample fills `seq_len`.",
    "train.packing": "Samples packed into full `seq_len` sequences; unpacked batches pad to their longest "
    "sample.",
    "train.group_by_length": "Batches built from samples of similar length (less padding when not packed).",
    "train.base_precision": "LoRA: dtype of the frozen base (`int8` is LLM.int8, `nf4` is QLoRA's 4-bit); "
    "default: the compute dtype, or `nf4` for `qlora`.",
    "train.low_cpu_mem_usage": "The model is built on the meta device or loaded on one rank, so no GPU holds "
    "the full model before FSDP/ZeRO-3 shards it; default: what the stack does.",
    "train.offload": "CPU offload: `optimizer` (ZeRO-Offload) or `optimizer+params` (ZeRO-3 / FSDP offload); "
    "memory moves to host RAM, each step pays PCIe copies and a CPU optimizer step.",
    "train.fused_kernels": "Fused loss and MLP kernels (Liger, Unsloth): the logits are not kept in fp32 and "
    "SwiGLU is recomputed; default: off.",
    "train.pipeline_schedule": "With `pipeline_parallel` > 1: Megatron's `interleaved` schedule or plain "
    "`1f1b`.",
    "inference.weights_precision": "Dtype of the served weights.",
    "inference.kv_precision": "Dtype of the KV cache; default: `weights_precision`.",
    "inference.prompt_tokens": "Prompt tokens per request.",
    "inference.output_tokens": "Generated tokens per request.",
    "inference.concurrency": "Sequences decoded together per replica.",
    "inference.requests": "Total requests to serve. Give this, or a rate with a duration.",
    "inference.target_output_tokens_per_s": "Output tokens per second to sustain (with `duration_hours`).",
    "inference.duration_hours": "How long to serve `target_output_tokens_per_s`.",
    "inference.tensor_parallel": "Tensor-parallel degree per replica.",
    "inference.audio_hours": "Speech models: hours of audio to transcribe (instead of `requests`, which are "
    "then clips of one window each); `prompt_tokens` are the decoder's forced start tokens and "
    "`output_tokens` the decoder tokens per window; `concurrency` is the windows per batch.",
    "inference.window_s": "Speech models: seconds of audio per window, at most the model's `audio_window_s` "
    "(default: it); a shorter window is padded, so it costs the same compute.",
    "inference.overlap_s": "Speech models: seconds each window shares with the next (Hugging Face's "
    "pipeline: 2 × `stride_length_s`, 10 s at its defaults); each window brings `window_s − overlap_s` "
    "of new audio.",
    "inference.engine": "Encoder-decoder models: how decode steps are launched. `eager` (default: PyTorch "
    "eager, as Hugging Face transformers and openai-whisper run; ~50 operators per decoder layer at ~10 µs "
    "of CPU each) or `compiled` (CUDA graphs, TensorRT, FasterTransformer/NeMo, CTranslate2: a fixed 2 ms "
    "per step).",
    "inference.beams": "Encoder-decoder models: beam search width (openai-whisper's and faster-whisper's "
    "transcribe use 5, Hugging Face's pipeline 1); each beam is a decoded sequence with its own KV caches.",
    "inference.batching": "How the server batches requests, for the latency figures: `continuous` (vLLM, "
    "TGI, TensorRT-LLM: a request joins the running batch at the next step) or `static` (a batch of "
    "`concurrency` requests prefilled and decoded together).",
    "data.dataset_gb": "Dataset size in GB (10⁹ bytes), stored for the run and read each epoch.",
    "data.checkpoint_every_hours": "Checkpoint interval; sets the work a spot preemption loses.",
    "data.egress_gb": "GB downloaded out of the cloud at the end (results, weights).",
    "constraints.deadline_hours": "Longest acceptable run, in hours.",
    "constraints.budget_usd": "Most the whole job may cost, in USD.",
    "constraints.interruptible": "Spot / preemptible offers allowed.",
    "constraints.providers": "Allowed providers (catalog names: `aws`, `gcp`, `lambda`, …).",
    "constraints.regions": "Allowed regions, as shell-style patterns (`us-*`).",
    "constraints.gpus": "Allowed GPU names (an `H100-PCIe` offer is not an `H100`).",
    "constraints.max_gpus": "Most GPUs in one option.",
    "constraints.max_nodes": "Most machines in one option.",
    "constraints.max_latency_s": "Serving: the longest end-to-end time of one request (sent to last "
    "token) at the workload's concurrency, in seconds; `plan` rejects slower configurations.",
    "constraints.max_ttft_s": "Serving: the longest time to first token at the workload's concurrency, "
    "in seconds; `plan` rejects slower configurations.",
    "constraints.commitment_months": (
        "Months the machine would be reserved; `plan` then adds reserved prices, costed as the whole "
        "commitment, with their break-even."
    ),
    "diffusion": "Training or fine-tuning a diffusion model named by `[model] preset` (`sd15`, `sdxl`, "
    "`sd3-medium`, `sd3.5-large`, `flux-dev`, `flux-schnell`; `gpuwise presets` lists them): the preset "
    "fills `[model]`, `[train] method` may be `lora` or `qlora`, and `[train] samples` counts images. Keys "
    "for language models (`seq_len`, `tokens`, `framework`, parallelism, offload) do not belong here.",
    "diffusion.resolution": "Training resolution in pixels: one side, or `[width, height]`; a multiple of 8 "
    "(16 for SD3 and Flux, which pack 2×2 latent patches). Default: the architecture's native size.",
    "diffusion.cache_latents": "VAE latents computed once before training: the VAE leaves the GPU and no "
    "image is encoded per step.",
    "diffusion.cache_text_embeddings": "Caption embeddings computed once: the text encoders (T5-XXL is "
    "9.5 GB in BF16) leave the GPU.",
    "diffusion.train_text_encoder": "LoRA on the CLIP text encoders as well (kohya's default for SD 1.5 "
    "and SDXL unless `network_train_unet_only`): they stay on the GPU and run a backward every step.",
    "diffusion.fp8_base": "The frozen denoiser stored in FP8 and cast to BF16 per layer (kohya "
    "`--fp8_base`): 1 byte per weight, same speed. For LoRA only.",
    "diffusion.blocks_to_swap": "SD3 and Flux LoRA: blocks of the frozen base kept in host RAM and copied "
    "to the GPU as they run (kohya sd-scripts `--blocks_to_swap`, in its units: a Flux double block or two "
    "single blocks; at most 35 for Flux). Less GPU memory, and the copies over PCIe added to every micro "
    "batch.",
    "diffusion.steps": "Optimizer steps, instead of `[train] samples`: images = steps × `global_batch` "
    "(default `micro_batch`). More GPUs split the same images.",
    "diffusion.text_tokens": "The caption sequence the denoiser attends to (T5 length for SD3 and Flux). "
    "Default: the trainer's default for the architecture.",
}


def _fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    return dict(model.model_fields)


def _submodel(annotation: Any) -> type[BaseModel] | None:
    candidates = [annotation, *get_args(annotation)]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def field_paths() -> list[str]:
    """Every key a workload file may hold, as `section.key` (top-level keys bare)."""
    paths: list[str] = []
    for name, info in _fields(Workload).items():
        paths.append(name)
        sub = _submodel(info.annotation)
        if sub is not None:
            paths.extend(f"{name}.{key}" for key in _fields(sub))
    return paths


def _type_text(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        parts = [a for a in get_args(annotation) if a is not type(None)]
        return " \\| ".join(_type_text(a) for a in parts)
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        return f"list of {_type_text(item)}"
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation))


def _default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    default = info.get_default(call_default_factory=True)
    if default is None or default is PydanticUndefined:
        return "—"
    if isinstance(default, BaseModel):
        return "—"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, str):
        return f'`"{default}"`'
    return f"`{default}`"


def _bounds_text(info: FieldInfo) -> str:
    words = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    out = []
    for meta in info.metadata:
        for attr, sign in words.items():
            value = getattr(meta, attr, None)
            if value is not None:
                out.append(f"{sign} {value}")
    return ", ".join(out)


def render_markdown() -> str:
    """docs/workload.md: one table per section, every key with its type, default, bounds and meaning."""
    lines = [
        "# The workload file",
        "",
        "<!-- Generated by `python -m gpuwise.workload.reference` from the models in",
        "     src/gpuwise/workload/spec.py and reference.py. Do not edit by hand: a test compares them. -->",
        "",
        "A workload file is TOML. It describes the work, not the hardware: `gpuwise estimate` and",
        '`gpuwise plan` read it. Unknown keys are an error with a "did you mean"; numbers are TOML numbers',
        "(`2e12`, `2_000_000`) and are not coerced from strings. `gpuwise schema workload` prints the same",
        "rules as JSON Schema for editors. Start from a file in `examples/`.",
        "",
        "| key | type | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    sections: list[tuple[str, type[BaseModel]]] = []
    for name, info in _fields(Workload).items():
        sub = _submodel(info.annotation)
        if sub is not None:
            sections.append((name, sub))
            continue
        lines.append(
            f"| `{name}` | {_type_text(info.annotation)} | {_default_text(info)} | {DESCRIPTIONS[name]} |"
        )
    for section, model in sections:
        lines += ["", f"## `[{section}]`", "", DESCRIPTIONS[section], ""]
        lines += ["| key | type | default | bounds | meaning |", "| --- | --- | --- | --- | --- |"]
        for key, info in _fields(model).items():
            path = f"{section}.{key}"
            lines.append(
                f"| `{key}` | {_type_text(info.annotation)} | {_default_text(info)} | {_bounds_text(info)} "
                f"| {DESCRIPTIONS[path]} |"
            )
    lines.append("")
    return "\n".join(lines)


def json_schema() -> dict[str, Any]:
    """JSON Schema of a workload file, with each key's description."""
    schema = Workload.model_json_schema(mode="validation")
    schema["title"] = "gpuwise workload file"
    defs = schema.get("$defs", {})
    for name, info in _fields(Workload).items():
        props = schema.get("properties", {})
        if name in props:
            props[name].setdefault("description", DESCRIPTIONS[name])
        sub = _submodel(info.annotation)
        if sub is not None and sub.__name__ in defs:
            for key, prop in defs[sub.__name__].get("properties", {}).items():
                prop["description"] = DESCRIPTIONS.get(f"{name}.{key}", "")
    return schema


if __name__ == "__main__":  # regenerate docs/workload.md
    import sys
    from pathlib import Path

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/workload.md")
    target.write_text(render_markdown(), encoding="utf-8")
