"""Every constant the estimator uses, in one table, each with the public source it comes from.

An estimate lists `Constant.describe()` of every constant it used in its `assumptions`. Efficiencies
marked "calibrated" were fitted on the rows of tests/estimate/validation.toml named in `calibrated_on`;
those rows are not independent evidence (benchmarks/estimate_accuracy.py reports them apart).

Pure data: must not import anything but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Constant:
    name: str
    value: float
    unit: str
    source: str
    calibrated_on: tuple[str, ...] = ()

    def describe(self) -> str:
        cal = f"; calibrated on validation rows {', '.join(self.calibrated_on)}" if self.calibrated_on else ""
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.name} = {self.value:g}{unit} ({self.source}{cal})"


def _c(name: str, value: float, unit: str, source: str, calibrated_on: tuple[str, ...] = ()) -> Constant:
    return Constant(name, value, unit, source, calibrated_on)


# --- bytes per value -------------------------------------------------------------------------
BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}

# NF4 with double quantization: 4 bits + 0.127 bits of scales per parameter (Dettmers et al. 2023, QLoRA §3).
NF4_BYTES_PER_PARAM = _c(
    "nf4_bytes_per_param",
    (4 + 0.127) / 8,
    "B",
    "QLoRA paper §3: 4-bit NF4 plus 0.127 bit/param double-quantized scales",
)
# int4 weight-only inference (AWQ/GPTQ, group size 128, fp16 scale + zero): 0.5 B + 4 B/128.
INT4_BYTES_PER_PARAM = _c(
    "int4_bytes_per_param", 0.5 + 4 / 128, "B", "AWQ/GPTQ group size 128 with fp16 scale and zero point"
)

# --- optimizer state bytes per trainable parameter (excluding fp32 master weights) ------------
# ZeRO paper (Rajbhandari et al. 2020 §3.1): Adam keeps fp32 momentum and variance (8 B) plus, for mixed
# precision, an fp32 master copy (4 B): K = 12 bytes per parameter.
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw8bit": 2.0, "sgd": 4.0, "adafactor": 0.5}
OPTIMIZER_SOURCE = _c(
    "optimizer_state_bytes",
    8,
    "B/param (adamw)",
    "ZeRO paper §3.1 (Adam: fp32 m and v = 8 B, + 4 B fp32 master for mixed precision); adamw8bit 2 B "
    "(Dettmers et al. 2022, 8-bit optimizers); SGD momentum 4 B; Adafactor factored ≈ 0.5 B",
)
MASTER_WEIGHT_BYTES = 4.0

# --- activations (Korthikanti et al. 2022, "Reducing Activation Recomputation", §4) ----------
ACTIVATIONS_SOURCE = _c(
    "activation_bytes_per_token_per_layer",
    34,
    "×hidden B (GPT, 16-bit)",
    "Korthikanti et al. 2022 eq. 1-6: sbh(34 + 5as/h) per layer; gated-MLP/GQA terms re-derived "
    "the same way; flash attention and selective recompute drop the 5as/h term; "
    "full recompute keeps 2sbh per layer",
)
# Cross-entropy on the output logits: bf16 logits + their fp32 copy kept for the loss backward (HF Trainer).
LOGITS_BYTES_PER_ELEMENT = _c(
    "logits_bytes_per_element",
    6,
    "B",
    "Hugging Face causal-LM loss: bf16 logits upcast to fp32 (2 + 4 B per vocab entry per token)",
)
# The Hugging Face transformers causal-LM loss (LlamaForCausalLM and its kin, 4.3x-4.4x; ForCausalLMLoss
# since 4.46): the full logits are upcast to fp32 (4 B, kept alive by the model output), shifted into a
# contiguous fp32 copy (4 B), and cross_entropy saves its fp32 log-softmax output (4 B) and, at the start of
# the backward pass, holds its fp32 gradient (4 B). Used only with `[train] framework = "hf"`.
HF_LOSS_BYTES_PER_ELEMENT = _c(
    "hf_loss_bytes_per_element",
    16,
    "B per logit",
    "Hugging Face transformers causal-LM loss: fp32 logits + shifted fp32 copy + fp32 log-softmax output + "
    "its fp32 gradient (4 × 4 B per vocab entry per token, read from the modeling/loss code); "
    "consistent with Unsloth's README table for HF + FA2 QLoRA on Llama 3.1 8B, whose context grows by "
    "~405 tokens per GB (≈ 2.5 MB per token, of which 16 B × 128256 = 2.05 MB are logits)",
)
# Share of the allocator's reserved-but-unused memory (PyTorch caching allocator fragmentation).
FRAGMENTATION = _c(
    "allocator_fragmentation",
    0.05,
    "× allocated",
    "PyTorch caching allocator: reserved exceeds allocated by a few percent in steady training",
)
CUDA_CONTEXT_GIB = _c(
    "cuda_context_gib",
    0.6,
    "GiB",
    "CUDA context + cuBLAS/cuDNN workspaces as nvidia-smi shows for an idle PyTorch process (0.4-0.8 GiB)",
)
NCCL_BUFFERS_GIB = _c(
    "nccl_buffers_gib",
    0.5,
    "GiB",
    "NCCL communicator buffers per process (NCCL_BUFFSIZE 4 MiB × channels × peers), multi-GPU only",
)

# --- compute efficiency ------------------------------------------------------------------------
# Best sustained fraction of dense tensor peak for large transformer GEMM-bound training with a mature
# stack (Megatron/TE, FSDP). MFU = this × size factor × batch factor.
ARCH_EFFICIENCY = {
    "ampere": 0.68,
    "hopper": 0.50,
    "blackwell": 0.45,
    "ada lovelace": 0.50,
    "turing": 0.45,
    "volta": 0.55,
    "cdna 3": 0.35,
    "cdna3": 0.35,
    "gaudi2": 0.45,
}
ARCH_EFFICIENCY_DEFAULT = 0.40
ARCH_EFFICIENCY_SOURCE = _c(
    "max_training_efficiency",
    0.68,
    "of dense peak (Ampere)",
    "Narayanan et al. 2021 / Korthikanti et al. 2022 (Megatron-LM: 52-56% MFU on A100); Hopper 0.50 from "
    "Llama 3 herd §3.3 (38-43% BF16 MFU at 16k H100s) and MosaicML LLM Foundry H100 tables; "
    "Ada/Turing/Volta/CDNA3/Gaudi2 from vendor MLPerf-era GEMM efficiency, less certain",
    (
        "llama2-7b-gpuhours",
        "llama2-70b-gpuhours",
        "megatron-1t-a100",
        "llama31-405b-gpuhours",
        "mpt-7b-a100-2k",
        "mpt-7b-h100-2k",
    ),
)
# MFU falls for narrow models (small GEMMs, more non-GEMM time): factor hidden / (hidden + H0).
SIZE_HIDDEN_H0 = _c(
    "size_factor_h0",
    256,
    "hidden units",
    "GEMM efficiency falls for narrow models: MPT-125M reaches ~0.7× the MFU of MPT-7B on A100 "
    "(MosaicML LLM Foundry benchmark tables)",
    ("mpt-125m-a100-2k",),
)
# MFU falls when a GPU gets few tokens per micro step (kernel launch and non-GEMM time dominate).
BATCH_TOKENS_T0 = _c(
    "batch_factor_t0",
    256,
    "tokens per GPU per micro step",
    "fitted: MFU at micro batch × seq ≥ 8k tokens is near saturation in torchtitan/LLM Foundry sweeps",
)
# FP8 (Transformer Engine) runs the linear-layer GEMMs in FP8; the attention core (softmax(QKᵀ)V), norms and
# element-wise work stay in BF16. The speed-up below applies to the linear-layer share of a step's FLOPs only
# (Amdahl), so long sequences, where attention dominates, gain little.
FP8_SPEEDUP = _c(
    "fp8_linear_speedup",
    1.7,
    "× bf16 speed of the linear-layer GEMMs",
    "Megatron-Core/NeMo on H100: BF16 up to 47% MFU (NVIDIA Megatron-LM README) vs FP8 model throughput of "
    "711-888 TFLOP/s per GPU = 72-90% of the 989 TFLOPS BF16 dense peak (NeMo 24.12 performance summary), "
    "i.e. 1.6-1.9× on GEMM-dominated steps; LLM Foundry's same-config BF16/FP8 pairs gain only 1.3-1.35× "
    "at seq 512 (a less fused FP8 path), so FSDP/Composer stacks run slower than this",
    ("nemo-llama2-7b-fp8-pretrain", "nemo-gpt3-175b-fp8-512gpu"),
)
# LoRA: frozen base has no weight-gradient GEMMs (≈ 4N FLOPs/token instead of 6N); the input-gradient GEMMs
# that remain have the same shapes as the forward ones, so they run at the same efficiency.
LORA_EFFICIENCY = _c(
    "lora_efficiency_factor",
    1.0,
    "× full-training efficiency",
    "NeMo 24.07 Llama 2 7B FP8 on 8 H100: LoRA 25206 vs SFT 17120 tokens/s/GPU = 1.47×, against a FLOP "
    "ratio (6N + attention)/(4N + attention) of 1.40×: LoRA runs at full-training efficiency (adapter "
    "kernels are a few percent of the time)",
    ("nemo-llama2-7b-fp8-lora", "nemo-llama2-7b-fp8-sft"),
)
QLORA_EFFICIENCY = _c(
    "qlora_efficiency_factor",
    0.60,
    "× LoRA efficiency",
    "NF4 dequantization per GEMM (bitsandbytes): QLoRA steps ~1.5-1.7× slower than BF16 LoRA "
    "(QLoRA paper; HF PEFT benchmarks)",
)
FULL_RECOMPUTE_FLOPS = _c(
    "full_recompute_flops",
    8,
    "× params FLOPs/token",
    "Korthikanti et al. 2022 §5: full recomputation adds one forward pass (6N → 8N hardware FLOPs)",
)
# FP32 without tensor cores (V100/T4 fp32, or any GPU told precision = "fp32"): the CUDA cores run dense
# kernels near their peak, unlike the tensor-core paths above.
FP32_SIMT_EFFICIENCY = _c(
    "fp32_cuda_core_efficiency",
    0.55,
    "of FP32 (non-tensor) peak",
    "NVIDIA DeepLearningExamples ResNet-50 v1.5 FP32 on V100: 367 img/s × 24.6 GFLOP = 57% of 15.7 TFLOPS",
    ("dle-resnet50-v100-fp32-1gpu",),
)
# Non-transformer models: fraction of dense peak reached in training (data loading, convolutions, BN).
KIND_EFFICIENCY = {"cnn": 0.22, "diffusion": 0.35, "generic": 0.35}
KIND_EFFICIENCY_SOURCE = _c(
    "non_transformer_efficiency",
    0.22,
    "of dense peak (cnn, Ampere; scaled by generation)",
    "NVIDIA DeepLearningExamples ResNet-50 v1.5 AMP on A100: 2470 img/s × 24.6 GFLOP ≈ 20% of 312 TFLOPS "
    "(BN, data loading and small convolutions keep CNNs far below GEMM efficiency); diffusion and ViT 0.35 "
    "from their larger GEMM share (no validation row yet)",
    ("dle-resnet50-a100-amp-1gpu",),
)

# --- inference -----------------------------------------------------------------------------------
DECODE_BANDWIDTH_EFFICIENCY = _c(
    "decode_bandwidth_efficiency",
    0.70,
    "of peak memory bandwidth",
    "vLLM / TensorRT-LLM batch-1 decode reaches 60-80% of HBM bandwidth (weights streamed once per step)",
)
PREFILL_EFFICIENCY = _c(
    "prefill_efficiency",
    0.55,
    "of dense peak",
    "large-batch prefill GEMMs in vLLM/TensorRT-LLM run near the training GEMM efficiency",
)
DECODE_STEP_OVERHEAD_S = _c(
    "decode_step_overhead_s",
    0.002,
    "s per decode step",
    "scheduler, sampling and kernel-launch time per step in vLLM with CUDA graphs (1-3 ms)",
)
TP_LAYER_LATENCY_S = _c(
    "tp_allreduce_latency_s",
    15e-6,
    "s per all-reduce",
    "NCCL small-message all-reduce latency over NVLink (~10-20 µs), two per layer with tensor parallelism",
)

# --- communication -----------------------------------------------------------------------------
LINK_EFFICIENCY = _c(
    "link_efficiency",
    0.75,
    "of link peak",
    "nccl-tests all-reduce bus bandwidth: ~350-370 GB/s of 450 GB/s NVLink 4; ~75% on PCIe and RoCE/IB",
)
COMM_OVERLAP = _c(
    "comm_overlap",
    0.7,
    "of gradient communication hidden behind backward",
    "PyTorch DDP/FSDP bucketed overlap; Megatron overlap_grad_reduce (partial: last buckets are exposed)",
)
PCIE_GBS_PER_DIRECTION = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}
PCIE_SOURCE = _c(
    "pcie_x16_gbs", 32, "GB/s per direction (gen 4)", "PCI-SIG: x16 gen3 16, gen4 32, gen5 64 GB/s"
)
# Inter-node network per GPU: HPC-class GPUs in cloud clusters come with one 400 Gb/s (H100/H200/B200)
# or 200 Gb/s (A100) InfiniBand/EFA link per GPU; everything else is assumed on 100 Gb/s Ethernet per node.
INTERNODE_GBPS_PER_GPU = {
    "H100": 400.0,
    "H200": 400.0,
    "B200": 400.0,
    "GH200": 400.0,
    "A100-80GB": 200.0,
    "A100": 200.0,
}
INTERNODE_DEFAULT_GBPS_PER_NODE = 100.0
INTERNODE_SOURCE = _c(
    "internode_network",
    400,
    "Gb/s per GPU (H100/H200/B200; A100 200)",
    "AWS p5/p4d EFA, Azure ND H100 v5, GCP A3 Mega: 8×400 Gb/s (H100) and 8×200 Gb/s (A100) per node; "
    "other GPUs assumed 100 Gb/s Ethernet per node",
)
GPUS_PER_NODE = 8
# Interleaved 1F1B (Narayanan et al. 2021 §2.2.2): v model chunks per stage divide the bubble by v.
PIPELINE_INTERLEAVE = _c(
    "pipeline_virtual_stages",
    4,
    "chunks per stage (at most layers per stage)",
    "Megatron-LM interleaved schedule: bubble (p−1)/(v·m); Llama 3 herd §3.3.2 uses it at 16k GPUs",
)
# Share of wall-clock time lost to failures, restarts and evaluation, growing with job size
# (Llama 3 herd §3.3.4: >90% effective training time on 16k H100s; 466 interruptions in 54 days).
MAX_GOODPUT_LOSS = _c(
    "goodput_loss_at_16k_gpus",
    0.10,
    "of wall-clock time (scaled by log(count)/log(16384))",
    "Dubey et al. 2024 (Llama 3 herd) §3.3.4: over 90% effective training time at 16k GPUs",
)

# --- input/output --------------------------------------------------------------------------------
STORAGE_READ_GBS_PER_NODE = _c(
    "storage_read_gbs_per_node",
    1.0,
    "GB/s per node",
    "sustained read from cloud block/object storage per node (EBS gp3 io ≤ 1 GB/s; S3 per-node 1-3 GB/s)",
)
# Activation bytes per forward FLOP of a sample for non-transformers (ResNet-50 at 224²: ~50 MB of bf16
# activations for 8.2 GFLOPs, from batch 256 fitting a 16 GB V100 in NVIDIA's DeepLearningExamples).
ACT_BYTES_PER_FLOP = _c(
    "activation_bytes_per_flop",
    6e-3,
    "B/FLOP (cnn; diffusion and generic 2e-3)",
    "ResNet-50 mixed precision: batch 256 per 16 GB V100 (NVIDIA DeepLearningExamples), ~50 MB per image; "
    "attention-heavy models keep fewer bytes per FLOP (ViT-L/16: ~0.25 GB per 123 GFLOP image by the "
    "Korthikanti count)",
)
ACT_BYTES_PER_FLOP_BY_KIND = {"cnn": 6e-3, "diffusion": 2e-3, "generic": 2e-3}
# CNN training is bounded by memory traffic as well as by compute: batch norm, ReLU and residual adds read and
# write every activation several times. A step can run no faster than its HBM traffic at the datasheet
# bandwidth allows; the traffic is this multiple of the (16-bit) activation bytes of a sample.
CNN_TRAIN_TRAFFIC = _c(
    "cnn_training_traffic",
    9.5,
    "× activation bytes per sample",
    "NVIDIA MLPerf Training v4.0 ResNet-50 (fused MXNet/DALI) on 8 H100: 57.3k img/s at 3.35 TB/s = 0.47 GB "
    "of HBM traffic per 224² image = 9.5 × its ~49 MB of fp16 activations",
    ("mlperf-v40-resnet50-8xh100",),
)
# Share of activation memory kept with checkpointing, for models without a per-layer formula
# (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost": O(sqrt(n)) segments).
NON_TRANSFORMER_CHECKPOINT_KEEP = {"none": 1.0, "selective": 0.6, "full": 0.25}
# Gradient-accumulation steps assumed when the workload gives no global_batch.
TRAIN_EFF_PER_GEMM_FRACTION = _c(
    "training_efficiency_per_gemm_fraction",
    0.67,
    "× measured large-GEMM fraction of peak",
    "end-to-end MFU ≈ 2/3 of large-GEMM efficiency (A100: 0.60 MFU vs ~0.9 GEMM; H100: 0.48 vs ~0.72)",
)
# 70-W-class cards cannot hold their boost clock through sustained tensor work: public measurements of large
# 16-bit GEMMs (torch.matmul / cuBLAS) replace the architecture default for training on them.
MEASURED_GEMM_FRACTION = {
    "L4": _c(
        "l4_sustained_gemm_fraction",
        0.47,
        "of the 121 TFLOPS dense BF16 peak",
        "zzc0721/torch-performance-test-data#120 (NVIDIA L4, torch 2.9): BF16 matmul 54.9 / 59.4 / 56.9 "
        "TFLOPS at 4096² / 8192² / 10240² (median 57 = 0.47 of peak); 72 W power cap",
    ),
    "T4": _c(
        "t4_sustained_gemm_fraction",
        0.37,
        "of the 65 TFLOPS dense FP16 peak",
        "NVIDIA developer forum 'About GPU peak performance' (2023): cuBLAS FP16 4096³ GEMM on T4 ~24 of 65 "
        "TFLOPS, 'due to power capping of the GPU' (70 W), per the NVIDIA moderator",
    ),
}
DECODE_EFF_PER_BANDWIDTH_FRACTION = _c(
    "decode_efficiency_per_bandwidth_fraction",
    0.8,
    "× measured memory-bandwidth fraction",
    "decode streams weights at ~80% of what a copy kernel reaches (vLLM vs STREAM-like copy)",
)


# --- training stacks (issue 11: what real users run, not only tuned benchmarks) ---------------------------
@dataclass(frozen=True)
class Stack:
    """How a training stack turns the tuned estimate into what its users see.

    `efficiency`: × the tuned compute efficiency (kernels, fusion, eager PyTorch vs compiled/TE);
    `layer_overhead_s`: fixed seconds per transformer layer per micro batch (kernel launches, Python, hooks:
    what makes small batches slow in eager stacks); `step_overhead_s`: fixed seconds per optimizer step
    (logging, zero_grad, scheduler, Trainer callbacks); `loader_overhead`: share of step time spent waiting
    on the data loader / collator; `comm_overlap`: share of data-parallel traffic hidden behind compute;
    `hf_loss`: keeps the Hugging Face causal-LM loss's fp32 copies of the logits; `meta_init`: builds or loads
    the model without a full copy per GPU by default; `fragmentation`: reserved over allocated memory.
    """

    name: str
    efficiency: float
    layer_overhead_s: float
    step_overhead_s: float
    loader_overhead: float
    comm_overlap: float
    hf_loss: bool
    meta_init: bool
    fragmentation: float
    source: str
    # The optimizer step's own time (bandwidth-bound, OPTIMIZER_STEP_BYTES). The tuned figures already
    # include it in their measured efficiencies, so only the user stacks add it.
    counts_optimizer_step: bool = True
    calibrated_on: tuple[str, ...] = ()

    def describe(self) -> str:
        cal = f"; fitted on user rows {', '.join(self.calibrated_on)}" if self.calibrated_on else ""
        return (
            f"stack {self.name}: {self.efficiency:.2f}× tuned compute efficiency, "
            f"{self.layer_overhead_s * 1e3:g} ms per layer per micro batch, {self.step_overhead_s:g} s per "
            f"optimizer step, {self.loader_overhead:.0%} data-loader wait, "
            f"{self.comm_overlap:.0%} of gradient "
            f"traffic overlapped ({self.source}{cal})"
        )


_HF_SOURCE = (
    "HF Trainer + PEFT in eager PyTorch; efficiency and per-layer time fitted on the HF-family fit rows of "
    "tests/estimate/user_reports.toml (GEMMs near tuned speed, ~10 ms of unhidden CPU-side time per layer "
    "per micro batch; priors 0.6 and 1 ms from the LitGPT and Unsloth README comparisons)"
)


def _stack(name: str, efficiency: float, source: str, **kw: object) -> Stack:
    base: dict[str, object] = {
        "layer_overhead_s": 0.0,
        "step_overhead_s": 0.0,
        "loader_overhead": 0.0,
        "comm_overlap": 0.7,
        "hf_loss": False,
        "meta_init": True,
        "fragmentation": 0.05,
        "counts_optimizer_step": True,
    }
    base.update(kw)
    return Stack(name=name, efficiency=efficiency, source=source, **base)  # type: ignore[arg-type]


# The HF Trainer family (hf, axolotl, llama-factory, accelerate-fsdp, deepspeed): efficiency and per-layer
# overhead chosen on a grid (efficiency 0.6-1.0 × per-layer 0-32 ms × per-step 0.05-1 s) to minimise the mean
# |ln(true/estimated time)| (capped at ln 4) over the family's 23 fit rows of user_reports.toml (never the
# held-out rows): 1.0 and ~10 ms, against 0.6 and 1 ms before (median |residual| 0.45 -> 0.27). The per-layer
# time is CPU-side work eager PyTorch does not hide behind small GEMMs (Python, hooks, launches, the
# synchronising .item() and bitsandbytes calls); adding it fits these rows better than max(GPU, CPU) does.
# Families with fewer than 5 fit rows (nanogpt, megatron, unsloth, lightning) keep their priors.
HF_EFFICIENCY = 1.0
_HF = {
    "layer_overhead_s": 0.010,
    "step_overhead_s": 0.05,
    "loader_overhead": 0.05,
    "comm_overlap": 0.5,
    "hf_loss": True,
    "meta_init": False,
    "fragmentation": 0.10,
}
STACKS: dict[str, Stack] = {
    "tuned": _stack(
        "tuned",
        1.0,
        "today's figures: Megatron/TE, torchtitan, MLPerf submissions (validation.toml)",
        counts_optimizer_step=False,
    ),
    "torchtitan": _stack(
        "torchtitan",
        1.0,
        "torchtitan's own benchmarks are rows of validation.toml",
        counts_optimizer_step=False,
    ),
    "megatron": _stack(
        "megatron",
        1.0,
        "Megatron-LM/NeMo: the tuned stack; user runs add logging and checkpoint time",
        step_overhead_s=0.05,
        counts_optimizer_step=False,
    ),
    "nanogpt": _stack(
        "nanogpt",
        0.85,
        "plain PyTorch DDP + torch.compile (nanoGPT: ~0.85× a Megatron-class MFU at GPT-2 sizes)",
        comm_overlap=0.6,
    ),
    "lightning": _stack(
        "lightning",
        0.8,
        "Lightning/LitGPT: fused kernels where LitGPT has them, eager elsewhere",
        layer_overhead_s=0.0005,
        step_overhead_s=0.02,
        loader_overhead=0.02,
        comm_overlap=0.6,
        fragmentation=0.08,
    ),
    "hf": _stack("hf", HF_EFFICIENCY, _HF_SOURCE, **_HF),
    "axolotl": _stack("axolotl", HF_EFFICIENCY, "wraps HF Trainer; " + _HF_SOURCE, **_HF),
    "llama-factory": _stack("llama-factory", HF_EFFICIENCY, "wraps HF Trainer; " + _HF_SOURCE, **_HF),
    "accelerate-fsdp": _stack(
        "accelerate-fsdp",
        HF_EFFICIENCY,
        "HF Trainer/Accelerate with FSDP: eager HF modules, FSDP all-gathers partly exposed",
        **{**_HF, "comm_overlap": 0.4},
    ),
    "deepspeed": _stack(
        "deepspeed",
        HF_EFFICIENCY,
        "HF Trainer with DeepSpeed ZeRO: eager HF modules, ZeRO collectives partly exposed",
        **{**_HF, "comm_overlap": 0.4},
    ),
    "unsloth": _stack(
        "unsloth",
        1.0,
        "Unsloth README: ~2× HF+FA2 speed with Triton kernels and chunked cross-entropy",
        layer_overhead_s=0.0003,
        step_overhead_s=0.03,
        loader_overhead=0.03,
        comm_overlap=0.5,
        fragmentation=0.08,
    ),
}
STACK_FAMILY = {
    "tuned": "tuned",
    "torchtitan": "tuned",
    "megatron": "tuned",
    "nanogpt": "nanogpt",
    "hf": "hf",
    "axolotl": "hf",
    "llama-factory": "hf",
    "accelerate-fsdp": "hf",
    "deepspeed": "hf",
    "lightning": "lightning",
    "unsloth": "unsloth",
}

# Range of the time estimate: the true time divided by the estimate, as percentiles of that stack's residuals
# on the fit rows (benchmarks/estimate_accuracy.py --fit prints them). (low, high) multipliers of `hours`.
RANGE_PERCENTILES = (5, 95)
RANGE_MIN_ROWS = 5  # fewer fit rows than this for a stack: the pooled spread is used instead
# Printed by `benchmarks/estimate_accuracy.py --fit` (fit rows of user_reports.toml; the tuned and inference
# ranges from validation.toml's main set). A stack not listed here uses the pooled spread of the user stacks.
HOURS_RANGE: dict[str, tuple[float, float]] = {
    "hf": (0.35, 1.39),  # n = 14 fit rows
    # n = 6 fit rows, one with CPU offload (modelled since, still 4.7× slow) and one 24 h progress-bar ETA
    "accelerate-fsdp": (0.89, 9.21),
    "tuned": (0.79, 1.53),  # n = 51 validation rows
    "inference": (0.84, 0.98),  # n = 6 validation rows
}
HOURS_RANGE_POOLED = (0.44, 4.17)  # n = 28 fit rows over every user stack
# A range is never narrower than this (P5-P95 of a handful of rows is nearly their min and max): ±15 %, about
# the validation table's median error.
RANGE_MIN_HALF_WIDTH = 0.15
RANGE_SOURCE = _c(
    "hours_range",
    90,
    "% interval (P5-P95 of log residuals)",
    "spread of measured/estimated time on the fit rows of tests/estimate/user_reports.toml per stack; "
    "pooled over all stacks where a stack has fewer than 5 rows",
)

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
# 4-bit bases (nf4, gptq-4bit, awq-4bit) are timed by their dequantization instead (DEQUANT_* below).
BASE_SPEED = {
    "int8": _c(
        "int8_base_speed",
        0.40,
        "× bf16 LoRA speed",
        "LLM.int8() (bitsandbytes) matmuls with outlier decomposition: LoRA fine-tuning 2-3× slower than "
        "fp16 "
        "(bitsandbytes issue #465, A5000, 7B); 2.5× slower than fp16 on T4 (earino.github.io int8 post); "
        "~5× slower inference at batch 1 on A100 (bitsandbytes #490)",
    ),
}

# --- sample lengths (unpacked batches pad to the longest sample in the batch) -----------------------------
LENGTH_CV = _c(
    "sample_length_cv",
    0.7,
    "coefficient of variation (lognormal lengths)",
    "assumed spread of chat/instruction sample lengths (Alpaca, ShareGPT-style data are right-skewed, "
    "standard deviation close to the mean); padding cost = expected longest of micro_batch samples",
)
GROUP_BY_LENGTH_PAD = _c(
    "group_by_length_padding",
    1.05,
    "× tokens",
    "HF Trainer group_by_length sorts mega-batches of 50 batches by length: a few percent of padding left",
)
# Peak memory of an unpacked run comes from its longest batch: the 99.9th percentile length (≤ seq_len).
LENGTH_PEAK_QUANTILE = 0.999

# --- optimizer step (memory-bound: reads and writes every trainable parameter's state) ---------------------
OPTIMIZER_STEP_BYTES = _c(
    "optimizer_step_bytes_per_param",
    32,
    "B per trainable param (adamw, fp32 states)",
    "AdamW step reads param, grad, m, v and writes param, m, v (fp32: 7 × 4 B, + bf16 copy): ~32 B per "
    "parameter at the memory bandwidth (apex/PyTorch fused AdamW are bandwidth-bound)",
)

# --- fit verdicts ---------------------------------------------------------------------------------------
TIGHT_MARGIN = _c(
    "tight_margin",
    0.05,
    "of capacity",
    "within 5% of the GPU's memory the caching allocator's fragmentation decides: PyTorch forum and "
    "HF issue reports of OOM at 'reserved but unallocated' of a few percent of the card",
)
HOST_RAM_PER_RANK_GIB = _c(
    "host_ram_per_rank_gib",
    4,
    "GiB per training process",
    "Python + PyTorch + CUDA host allocations + data-loader workers per rank (typical RSS 3-6 GiB)",
)

# --- inter-node network ---------------------------------------------------------------------------------
INTERNODE_CONSERVATIVE_GBPS = _c(
    "internode_default_gbps",
    25,
    "Gb/s per node",
    "conservative default where the instance's network is unknown: AWS g5/g4dn/g6 and most GPU VMs "
    "outside HPC families list 25 Gigabit (vantage instance table); pass --network-gbps for yours",
)

# --- DeepSpeed ZeRO's own buffers (stack "deepspeed" with sharding zero1/2/3) ----------------------------
# The optimizer step of DeepSpeed's ZeRO reads an fp32 copy of the rank's gradient partition (stage 1/2: a
# flat fp32 gradient for the whole partition; stage 3: per optimizer sub-group of up to sub_group_size = 1e9
# elements): 4 B per local trainable parameter, beyond the 16-bit gradients.
DEEPSPEED_FP32_GRAD_BYTES = _c(
    "deepspeed_fp32_grad_bytes",
    4,
    "B per local trainable param",
    "DeepSpeed ZeRO stage_1_and_2.py / stage3.py: the rank's gradient partition is converted to fp32 for the "
    "optimizer step (stage 3 one sub-group of ≤ sub_group_size = 1e9 elements at a time)",
)
DEEPSPEED_SUBGROUP_ELEMENTS = 1e9
# Communication buckets at DeepSpeed's defaults (reduce_bucket_size and allgather_bucket_size 5e8 elements,
# 16-bit): stage 1/2 hold a reduce and an all-gather bucket, stage 3 a reduce bucket. DeepSpeed maintainer on
# DeepSpeed#1302: "the communication buffers are GBs by default". HF's "auto" config values (hidden²) are
# smaller; a config with overlap_comm uses 4.5× the buckets (HF DeepSpeed guide: 9 GB at 5e8): not modelled.
DEEPSPEED_BUCKET_BYTES = _c(
    "deepspeed_bucket_bytes",
    1.0e9,
    "B per bucket (5e8 elements × 2 B)",
    "DeepSpeed ZeRO defaults reduce_bucket_size = allgather_bucket_size = 5e8 elements; stage 1/2 keep two "
    "buckets, stage 3 one (DeepSpeed#1302: 'the communication buffers are GBs by default')",
)

# --- CPU offload ([train] offload) ---------------------------------------------------------------------
# Host↔GPU copies over PCIe, not overlapped with compute (FSDP CPU offload copies synchronously; DeepSpeed
# overlaps part of it, which the range covers). PCIe 3.0 ×16 is 15.75 GB/s and 4.0 ×16 31.5 GB/s per
# direction in theory; pinned copies reach ~12 and ~24 GB/s (CUDA bandwidthTest figures users post). The
# conservative figure is used for every card: cards share the host's root complex and memory.
PCIE_HOST_GBS = _c(
    "pcie_host_gbs",
    12,
    "GB/s per GPU, each direction",
    "PCIe 3.0 ×16 pinned host↔device copies (~12 of 15.75 GB/s theoretical; PCIe 4.0 reaches ~24): "
    "the conservative figure, as cards share the host",
)
# The optimizer step on the CPU streams every offloaded parameter's fp32 master, gradient and Adam states
# through host memory (~32 B per parameter, as OPTIMIZER_STEP_BYTES on the GPU): host memory bandwidth per
# node, shared by its ranks.
HOST_MEMORY_GBS = _c(
    "host_memory_gbs",
    100,
    "GB/s per node",
    "sustained host DRAM bandwidth of a 2-socket GPU server (8 DDR4-3200 channels per socket = 205 GB/s "
    "peak per socket; ~100 GB/s reached by a vectorised streaming kernel over both): an assumption, not "
    "measured here",
)
# DeepSpeed tutorial 'ZeRO-Offload': "DeepSpeedCPUAdam is 5X–7X faster than the standard PyTorch
# implementation". FSDP's CPU offload runs torch.optim.AdamW on the CPU: 6× the DeepSpeedCPUAdam time.
TORCH_CPU_ADAM_SLOWDOWN = _c(
    "torch_cpu_adam_slowdown",
    6,
    "× DeepSpeedCPUAdam time",
    "deepspeed.ai/tutorials/zero-offload: DeepSpeedCPUAdam is 5-7× faster than PyTorch's CPU Adam "
    "(ZeRO-Offload, Ren et al. 2021, §5); FSDP CPU offload uses PyTorch's",
)

# --- fused training kernels ([train] fused_kernels) ----------------------------------------------------
# Liger Kernel / Unsloth / flash-attn's fused ops: the cross-entropy works on chunks of the 16-bit logits
# and writes their gradient in place (no fp32 copies), and the fused SwiGLU recomputes silu(gate) in the
# backward instead of storing it (Liger Kernel README: LigerCrossEntropy / LigerSwiGLUMLP; flash-attn's
# ops/triton cross_entropy).
FUSED_LOSS_BYTES_PER_ELEMENT = _c(
    "fused_loss_bytes_per_element",
    2,
    "B per logit",
    "fused/chunked cross-entropy (Liger Kernel, Unsloth, flash-attn): only the 16-bit logits, gradient "
    "written in place",
)

# --- 4-bit bases: dequantization per GEMM (replaces a fixed speed factor for NF4/GPTQ/AWQ) ----------------
# bitsandbytes' 4-bit Linear (and the GPTQ/AWQ training paths) dequantize the whole weight to 16 bits, then
# run a 16-bit GEMM: read 0.5 B (+ block scales), write 2 B, and the GEMM reads those 2 B back = ~4.5 B per
# weight per pass, memory-bound. The cost is per micro batch, so it weighs most at few tokens per micro
# batch (QLoRA paper / bitsandbytes issue #465: 1.2-2× slower than 16-bit LoRA at small batches, a few
# percent at large ones).
DEQUANT_BASES = ("nf4", "gptq-4bit", "awq-4bit")
DEQUANT_BYTES_PER_PARAM = _c(
    "dequant_bytes_per_param",
    4.5,
    "B per 4-bit weight per pass",
    "bitsandbytes dequantize_4bit then a 16-bit GEMM: 0.5 B read + 2 B written + 2 B read back per weight",
)
DEQUANT_BANDWIDTH_FRACTION = _c(
    "dequant_bandwidth_fraction",
    0.7,
    "of peak memory bandwidth",
    "element-wise dequantize kernels reach ~70% of HBM/GDDR peak (the same order as the decode path's 0.8)",
)
