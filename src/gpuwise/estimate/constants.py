"""The `Constant` type, the bytes of each dtype, and the figures of the speed model, each with its source.

An estimate lists `Constant.describe()` of every constant it used in its `assumptions`. Efficiencies
marked "calibrated" were fitted on the rows of tests/estimate/validation.toml named in `calibrated_on`;
those rows are not independent evidence (benchmarks/estimate_accuracy.py reports them apart);
tests/estimate/test_estimate_accuracy.py reads every table below for them.

The other tables, by subject: memory_constants.py (bytes the memory model counts), interconnect_constants.py
(links between GPUs, nodes and the host) and stacks.py (the training stacks and the time ranges).

Pure data: must not import anything but the standard library and the locale leaf (the units and sources are
marked with `N_()` where defined and translated by `describe()` where an estimate shows them).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwise.locale import N_, _


@dataclass(frozen=True)
class Constant:
    name: str
    value: float
    unit: str
    source: str
    calibrated_on: tuple[str, ...] = ()

    def describe(self) -> str:
        rows = ", ".join(self.calibrated_on)
        cal = _("; calibrated on validation rows {rows}").format(rows=rows) if self.calibrated_on else ""
        unit = f" {_(self.unit)}" if self.unit else ""
        return _("{name} = {value}{unit} ({source}{calibrated})").format(
            name=self.name, value=f"{self.value:g}", unit=unit, source=_(self.source), calibrated=cal
        )


def _c(name: str, value: float, unit: str, source: str, calibrated_on: tuple[str, ...] = ()) -> Constant:
    return Constant(name, value, unit, source, calibrated_on)


# --- bytes per value -------------------------------------------------------------------------
BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}

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
    N_("of dense peak (Ampere)"),
    N_(
        "Narayanan et al. 2021 / Korthikanti et al. 2022 (Megatron-LM: 52-56% MFU on A100); Hopper 0.50 from "
        "Llama 3 herd §3.3 (38-43% BF16 MFU at 16k H100s) and MosaicML LLM Foundry H100 tables; "
        "Ada/Turing/Volta/CDNA3/Gaudi2 from vendor MLPerf-era GEMM efficiency, less certain"
    ),
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
    N_("hidden units"),
    N_(
        "GEMM efficiency falls for narrow models: MPT-125M reaches ~0.7× the MFU of MPT-7B on A100 "
        "(MosaicML LLM Foundry benchmark tables)"
    ),
    ("mpt-125m-a100-2k",),
)
# MFU falls when a GPU gets few tokens per micro step (kernel launch and non-GEMM time dominate).
BATCH_TOKENS_T0 = _c(
    "batch_factor_t0",
    256,
    N_("tokens per GPU per micro step"),
    N_("fitted: MFU at micro batch × seq ≥ 8k tokens is near saturation in torchtitan/LLM Foundry sweeps"),
)
# FP8 (Transformer Engine) runs the linear-layer GEMMs in FP8; the attention core (softmax(QKᵀ)V), norms and
# element-wise work stay in BF16. The speed-up below applies to the linear-layer share of a step's FLOPs only
# (Amdahl), so long sequences, where attention dominates, gain little.
FP8_SPEEDUP = _c(
    "fp8_linear_speedup",
    1.7,
    N_("× bf16 speed of the linear-layer GEMMs"),
    N_(
        "Megatron-Core/NeMo on H100: BF16 up to 47% MFU (NVIDIA Megatron-LM README) vs FP8 model "
        "throughput of 711-888 TFLOP/s per GPU = 72-90% of the 989 TFLOPS BF16 dense peak (NeMo 24.12 "
        "performance summary), i.e. 1.6-1.9× on GEMM-dominated steps; LLM Foundry's same-config BF16/FP8 "
        "pairs gain only 1.3-1.35× at seq 512 (a less fused FP8 path), so FSDP/Composer stacks run slower "
        "than this"
    ),
    ("nemo-llama2-7b-fp8-pretrain", "nemo-gpt3-175b-fp8-512gpu"),
)
# LoRA: frozen base has no weight-gradient GEMMs (≈ 4N FLOPs/token instead of 6N); the input-gradient GEMMs
# that remain have the same shapes as the forward ones, so they run at the same efficiency.
LORA_EFFICIENCY = _c(
    "lora_efficiency_factor",
    1.0,
    N_("× full-training efficiency"),
    N_(
        "NeMo 24.07 Llama 2 7B FP8 on 8 H100: LoRA 25206 vs SFT 17120 tokens/s/GPU = 1.47×, against a FLOP "
        "ratio (6N + attention)/(4N + attention) of 1.40×: LoRA runs at full-training efficiency (adapter "
        "kernels are a few percent of the time)"
    ),
    ("nemo-llama2-7b-fp8-lora", "nemo-llama2-7b-fp8-sft"),
)
QLORA_EFFICIENCY = _c(
    "qlora_efficiency_factor",
    0.60,
    N_("× LoRA efficiency"),
    N_(
        "NF4 dequantization per GEMM (bitsandbytes): QLoRA steps ~1.5-1.7× slower than BF16 LoRA "
        "(QLoRA paper; HF PEFT benchmarks)"
    ),
)
FULL_RECOMPUTE_FLOPS = _c(
    "full_recompute_flops",
    8,
    N_("× params FLOPs/token"),
    N_("Korthikanti et al. 2022 §5: full recomputation adds one forward pass (6N → 8N hardware FLOPs)"),
)
# FP32 without tensor cores (V100/T4 fp32, or any GPU told precision = "fp32"): the CUDA cores run dense
# kernels near their peak, unlike the tensor-core paths above.
FP32_SIMT_EFFICIENCY = _c(
    "fp32_cuda_core_efficiency",
    0.55,
    N_("of FP32 (non-tensor) peak"),
    N_(
        "NVIDIA DeepLearningExamples ResNet-50 v1.5 FP32 on V100: 367 img/s × 24.6 GFLOP = 57% of 15.7 TFLOPS"
    ),
    ("dle-resnet50-v100-fp32-1gpu",),
)
# Non-transformer models: fraction of dense peak reached in training (data loading, convolutions, BN).
KIND_EFFICIENCY = {"cnn": 0.22, "diffusion": 0.35, "generic": 0.35}
KIND_EFFICIENCY_SOURCE = _c(
    "non_transformer_efficiency",
    0.22,
    N_("of dense peak (cnn, Ampere; scaled by generation)"),
    N_(
        "NVIDIA DeepLearningExamples ResNet-50 v1.5 AMP on A100: 2470 img/s × 24.6 GFLOP ≈ 20% of 312 "
        "TFLOPS (BN, data loading and small convolutions keep CNNs far below GEMM efficiency); diffusion "
        "and ViT 0.35 from their larger GEMM share (no validation row yet)"
    ),
    ("dle-resnet50-a100-amp-1gpu",),
)
# Checkpointing of a model without a per-layer formula (cnn, generic, a diffusion model given by its FLOPs):
# forward passes the backward reruns, by mode. The time side of the scheme whose memory side is
# memory_constants.NON_TRANSFORMER_CHECKPOINT_KEEP: "full" is Chen et al.'s sqrt(n) segments, every segment
# recomputed once (keeps ~25%); "selective" checkpoints every other block (keeps ~(1 + 0.25)/2 ≈ 60%,
# reruns half the forward), as diffusion.py charges a bundled UNet's "selective".
NON_TRANSFORMER_RECOMPUTE = {"none": 0.0, "selective": 0.5, "full": 1.0}
NON_TRANSFORMER_RECOMPUTE_SOURCE = _c(
    "checkpoint_recompute_forwards",
    1.0,
    N_("forward pass rerun in the backward (full; selective 0.5)"),
    N_(
        "Chen et al. 2016, 'Training Deep Nets with Sublinear Memory Cost': sqrt(n) segments cost one extra "
        "forward pass per mini-batch, +1/3 of the training FLOPs as convolutions' backward is 2× their "
        "forward at large batch (Hobbhahn & Sevilla 2021, Epoch AI, 'What's the backward-forward FLOP ratio "
        "for neural networks?'); measured: +30% time for a 1000-layer ResNet on ImageNet (Chen et al.), "
        "~+20% for feed-forward models (Bulatov & Salimans, cybertronai/gradient-checkpointing README)"
    ),
)

# --- inference -----------------------------------------------------------------------------------
DECODE_BANDWIDTH_EFFICIENCY = _c(
    "decode_bandwidth_efficiency",
    0.70,
    N_("of peak memory bandwidth"),
    N_("vLLM / TensorRT-LLM batch-1 decode reaches 60-80% of HBM bandwidth (weights streamed once per step)"),
)
PREFILL_EFFICIENCY = _c(
    "prefill_efficiency",
    0.55,
    N_("of dense peak"),
    N_("large-batch prefill GEMMs in vLLM/TensorRT-LLM run near the training GEMM efficiency"),
)
DECODE_STEP_OVERHEAD_S = _c(
    "decode_step_overhead_s",
    0.002,
    N_("s per decode step"),
    N_("scheduler, sampling and kernel-launch time per step in vLLM with CUDA graphs (1-3 ms)"),
)
TP_LAYER_LATENCY_S = _c(
    "tp_allreduce_latency_s",
    15e-6,
    N_("s per all-reduce"),
    N_(
        "NCCL small-message all-reduce latency over NVLink (~10-20 µs), two per layer with tensor parallelism"
    ),
)


# --- pipeline schedule and job-level losses ---------------------------------------------------------
# Interleaved 1F1B (Narayanan et al. 2021 §2.2.2): v model chunks per stage divide the bubble by v.
PIPELINE_INTERLEAVE = _c(
    "pipeline_virtual_stages",
    4,
    N_("chunks per stage (at most layers per stage)"),
    N_("Megatron-LM interleaved schedule: bubble (p−1)/(v·m); Llama 3 herd §3.3.2 uses it at 16k GPUs"),
)
# Share of wall-clock time lost to failures, restarts and evaluation, growing with job size
# (Llama 3 herd §3.3.4: >90% effective training time on 16k H100s; 466 interruptions in 54 days).
MAX_GOODPUT_LOSS = _c(
    "goodput_loss_at_16k_gpus",
    0.10,
    N_("of wall-clock time (scaled by log(count)/log(16384))"),
    N_("Dubey et al. 2024 (Llama 3 herd) §3.3.4: over 90% effective training time at 16k GPUs"),
)

# --- input/output --------------------------------------------------------------------------------
STORAGE_READ_GBS_PER_NODE = _c(
    "storage_read_gbs_per_node",
    1.0,
    N_("GB/s per node"),
    N_("sustained read from cloud block/object storage per node (EBS gp3 io ≤ 1 GB/s; S3 per-node 1-3 GB/s)"),
)
# CNN training is bounded by memory traffic as well as by compute: batch norm, ReLU and residual adds read and
# write every activation several times. A step can run no faster than its HBM traffic at the datasheet
# bandwidth allows; the traffic is this multiple of the (16-bit) activation bytes of a sample.
CNN_TRAIN_TRAFFIC = _c(
    "cnn_training_traffic",
    9.5,
    N_("× activation bytes per sample"),
    N_(
        "NVIDIA MLPerf Training v4.0 ResNet-50 (fused MXNet/DALI) on 8 H100: 57.3k img/s at 3.35 TB/s = "
        "0.47 GB of HBM traffic per 224² image = 9.5 × its ~49 MB of fp16 activations"
    ),
    ("mlperf-v40-resnet50-8xh100",),
)

# --- measured GEMM and bandwidth fractions ---------------------------------------------------------------
TRAIN_EFF_PER_GEMM_FRACTION = _c(
    "training_efficiency_per_gemm_fraction",
    0.67,
    N_("× measured large-GEMM fraction of peak"),
    N_("end-to-end MFU ≈ 2/3 of large-GEMM efficiency (A100: 0.60 MFU vs ~0.9 GEMM; H100: 0.48 vs ~0.72)"),
)
# 70-W-class cards cannot hold their boost clock through sustained tensor work: public measurements of large
# 16-bit GEMMs (torch.matmul / cuBLAS) replace the architecture default for training on them.
MEASURED_GEMM_FRACTION = {
    "L4": _c(
        "l4_sustained_gemm_fraction",
        0.47,
        N_("of the 121 TFLOPS dense BF16 peak"),
        N_(
            "zzc0721/torch-performance-test-data#120 (NVIDIA L4, torch 2.9): BF16 matmul 54.9 / 59.4 / 56.9 "
            "TFLOPS at 4096² / 8192² / 10240² (median 57 = 0.47 of peak); 72 W power cap"
        ),
    ),
    "T4": _c(
        "t4_sustained_gemm_fraction",
        0.37,
        N_("of the 65 TFLOPS dense FP16 peak"),
        N_(
            "NVIDIA developer forum 'About GPU peak performance' (2023): cuBLAS FP16 4096³ GEMM on T4 ~24 "
            "of 65 TFLOPS, 'due to power capping of the GPU' (70 W), per the NVIDIA moderator"
        ),
    ),
    # GeForce cards the other way round: their boost clocks run above the one the datasheet's dense figure
    # assumes, so large GEMMs reach its peak or more, where the A100 behind the Ampere default reaches ~0.85
    # (264.5 of 312 TFLOPS BF16 in the same table). Added for the two cards whose fit rows of the
    # user-reported table were all estimated too slow (RTX 4090: 4 rows, 1.8-3.6×); other cards of that
    # table (RTX 5090 1.13, RTX A6000 0.80, L40S 0.74 of peak) are left on their defaults until rows say so.
    "RTX4090": _c(
        "rtx4090_sustained_gemm_fraction",
        0.96,
        N_("of the 165.2 TFLOPS dense BF16 (FP32-accumulate) peak"),
        N_(
            "zzc0721/torch-performance-test-data#78 (RTX 4090, torch 2.7): BF16 matmul 151.5 / 160.2 / "
            "158.5 TFLOPS at 4096² / 8192² / 10240² (median 158.5 = 0.96 of peak); database.md: 162-173 "
            "on four other RTX 4090 24 GB machines"
        ),
    ),
    "RTX3090": _c(
        "rtx3090_sustained_gemm_fraction",
        1.08,
        N_("of the 71 TFLOPS dense BF16 (FP32-accumulate) peak"),
        N_(
            "zzc0721/torch-performance-test-data database.md: BF16 matmul 76.3 / 76.7 / 76.6 TFLOPS on "
            "three RTX 3090 machines (the best of 1024²-10240²; no per-size figures)"
        ),
    ),
}
DECODE_EFF_PER_BANDWIDTH_FRACTION = _c(
    "decode_efficiency_per_bandwidth_fraction",
    0.8,
    N_("× measured memory-bandwidth fraction"),
    N_("decode streams weights at ~80% of what a copy kernel reaches (vLLM vs STREAM-like copy)"),
)

# --- frozen base of a LoRA fine-tune: speed of an int8 base ----------------------------------------------
# 4-bit bases (nf4, gptq-4bit, awq-4bit) are timed by their dequantization instead (DEQUANT_* below).
BASE_SPEED = {
    "int8": _c(
        "int8_base_speed",
        0.40,
        N_("× bf16 LoRA speed"),
        N_(
            "LLM.int8() (bitsandbytes) matmuls with outlier decomposition: LoRA fine-tuning 2-3× slower than "
            "fp16 "
            "(bitsandbytes issue #465, A5000, 7B); 2.5× slower than fp16 on T4 (earino.github.io int8 post); "
            "~5× slower inference at batch 1 on A100 (bitsandbytes #490)"
        ),
    ),
}

# --- sample lengths (unpacked batches pad to the longest sample in the batch) -----------------------------
LENGTH_CV = _c(
    "sample_length_cv",
    0.7,
    N_("coefficient of variation (lognormal lengths)"),
    N_(
        "assumed spread of chat/instruction sample lengths (Alpaca, ShareGPT-style data are right-skewed, "
        "standard deviation close to the mean); padding cost = expected longest of micro_batch samples"
    ),
)
GROUP_BY_LENGTH_PAD = _c(
    "group_by_length_padding",
    1.05,
    N_("× tokens"),
    N_(
        "HF Trainer group_by_length sorts mega-batches of 50 batches by length: a few percent of padding left"
    ),
)
# Peak memory of an unpacked run comes from its longest batch: the 99.9th percentile length (≤ seq_len).
LENGTH_PEAK_QUANTILE = 0.999

# --- optimizer step (memory-bound: reads and writes every trainable parameter's state) ---------------------
OPTIMIZER_STEP_BYTES = _c(
    "optimizer_step_bytes_per_param",
    32,
    N_("B per trainable param (adamw, fp32 states)"),
    N_(
        "AdamW step reads param, grad, m, v and writes param, m, v (fp32: 7 × 4 B, + bf16 copy): ~32 B per "
        "parameter at the memory bandwidth (apex/PyTorch fused AdamW are bandwidth-bound)"
    ),
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
    N_("B per 4-bit weight per pass"),
    N_(
        "bitsandbytes dequantize_4bit then a 16-bit GEMM: 0.5 B read + 2 B written + 2 B read back per weight"
    ),
)
DEQUANT_BANDWIDTH_FRACTION = _c(
    "dequant_bandwidth_fraction",
    0.7,
    N_("of peak memory bandwidth"),
    N_(
        "element-wise dequantize kernels reach ~70% of HBM/GDDR peak "
        "(the same order as the decode path's 0.8)"
    ),
)
