"""Bytes the memory model counts, each with its source: stored parameters, optimizer states, activations,
losses, runtime buffers and the fit-verdict margins.

An estimate lists `Constant.describe()` of every constant it used in its `assumptions`.
Pure data: must not import anything but the standard library and `constants.Constant`.
"""

from __future__ import annotations

from gpuwise.estimate.constants import Constant
from gpuwise.locale import N_

# --- bytes per stored parameter -------------------------------------------------------------
# NF4 with double quantization: 4 bits + 0.127 bits of scales per parameter (Dettmers et al. 2023, QLoRA §3).
NF4_BYTES_PER_PARAM = Constant(
    "nf4_bytes_per_param",
    (4 + 0.127) / 8,
    "B",
    N_("QLoRA paper §3: 4-bit NF4 plus 0.127 bit/param double-quantized scales"),
)
# int4 weight-only inference (AWQ/GPTQ, group size 128, fp16 scale + zero): 0.5 B + 4 B/128.
INT4_BYTES_PER_PARAM = Constant(
    "int4_bytes_per_param", 0.5 + 4 / 128, "B", N_("AWQ/GPTQ group size 128 with fp16 scale and zero point")
)

# --- optimizer state bytes per trainable parameter (excluding fp32 master weights) ------------
# ZeRO paper (Rajbhandari et al. 2020 §3.1): Adam keeps fp32 momentum and variance (8 B) plus, for mixed
# precision, an fp32 master copy (4 B): K = 12 bytes per parameter.
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw8bit": 2.0, "sgd": 4.0, "adafactor": 0.5}
_OPTIMIZER_TEXT = N_(
    "ZeRO paper §3.1 (Adam: fp32 m and v = 8 B, + 4 B fp32 master for mixed precision); adamw8bit 2 B "
    "(Dettmers et al. 2022, 8-bit optimizers); SGD momentum 4 B; Adafactor factored ≈ 0.5 B"
)
_OPTIMIZER_UNITS = {
    "adamw": N_("B/param (adamw)"),
    "adamw8bit": N_("B/param (adamw8bit)"),
    "sgd": N_("B/param (sgd)"),
    "adafactor": N_("B/param (adafactor)"),
}
# One per optimizer, so the assumption states the figure the estimate used (an SGD run is told 4 B, not 8)
OPTIMIZER_SOURCES = {
    kind: Constant("optimizer_state_bytes", value, _OPTIMIZER_UNITS[kind], _OPTIMIZER_TEXT)
    for kind, value in OPTIMIZER_STATE_BYTES.items()
}
MASTER_WEIGHT_BYTES = 4.0

# --- activations (Korthikanti et al. 2022, "Reducing Activation Recomputation", §4) ----------
ACTIVATIONS_SOURCE = Constant(
    "activation_bytes_per_token_per_layer",
    34,
    N_("×hidden B (GPT, 16-bit)"),
    N_(
        "Korthikanti et al. 2022 eq. 1-6: sbh(34 + 5as/h) per layer; gated-MLP/GQA terms re-derived "
        "the same way; flash attention and selective recompute drop the 5as/h term; "
        "full recompute keeps 2sbh per layer"
    ),
)
# Cross-entropy on the output logits: bf16 logits + their fp32 copy kept for the loss backward (HF Trainer).
LOGITS_BYTES_PER_ELEMENT = Constant(
    "logits_bytes_per_element",
    6,
    "B",
    N_("Hugging Face causal-LM loss: bf16 logits upcast to fp32 (2 + 4 B per vocab entry per token)"),
)
# The Hugging Face transformers causal-LM loss (LlamaForCausalLM and its kin, 4.3x-4.4x; ForCausalLMLoss
# since 4.46): the full logits are upcast to fp32 (4 B, kept alive by the model output), shifted into a
# contiguous fp32 copy (4 B), and cross_entropy saves its fp32 log-softmax output (4 B) and, at the start of
# the backward pass, holds its fp32 gradient (4 B). Used only with `[train] framework = "hf"`.
HF_LOSS_BYTES_PER_ELEMENT = Constant(
    "hf_loss_bytes_per_element",
    16,
    N_("B per logit"),
    N_(
        "Hugging Face transformers causal-LM loss: fp32 logits + shifted fp32 copy + fp32 log-softmax "
        "output + its fp32 gradient (4 × 4 B per vocab entry per token, read from the modeling/loss code); "
        "consistent with Unsloth's README table for HF + FA2 QLoRA on Llama 3.1 8B, whose context grows by "
        "~405 tokens per GB (≈ 2.5 MB per token, of which 16 B × 128256 = 2.05 MB are logits)"
    ),
)
# Share of the allocator's reserved-but-unused memory (PyTorch caching allocator fragmentation).
FRAGMENTATION = Constant(
    "allocator_fragmentation",
    0.05,
    N_("× allocated"),
    N_("PyTorch caching allocator: reserved exceeds allocated by a few percent in steady training"),
)
CUDA_CONTEXT_GIB = Constant(
    "cuda_context_gib",
    0.6,
    "GiB",
    N_(
        "CUDA context + cuBLAS/cuDNN workspaces as nvidia-smi shows for an idle PyTorch process (0.4-0.8 GiB)"
    ),
)
NCCL_BUFFERS_GIB = Constant(
    "nccl_buffers_gib",
    0.5,
    "GiB",
    N_("NCCL communicator buffers per process (NCCL_BUFFSIZE 4 MiB × channels × peers), multi-GPU only"),
)


# --- non-transformer activations ---------------------------------------------------------------
# Activation bytes per forward FLOP of a sample for non-transformers (ResNet-50 at 224²: ~50 MB of bf16
# activations for 8.2 GFLOPs, from batch 256 fitting a 16 GB V100 in NVIDIA's DeepLearningExamples).
ACT_BYTES_PER_FLOP = Constant(
    "activation_bytes_per_flop",
    6e-3,
    N_("B/FLOP (cnn; generic 2e-3; diffusion 9e-4)"),
    N_(
        "ResNet-50 mixed precision: batch 256 per 16 GB V100 (NVIDIA DeepLearningExamples), ~50 MB per "
        "image; attention-heavy models keep fewer bytes per FLOP (ViT-L/16: ~0.25 GB per 123 GFLOP image "
        "by the Korthikanti count); diffusion: the UNet count of gpuwise's diffusion model (SD 1.5 at 512 "
        "px, SDXL at 512-1024 px: 8.8-9.3e-4); its inference third, 2.0 GB per SDXL UNet pass at 1024 px, "
        "is 1.4× the peak per latent of the Hugging Face blog 'Exploring simple optimizations for SDXL' "
        "(11.47 GB for 8 latents, VAE slicing + sequential CPU offload, A100): conservative"
    ),
)
# Diffusion: 16-bit values a UNet keeps per forward FLOP, from gpuwise.workload.diffusion_arch's count of the
# bundled UNets (tests/estimate/test_diffusion_generic.py recomputes it), not the ViT figure it used to share.
ACT_BYTES_PER_FLOP_BY_KIND = {"cnn": 6e-3, "diffusion": 9e-4, "generic": 2e-3}
# Share of activation memory kept with checkpointing, for models without a per-layer formula
# (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost": O(sqrt(n)) segments).
NON_TRANSFORMER_CHECKPOINT_KEEP = {"none": 1.0, "selective": 0.6, "full": 0.25}

# --- frozen base of a LoRA fine-tune --------------------------------------------------------------------
BASE_BYTES_PER_PARAM = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp32": 4.0,
    "int8": 1.0 + 4 / 4096,
    "nf4": (4 + 0.127) / 8,
    "gptq-4bit": 0.5 + 4 / 128,
    "awq-4bit": 0.5 + 4 / 128,
}

# peft's prepare_model_for_kbit_training casts every fp16/bf16 parameter a bitsandbytes model still holds
# (the embedding, the output head that transformers leaves unquantized, the norms) to fp32: +2 B per such
# parameter over the 16-bit charge (huggingface/peft src/peft/utils/other.py @ 012c0d5a, "cast all non INT8
# parameters to fp32"; GPTQ models are skipped). Firefly's train.py calls it for QLoRA (yangjianxin1/Firefly
# @ c561b252), so do TRL's trainers; TRL casts the embedding and head back to bf16 only when bf16 is on
# (peft_module_casting_to_bf16), as does the QLoRA reference script: the upcast is charged for fp16 runs on
# the stacks that call it. Norms (2·layers·hidden parameters) are left out as negligible.
KBIT_FP32_UPCAST_BYTES = Constant(
    "kbit_fp32_upcast_bytes",
    2,
    N_("B per embedding/head param"),
    N_(
        "peft prepare_model_for_kbit_training casts the embedding and output head of a 4-bit "
        "bitsandbytes base to fp32; TRL and the QLoRA script cast them back to bf16 only under bf16, so "
        "fp16 runs keep fp32"
    ),
)
# Not axolotl: it calls the function but casts the norms and embedding modules back to the run's torch_dtype
# whenever an adapter is used (src/axolotl/utils/models.py, Jan-Aug 2024). Not llama-factory: it never calls
# it (its own prepare_model_for_training upcasts only on opt-in flags; hiyouga/LLaMA-Factory @ 973cf8e).
KBIT_FP32_UPCAST_STACKS = ("hf",)

# --- fit verdicts ---------------------------------------------------------------------------------------
TIGHT_MARGIN = Constant(
    "tight_margin",
    0.05,
    N_("of capacity"),
    N_(
        "within 5% of the GPU's memory the caching allocator's fragmentation decides: PyTorch forum and "
        "HF issue reports of OOM at 'reserved but unallocated' of a few percent of the card"
    ),
)
HOST_RAM_PER_RANK_GIB = Constant(
    "host_ram_per_rank_gib",
    4,
    N_("GiB per training process"),
    N_("Python + PyTorch + CUDA host allocations + data-loader workers per rank (typical RSS 3-6 GiB)"),
)

# --- DeepSpeed ZeRO's own buffers (stack "deepspeed" with sharding zero1/2/3) ----------------------------
# The optimizer step of DeepSpeed's ZeRO reads an fp32 copy of the rank's gradient partition (stage 1/2: a
# flat fp32 gradient for the whole partition; stage 3: per optimizer sub-group of up to sub_group_size = 1e9
# elements): 4 B per local trainable parameter, beyond the 16-bit gradients.
DEEPSPEED_FP32_GRAD_BYTES = Constant(
    "deepspeed_fp32_grad_bytes",
    4,
    N_("B per local trainable param"),
    N_(
        "DeepSpeed ZeRO stage_1_and_2.py / stage3.py: the rank's gradient partition is converted to fp32 "
        "for the optimizer step (stage 3 one sub-group of ≤ sub_group_size = 1e9 elements at a time)"
    ),
)
DEEPSPEED_SUBGROUP_ELEMENTS = 1e9
# Communication buckets at DeepSpeed's defaults (reduce_bucket_size and allgather_bucket_size 5e8 elements,
# 16-bit): stage 1/2 hold a reduce and an all-gather bucket, stage 3 a reduce bucket. DeepSpeed maintainer on
# DeepSpeed#1302: "the communication buffers are GBs by default". HF's "auto" config values (hidden²) are
# smaller; a config with overlap_comm uses 4.5× the buckets (HF DeepSpeed guide: 9 GB at 5e8): not modelled.
DEEPSPEED_BUCKET_BYTES = Constant(
    "deepspeed_bucket_bytes",
    1.0e9,
    N_("B per bucket (5e8 elements × 2 B)"),
    N_(
        "DeepSpeed ZeRO defaults reduce_bucket_size = allgather_bucket_size = 5e8 elements; stage 1/2 "
        "keep two buckets, stage 3 one (DeepSpeed#1302: 'the communication buffers are GBs by default')"
    ),
)

# --- fused training kernels ([train] fused_kernels) ----------------------------------------------------
# Liger Kernel / Unsloth / flash-attn's fused ops: the cross-entropy works on chunks of the 16-bit logits
# and writes their gradient in place (no fp32 copies), and the fused SwiGLU recomputes silu(gate) in the
# backward instead of storing it (Liger Kernel README: LigerCrossEntropy / LigerSwiGLUMLP; flash-attn's
# ops/triton cross_entropy).
FUSED_LOSS_BYTES_PER_ELEMENT = Constant(
    "fused_loss_bytes_per_element",
    2,
    N_("B per logit"),
    N_(
        "fused/chunked cross-entropy (Liger Kernel, Unsloth, flash-attn): only the 16-bit logits, gradient "
        "written in place"
    ),
)
