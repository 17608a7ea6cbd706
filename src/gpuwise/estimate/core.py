"""The estimator: memory per GPU, throughput and time for a workload on one GPU configuration.

Pure: data in (Workload, GpuSpec, count, nodes, Calibration), an `Estimate` out; no files, clock or
printing. Fast (a few hundred calls per plan): plain arithmetic, no allocation-heavy structures.
Every constant comes from the cited tables (constants.py, memory_constants.py,
interconnect_constants.py, stacks.py) and is named in the estimate's assumptions.

Must not import the CLI, the planner or the catalog loaders (only `catalog.models`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from functools import lru_cache

from gpuwise.catalog.models import GpuSpec
from gpuwise.errors import ConfigError
from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate import interconnect_constants as NET  # noqa: N812 - the links table
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate import stacks as S  # noqa: N812 - the training stacks table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.units import GIB
from gpuwise.workload.spec import InferenceSpec, ModelSpec, TrainSpec, Workload, default_framework


@dataclass
class _Notes:
    """Assumptions collected while estimating, in order, without duplicates."""

    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)

    def const(self, c: K.Constant) -> float:
        self.add(c.describe())
        return c.value


# ---------------------------------------------------------------------------------------------
# GPU figures
# ---------------------------------------------------------------------------------------------


def _peak_flops(gpu: GpuSpec, dtype: str, notes: _Notes) -> tuple[float | None, str]:
    """Dense tensor peak FLOP/s for the compute dtype, with honest fallbacks. Returns (peak, dtype used)."""
    order = {
        "bf16": ["bf16", "fp16"],
        "fp16": ["fp16", "bf16"],
        "fp8": ["fp8"],
        "int8": ["int8", "fp8"],
        "tf32": ["tf32", "fp32"],
        "fp32": ["fp32"],
        "int4": ["fp16", "bf16"],  # weight-only int4: the GEMMs run in 16-bit
    }[dtype]
    for i, d in enumerate(order):
        value = gpu.peak_tflops(d)
        if value:
            if i > 0:
                notes.add(f"{gpu.name} publishes no dense {dtype.upper()} peak: using its {d.upper()} peak")
            else:
                src = gpu.tflops[d].source
                notes.add(f"{gpu.name} dense {d.upper()} peak {value:g} TFLOPS ({src})")
            return value * 1e12, d
    return None, dtype


def _bandwidth(gpu: GpuSpec, notes: _Notes) -> float | None:
    value = gpu.memory_bandwidth_gbs.value
    if value:
        notes.add(f"{gpu.name} memory bandwidth {value:g} GB/s ({gpu.memory_bandwidth_gbs.source})")
        return value * 1e9
    return None


def _intra_node_bytes_per_s(gpu: GpuSpec, notes: _Notes) -> float:
    """Per-GPU, per-direction bandwidth to the other GPUs of its node."""
    eff = notes.const(NET.LINK_EFFICIENCY)
    nvlink = gpu.nvlink_bidir_gbs.value
    if nvlink and gpu.form_factor.upper().startswith(("SXM", "OAM", "HGX")):
        notes.add(
            f"intra-node: NVLink {nvlink / 2:g} GB/s per direction per GPU ({gpu.nvlink_bidir_gbs.source})"
        )
        return nvlink / 2 * 1e9 * eff
    gen = gpu.pcie_gen or 4
    notes.const(NET.PCIE_SOURCE)
    pcie = NET.PCIE_GBS_PER_DIRECTION.get(gen, 32.0)
    notes.add(f"intra-node: PCIe gen {gen} x16, {pcie:g} GB/s per direction (no NVLink switch assumed)")
    return pcie * 1e9 * eff


def _inter_node_bytes_per_s(
    gpu: GpuSpec, gpus_per_node: int, notes: _Notes, network_gbps: float | None = None
) -> float:
    """Network bandwidth of one node (all NICs together), per direction."""
    eff = NET.LINK_EFFICIENCY.value
    if network_gbps is not None:
        notes.add(
            f"inter-node: {network_gbps:g} Gb/s per node (given: --network-gbps or the instance's network)"
        )
        return network_gbps / 8 * 1e9 * eff
    per_gpu = NET.INTERNODE_GBPS_PER_GPU.get(gpu.name)
    notes.const(NET.INTERNODE_SOURCE)
    if per_gpu is not None:
        notes.add(
            f"inter-node: {gpus_per_node}×{per_gpu:g} Gb/s InfiniBand/EFA per node assumed for {gpu.name}"
        )
        return gpus_per_node * per_gpu / 8 * 1e9 * eff
    default = notes.const(NET.INTERNODE_CONSERVATIVE_GBPS)
    notes.add(f"inter-node: {default:g} Gb/s Ethernet per node assumed for {gpu.name} (network unknown)")
    return default / 8 * 1e9 * eff


def _arch_efficiency(gpu: GpuSpec, dtype: str, calibration: Calibration | None, notes: _Notes) -> float:
    if calibration is not None and calibration.applies_to(gpu.name):
        frac = calibration.gemm_fraction.get(dtype) or calibration.gemm_fraction.get("bf16")
        if frac:
            ratio = notes.const(K.TRAIN_EFF_PER_GEMM_FRACTION)
            notes.add(
                f"calibration {calibration.source}: measured GEMM {frac:.0%} of peak replaces the default"
            )
            return frac * ratio
    if calibration is not None and not calibration.applies_to(gpu.name):
        notes.add(f"calibration {calibration.source} is for {calibration.gpu}, not {gpu.name}: not used")
    measured = K.MEASURED_GEMM_FRACTION.get(gpu.name)
    if measured is not None and dtype in ("bf16", "fp16"):
        ratio = notes.const(K.TRAIN_EFF_PER_GEMM_FRACTION)
        frac = notes.const(measured)
        notes.add(
            f"{gpu.name}: sustained large-GEMM {frac:.0%} of the datasheet peak (power-capped card, public "
            "measurement) replaces the architecture default"
        )
        return frac * ratio
    notes.const(K.ARCH_EFFICIENCY_SOURCE)
    arch = gpu.architecture.lower()
    if arch in K.ARCH_EFFICIENCY:
        return K.ARCH_EFFICIENCY[arch]
    notes.add(
        f"no efficiency figure for architecture {gpu.architecture!r}: using {K.ARCH_EFFICIENCY_DEFAULT}"
    )
    return K.ARCH_EFFICIENCY_DEFAULT


# ---------------------------------------------------------------------------------------------
# Model arithmetic
# ---------------------------------------------------------------------------------------------


def _matmul_params(m: ModelSpec, active: bool = True) -> float:
    """Parameters that take part in matmuls per token: the input embedding is a lookup, not a GEMM."""
    n = m.n_active_params if active else m.n_params
    if m.tied_embeddings:
        return n  # the shared matrix is used once, as the output head
    return max(n - m.embedding_params, n * 0.5)


def _lora_params(m: ModelSpec, rank: int, targets: str = "all") -> float:
    """LoRA adapter parameters: rank × (in + out) per adapted matrix. `targets` "all" adapts every linear
    layer of attention and MLP (the QLoRA paper's recommendation); "attention" only q, k, v and o."""
    h, kvd, qd = m.hidden or 0, m.n_kv_heads * m.n_head_dim, (m.heads or 1) * m.n_head_dim
    f = m.n_ffn
    attn = (h + qd) * 2 + (h + kvd) * 2  # q, o and k, v
    mlp = (3 if m.gated_mlp else 2) * (h + f) * m.experts if targets == "all" else 0
    return float((m.layers or 0) * rank * (attn + mlp))


def _act_bytes_per_token_layer(m: ModelSpec, t: TrainSpec, seq: int, tp: int) -> tuple[float, float]:
    """(bytes per token per layer without the s² term, s² term per token) for 16-bit activations.

    Korthikanti et al. 2022 §4 re-derived for gated MLPs and grouped-query attention; sequence parallel
    with tensor parallelism divides everything by t.
    """
    h, hd = m.hidden or 0, m.n_head_dim
    qd, kvd = (m.heads or 1) * hd, m.n_kv_heads * hd
    f = m.n_ffn * m.experts_per_token
    attn = 2 * h + 2 * qd + 4 * kvd + 2 * qd
    mlp = 2 * h + (8 * f if m.gated_mlp else 4 * f + f)  # gated: gate, up, act, product; else fc1, gelu, mask
    norms = 4 * h
    linear = (attn + mlp + norms) / tp
    quad = 5 * (m.heads or 1) * seq / tp if t.attention == "eager" else 0.0
    return linear, quad


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def _train_memory(
    w: Workload,
    t: TrainSpec,
    *,
    dp: int,
    tp: int,
    pp: int,
    count: int,
    stack: S.Stack,
    seq_mem: float,
    notes: _Notes,
) -> tuple[MemoryBreakdown, float]:
    """Peak GPU memory per GPU, and the bytes per GPU that CPU offload keeps in host RAM instead."""
    m = w.model
    n = m.n_params
    shard = tp * pp
    mixed = t.precision not in ("fp32", "tf32") and not t.pure_low_precision
    compute_b = K.BYTES[t.precision] if t.precision != "fp8" else 2.0
    opt_state = MEM.OPTIMIZER_STATE_BYTES[t.optimizer_kind]
    notes.const(MEM.OPTIMIZER_SOURCE)
    if t.pure_low_precision and t.precision not in ("fp32", "tf32"):
        opt_state = opt_state / 2 if t.optimizer_kind in ("adamw", "sgd") else opt_state
        notes.add(
            "pure low precision: weights, gradients and optimizer states in the compute dtype, no fp32 master"
        )
    zero = t.zero_stage

    if t.method == "full":
        weights = n / shard * compute_b
        grads = n / shard * compute_b
        optimizer = n / shard * (opt_state + (MEM.MASTER_WEIGHT_BYTES if mixed else 0.0))
        if mixed:
            per_param = 2 * compute_b + opt_state + MEM.MASTER_WEIGHT_BYTES
            notes.add(
                f"mixed precision: {t.precision} weights and gradients + fp32 master weights and "
                f"{t.optimizer} states = {per_param:g} B/param before sharding (ZeRO paper accounting)"
            )
        if t.precision == "fp8":
            notes.add("FP8 training keeps BF16 weights (Transformer Engine casts per GEMM)")
        if zero >= 1:
            optimizer /= dp
        if zero >= 2:
            grads /= dp
        if zero >= 3:
            weights /= dp
            # FSDP gathers the current and the prefetched layer's full weights.
            weights += 2 * n / shard / max(m.layers or 1, 1) * compute_b
        trainable = n
    else:
        lora = _lora_params(m, t.lora_rank, t.lora_targets) / shard
        base_dtype = t.base_dtype
        if t.quantized_base:
            if base_dtype == "nf4":
                notes.const(MEM.NF4_BYTES_PER_PARAM)
            qb = MEM.BASE_BYTES_PER_PARAM[base_dtype]
            emb = m.embedding_params * (1 if m.tied_embeddings else 2)
            base = ((n - emb) * qb + emb * 2) / shard
            notes.add(
                f"{base_dtype} base ({qb:.3g} B/param): linear layers quantized, embeddings and output head "
                "kept in 16-bit (bitsandbytes / GPTQ / AWQ)"
            )
        else:
            base = n / shard * MEM.BASE_BYTES_PER_PARAM.get(base_dtype, compute_b)
        if zero >= 3 and base_dtype in ("int8", "gptq-4bit", "awq-4bit"):
            # FSDP/ZeRO-3 flatten and shard floating-point tensors only: an integer-stored base (LLM.int8
            # Int8Params, GPTQ/AWQ packed int32) stays whole on every GPU. NF4 shards since bitsandbytes'
            # bnb_4bit_quant_storage (Answer.AI's FSDP-QLoRA, 2024).
            notes.add(
                f"{base_dtype} base is integer-stored: FSDP/ZeRO-3 cannot shard it (a full copy per GPU)"
            )
        elif zero >= 3:
            base /= dp
        where = "all attention and MLP" if t.lora_targets == "all" else "the attention (q, k, v, o)"
        notes.add(
            f"LoRA rank {t.lora_rank} on {where} linear layers: {lora * shard / 1e6:.0f}M "
            f"trainable params in fp32 with {t.optimizer} states"
        )
        weights = base + lora * 4
        grads = lora * 4
        optimizer = lora * opt_state
        trainable = lora * shard
    trainable_local = trainable / shard / (dp if zero >= 1 else 1)

    offloaded = 0.0
    if t.offload != "none":
        offloaded += optimizer
        optimizer = 0.0
        what = "fp32 master weights and optimizer states"
        if t.offload == "optimizer+params":
            window = 2 * n / shard / max(m.layers or 1, 1) * compute_b
            if t.method == "full":
                offloaded += weights + grads - window
                weights, grads = window, window
            else:
                offloaded += weights - window
                weights = window + lora * 4
            what += ", parameters and gradients (two layers' weights gathered on the GPU at a time)"
        notes.add(f"CPU offload: {what} live in host RAM ({offloaded / GIB:.1f} GiB per GPU)")

    if stack.name == "deepspeed" and zero >= 1:
        # DeepSpeed's engine adds what FSDP does not: an fp32 gradient partition for the step (on the CPU
        # with ZeRO-Offload) and its communication buckets.
        if t.offload == "none":
            part = trainable_local if zero < 3 else min(trainable_local, MEM.DEEPSPEED_SUBGROUP_ELEMENTS)
            grads += part * notes.const(MEM.DEEPSPEED_FP32_GRAD_BYTES)
        buckets = (2 if zero < 3 else 1) * notes.const(MEM.DEEPSPEED_BUCKET_BYTES)
        grads += buckets
        notes.add(
            f"DeepSpeed ZeRO-{zero}: fp32 gradient partition for the optimizer step"
            + (" (on the CPU with offload)" if t.offload != "none" else "")
            + f" and {buckets / 1e9:g} GB of communication buckets at DeepSpeed's defaults"
        )

    # Activations.
    if m.kind == "transformer":
        seq = max(1, round(seq_mem))
        b = t.micro_batch
        layers = m.layers or 1
        linear, quad = _act_bytes_per_token_layer(m, t, seq, tp)
        notes.const(MEM.ACTIVATIONS_SOURCE)
        tokens = b * seq
        # 1F1B pipeline: the first stage holds pp micro batches of L/pp layers = L layers' worth.
        layer_count = layers / pp * min(pp, 10**9)
        if t.activation_checkpointing == "full":
            per_layer = 2 * (m.hidden or 0) / tp
            acts = layer_count * per_layer * tokens + (linear + quad) * tokens
            notes.add(
                "full activation checkpointing: 2·s·b·h bytes kept per layer, one layer recomputed at a time"
            )
        elif t.activation_checkpointing == "selective":
            acts = layer_count * linear * tokens
            notes.add("selective checkpointing: attention scores recomputed (Korthikanti et al. 2022 §4.2)")
        else:
            acts = layer_count * (linear + quad) * tokens
        if t.attention == "flash" and t.activation_checkpointing != "selective":
            notes.add("flash attention: no s² attention matrix stored")
        loss_acts = 0.0
        fused = bool(t.fused_kernels)
        if fused and m.gated_mlp and t.activation_checkpointing != "full":
            # The fused SwiGLU recomputes silu(gate) in the backward: 2·ffn bytes per token per layer fewer.
            acts -= layer_count * 2 * m.n_ffn * m.experts_per_token / tp * tokens
        if m.vocab and fused:
            lb = notes.const(MEM.FUSED_LOSS_BYTES_PER_ELEMENT)
            loss_acts = tokens * m.vocab * lb / tp
            notes.add("fused kernels: chunked cross-entropy on the 16-bit logits, SwiGLU recomputed")
        elif m.vocab and stack.hf_loss:
            # Counted after the fp32 doubling below: the figure already holds the fp32 copies.
            lb = notes.const(MEM.HF_LOSS_BYTES_PER_ELEMENT)
            loss_acts = tokens * m.vocab * lb / tp
        elif m.vocab:
            lb = notes.const(MEM.LOGITS_BYTES_PER_ELEMENT)
            acts += tokens * m.vocab * lb / tp
        if t.precision in ("fp32", "tf32"):
            acts *= 2
        acts += loss_acts
        if t.quantized_base:
            acts += 2 * (m.hidden or 0) * m.n_ffn * 2 / tp  # one dequantized BF16 weight matrix at a time
    else:
        notes.const(MEM.ACT_BYTES_PER_FLOP)
        per_flop = MEM.ACT_BYTES_PER_FLOP_BY_KIND[m.kind]
        keep = MEM.NON_TRANSFORMER_CHECKPOINT_KEEP[t.activation_checkpointing]
        acts = (m.flops_per_sample or 0) * per_flop * t.micro_batch * keep
        if keep < 1:
            mode = t.activation_checkpointing
            notes.add(f"{mode} checkpointing keeps ~{keep:.0%} of activations (Chen et al. 2016)")
        if t.precision in ("fp32", "tf32"):
            acts *= 2

    allocated = weights + grads + optimizer + acts
    frag = stack.fragmentation
    notes.add(
        f"allocator_fragmentation = {frag:g} × allocated for the {stack.name} stack (PyTorch caching "
        "allocator: "
        "reserved exceeds allocated by ~5% with fixed shapes, 8-15% with variable-length batches, as "
        "torch.cuda.memory_summary reports in user threads)"
    )
    overhead = notes.const(MEM.CUDA_CONTEXT_GIB) * GIB + allocated * frag
    if count > 1:
        overhead += notes.const(MEM.NCCL_BUFFERS_GIB) * GIB
    return MemoryBreakdown(weights, grads, optimizer, acts, 0.0, overhead), offloaded


@lru_cache(maxsize=4096)
def _expected_max_length(mean: float, cv: float, batch: int, cap: float) -> float:
    """E[max of `batch` lognormal lengths with this mean and CV], each length capped at `cap`.

    E[max] = ∫₀¹ Q(v^(1/b)) dv (v = F(x)^b), by the midpoint rule: plain arithmetic, cached.
    """
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    normal = statistics.NormalDist()
    n = 200
    total = 0.0
    for i in range(n):
        v = (i + 0.5) / n
        total += min(cap, math.exp(mu + sigma * normal.inv_cdf(v ** (1 / batch))))
    return total / n


def _length_quantile(mean: float, cv: float, q: float) -> float:
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    return math.exp(mu + sigma * statistics.NormalDist().inv_cdf(q))


@dataclass(frozen=True)
class _Lengths:
    """Tokens as the job sees them: padded length per micro batch, attention length, peak length."""

    batch_len: float  # tokens per sequence slot of a micro batch (seq_len packed; longest sample unpacked)
    attn_len: float  # sequence length the attention core costs per token
    peak_len: float  # the longest batch: sets peak activation memory
    pad_factor: float  # computed tokens / real tokens (≥ 1)
    real_per_sample: float  # real tokens per sample


def _lengths(t: TrainSpec, notes: _Notes) -> _Lengths:
    seq = float(t.seq_len or 1)
    if t.avg_tokens is None:
        if t.samples is not None:
            notes.add(
                f"no avg_tokens: every sample assumed to fill seq_len = {seq:g} tokens (give [train] "
                "avg_tokens, the mean tokens per sample, for shorter data)"
            )
        return _Lengths(seq, seq, seq, 1.0, seq)
    mean = float(t.avg_tokens)
    cv = notes.const(K.LENGTH_CV)
    attn = min(seq, mean * (1 + cv * cv))  # E[L²]/E[L]: attention cost per token of variable-length samples
    peak = min(seq, _length_quantile(mean, cv, K.LENGTH_PEAK_QUANTILE))
    if t.packing:
        notes.add(
            f"packing: samples of {mean:g} tokens on average concatenated into rows of {seq:g}; attention "
            "per sample (variable-length flash attention)"
        )
        return _Lengths(seq, attn, seq, 1.0, mean)
    if t.group_by_length:
        pad = min(seq, mean * notes.const(K.GROUP_BY_LENGTH_PAD))
        notes.add(f"group_by_length: batches of similar length, padded to ~{pad:.0f} tokens")
    else:
        pad = _expected_max_length(mean, cv, t.micro_batch, seq)
        notes.add(
            f"no packing: each micro batch of {t.micro_batch} padded to its longest sample, expected "
            f"{pad:.0f} tokens for a mean of {mean:g} ({pad / mean:.2f}× the real tokens)"
        )
    pad = max(pad, mean)
    return _Lengths(pad, max(attn, pad if t.micro_batch > 1 else attn), peak, pad / mean, mean)


def _dequant_seconds(w: Workload, t: TrainSpec, gpu: GpuSpec, *, accum: int, notes: _Notes) -> float:
    """Seconds per optimizer step spent dequantizing a 4-bit base (NF4, GPTQ, AWQ) to 16 bits.

    bitsandbytes (and the GPTQ/AWQ training paths) dequantize each whole weight matrix before a 16-bit GEMM,
    in the forward, in the backward's input-gradient GEMM and again in a recomputed forward: a cost per
    micro batch that does not shrink with fewer tokens, paced by memory bandwidth. FSDP/ZeRO-3 gather the
    full layer first, so every GPU dequantizes the whole (tensor/pipeline-local) base.
    """
    m = w.model
    bw = _bandwidth(gpu, notes)
    if not bw:
        return 0.0
    emb = m.embedding_params * (1 if m.tied_embeddings else 2)
    quantized = (m.n_params - emb) / (t.tensor_parallel * t.pipeline_parallel)
    passes = 3 if t.activation_checkpointing == "full" else 2
    per_param = notes.const(K.DEQUANT_BYTES_PER_PARAM)
    seconds = passes * quantized * per_param / (bw * notes.const(K.DEQUANT_BANDWIDTH_FRACTION)) * accum
    notes.add(
        f"{t.base_dtype} base dequantized to 16 bits before every GEMM: {passes} passes × "
        f"{quantized / 1e9:.1f}B weights × {per_param:g} B at the memory bandwidth per micro batch"
    )
    return seconds


def _offload_seconds(
    w: Workload, t: TrainSpec, stack: S.Stack, *, dp: int, accum: int, gpn: int, notes: _Notes
) -> float:
    """Seconds per optimizer step that CPU offload adds: PCIe copies and the optimizer step on the CPU.

    "optimizer" (ZeRO-Offload): 16-bit gradients down every micro batch, updated 16-bit weights up once per
    step. "optimizer+params": also the weight shard up for the forward and the backward (and the recompute)
    of every micro batch. The CPU step streams ~32 B per offloaded parameter through host memory, whose
    bandwidth the node's ranks share; PyTorch's CPU AdamW (FSDP) is several times slower than DeepSpeed's.
    """
    m = w.model
    shard = t.tensor_parallel * t.pipeline_parallel
    trainable = m.n_params if t.method == "full" else _lora_params(m, t.lora_rank, t.lora_targets)
    local_trainable = trainable / shard / dp
    b = 2.0 if t.precision not in ("fp32", "tf32") else 4.0
    pcie = notes.const(NET.PCIE_HOST_GBS) * 1e9
    moved = local_trainable * b * (accum + 1)
    if t.offload == "optimizer+params":
        passes = 3 if t.activation_checkpointing == "full" else 2
        moved += m.n_params / shard / dp * b * passes * accum
    host = notes.const(NET.HOST_MEMORY_GBS) * 1e9 / max(gpn, 1)
    cpu_s = local_trainable * K.OPTIMIZER_STEP_BYTES.value / host
    if stack.name != "deepspeed":
        cpu_s *= notes.const(NET.TORCH_CPU_ADAM_SLOWDOWN)
    notes.add(
        f"CPU offload: {moved / 1e9:.1f} GB over PCIe per GPU per step ({moved / pcie:.1f} s) and the "
        f"optimizer step on the CPU ({cpu_s:.1f} s"
        + (", PyTorch's CPU AdamW" if stack.name != "deepspeed" else ", DeepSpeedCPUAdam")
        + "), not overlapped"
    )
    return moved / pcie + cpu_s


def _train_estimate(
    w: Workload,
    gpu: GpuSpec,
    *,
    count: int,
    nodes: int,
    calibration: Calibration | None,
    notes: _Notes,
    network_gbps: float | None = None,
) -> Estimate:
    t = w.train
    assert t is not None
    m = w.model
    stack_name = default_framework(w.task, t, m.kind)
    stack = S.STACKS[stack_name]
    if t.framework is None:
        what = f"{t.method} {'fine-tune' if w.task == 'finetune' else 'training'}"
        notes.add(
            f"no framework given: assuming {stack_name}, the common stack for a {what} (set [train] "
            'framework, e.g. "unsloth" or "tuned", to change)'
        )
    elif t.framework == "generic":
        notes.add('framework "generic" is the old name of "tuned"')
    notes.add(stack.describe())
    if m.kind == "transformer" and t.method != "full" and t.base_precision is None and t.method == "lora":
        notes.add(
            f'no base_precision: the frozen base is kept in {t.base_dtype} (set base_precision = "nf4" '
            'or "int8" for a quantized base)'
        )
    tp, pp = t.tensor_parallel, t.pipeline_parallel
    capacity = gpu.memory_gib * GIB
    transformer = m.kind == "transformer"
    unit = "tokens/s" if transformer else "samples/s"
    if tp * pp > count:
        reason = f"tensor_parallel × pipeline_parallel = {tp * pp} needs at least {tp * pp} GPUs, got {count}"
        return _impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes
        )
    dp = count // (tp * pp)
    if dp * tp * pp != count:
        notes.add(
            f"{count - dp * tp * pp} of {count} GPUs idle: count is not a multiple of tp × pp = {tp * pp}"
        )
    gpn = math.ceil(count / nodes)
    if count % nodes:
        notes.add(
            f"uneven layout: {count} GPUs on {nodes} nodes, up to {gpn} per node (the fullest node's network "
            "share paces the step)"
        )
    lengths = _lengths(t, notes) if transformer else _Lengths(1.0, 1.0, 1.0, 1.0, 1.0)

    mem, offloaded = _train_memory(
        w, t, dp=dp, tp=tp, pp=pp, count=count, stack=stack, seq_mem=lengths.peak_len, notes=notes
    )

    # Work per step (computed tokens: padded when unpacked).
    seq = lengths.batch_len if transformer else 1
    units_per_micro = t.micro_batch * (seq if transformer else 1)  # tokens or samples per micro batch
    if t.global_batch is not None:
        accum = max(1, math.ceil(t.global_batch / (t.micro_batch * dp)))
    else:
        accum = 1
        notes.add("no global_batch: one micro batch per GPU per optimizer step (no gradient accumulation)")
    units_per_step_replica = units_per_micro * accum

    # FLOPs per token (transformer) or sample.
    if transformer:
        n_mm = _matmul_params(m)
        qd = (m.heads or 1) * m.n_head_dim
        attn = 12 * (m.layers or 0) * lengths.attn_len * qd  # PaLM appendix B (fwd + bwd, full matrix)
        coeff = 6.0 if t.method == "full" else 4.0
        model_flops = coeff * n_mm + attn
        hw_flops = model_flops
        linear_hw_flops = coeff * n_mm  # everything but the attention core (FP8 speeds up only these)
        if t.activation_checkpointing == "full":
            notes.const(K.FULL_RECOMPUTE_FLOPS)
            hw_flops += 2 * n_mm + attn / 3
            linear_hw_flops += 2 * n_mm
        elif t.activation_checkpointing == "selective":
            hw_flops += attn / 3
        notes.add(
            f"{coeff:g}·N + 12·L·s·h FLOPs per token (N = {n_mm / 1e9:.2f}B matmul params"
            + (", active per token" if m.experts > 1 else "")
            + (", frozen base: no weight-gradient GEMMs" if t.method != "full" else "")
            + ")"
        )
    else:
        model_flops = 3 * (m.flops_per_sample or 0)
        hw_flops = model_flops
        linear_hw_flops = hw_flops
        notes.add("3 × forward FLOPs per training sample (forward + backward)")

    dtype = t.precision
    peak, used_dtype = _peak_flops(gpu, "bf16" if dtype == "fp8" else dtype, notes)
    if peak is None:
        reason = (
            f"{gpu.name} has no published dense {dtype.upper()} (or fallback) peak to estimate speed from"
        )
        return _impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes, mem=mem
        )
    eff = _arch_efficiency(gpu, used_dtype, calibration, notes)
    simt = used_dtype == "fp32"
    if simt:
        eff = notes.const(K.FP32_SIMT_EFFICIENCY)
    if transformer:
        h = (m.hidden or 1) / 1
        h0 = notes.const(K.SIZE_HIDDEN_H0)
        eff *= h / (h + h0)
        t0 = notes.const(K.BATCH_TOKENS_T0)
        eff *= units_per_micro / (units_per_micro + t0)
        if t.method != "full":
            eff *= notes.const(K.LORA_EFFICIENCY)
        if t.quantized_base and t.base_dtype not in K.DEQUANT_BASES:
            eff *= notes.const(K.BASE_SPEED[t.base_dtype])
        eff *= stack.efficiency
    elif not simt:
        notes.const(K.KIND_EFFICIENCY_SOURCE)
        # Non-transformer efficiencies are given for Ampere and scale with the generation's GEMM efficiency.
        eff = K.KIND_EFFICIENCY[m.kind] * eff / K.ARCH_EFFICIENCY["ampere"]
    speed = peak * eff
    if dtype == "fp8":
        if gpu.peak_tflops("fp8"):
            fp8 = notes.const(K.FP8_SPEEDUP)
            # Only the linear layers run in FP8: the attention core (and its recompute) keeps BF16 speed.
            linear_share = linear_hw_flops / hw_flops if hw_flops > 0 else 1.0
            speed /= linear_share / fp8 + (1 - linear_share)
            notes.add(
                f"FP8 speeds up the linear layers ({linear_share:.0%} of the FLOPs) by {fp8:g}×; "
                "the attention core stays BF16"
            )
        else:
            notes.add(f"{gpu.name} has no FP8 tensor cores: time assumes BF16/FP16 speed")

    compute_s = hw_flops * units_per_step_replica / (tp * pp * speed)
    if transformer and t.quantized_base and t.base_dtype in K.DEQUANT_BASES:
        compute_s += _dequant_seconds(w, t, gpu, accum=accum, notes=notes)
    if m.kind == "cnn":
        # Memory roofline: a CNN step also moves its activations through HBM several times.
        bw = _bandwidth(gpu, notes)
        if bw:
            act_b = (m.flops_per_sample or 0) * MEM.ACT_BYTES_PER_FLOP_BY_KIND["cnn"]
            act_b *= 2 if t.precision in ("fp32", "tf32") else 1
            traffic_s = notes.const(K.CNN_TRAIN_TRAFFIC) * act_b * units_per_step_replica / bw
            if traffic_s > compute_s:
                notes.add("CNN step bound by memory traffic (activations), not by convolution FLOPs")
                compute_s = traffic_s
    # Pipeline bubble (p-1)/(m+p-1) of the step.
    if pp > 1:
        if t.pipeline_schedule == "1f1b":
            v = 1
            notes.add("pipeline schedule: plain 1F1B, no interleaved virtual stages (Narayanan et al. 2021)")
        else:
            v = max(1, min(int(notes.const(K.PIPELINE_INTERLEAVE)), (m.layers or pp) // pp))
        bubble = (pp - 1) / (v * accum + pp - 1)
        compute_s /= 1 - bubble
        notes.add(
            f"pipeline bubble (p−1)/(v·m+p−1) = {bubble:.0%} with {accum} micro batches per step, "
            f"{v} interleaved chunks per stage"
        )

    # What the stack adds: launch/hook time per layer per micro batch, waiting on the data loader.
    if transformer and stack.layer_overhead_s:
        compute_s += (
            stack.layer_overhead_s
            * (m.layers or 0)
            / pp
            * accum
            * (1.5 if t.activation_checkpointing == "full" else 1.0)
        )
    compute_s *= 1 + stack.loader_overhead
    # The optimizer step: bandwidth-bound over the local trainable parameters and their states.
    opt_s = 0.0
    bw_mem = gpu.memory_bandwidth_gbs.value
    if bw_mem and stack.counts_optimizer_step:
        trainable_local = (
            m.n_params if t.method == "full" else _lora_params(m, t.lora_rank, t.lora_targets)
        ) / (tp * pp)
        if t.zero_stage >= 1:
            trainable_local /= dp
        per_param = notes.const(K.OPTIMIZER_STEP_BYTES) * (
            0.5 if t.optimizer_kind in ("adamw8bit", "adafactor", "sgd") else 1.0
        )
        opt_s = trainable_local * per_param / (bw_mem * 1e9 * 0.8)
    offload_s = (
        _offload_seconds(w, t, stack, dp=dp, accum=accum, gpn=gpn, notes=notes)
        if t.offload != "none"
        else 0.0
    )
    if offload_s:
        opt_s = 0.0  # the step runs on the CPU, inside offload_s
    fixed_s = stack.step_overhead_s + opt_s + offload_s

    # Tensor-parallel activations all-reduces: 4 per layer per micro batch (fwd 2, bwd 2), not overlapped.
    tp_s = 0.0
    if tp > 1 and transformer:
        link = (
            _intra_node_bytes_per_s(gpu, notes)
            if tp <= gpn
            else _inter_node_bytes_per_s(gpu, gpn, notes, network_gbps) / gpn
        )
        act_bytes = t.micro_batch * seq * (m.hidden or 0) * 2
        tp_s = 4 * (m.layers or 0) / pp * accum * 2 * (tp - 1) / tp * act_bytes / link
        if tp > gpn:
            notes.add("tensor parallelism spans nodes: activations all-reduced over the network")

    # Data-parallel gradient (and FSDP weight) traffic per step.
    dp_s = 0.0
    if dp > 1:
        trainable = m.n_params if t.method == "full" else _lora_params(m, t.lora_rank, t.lora_targets)
        grad_b = 4.0 if t.precision in ("fp32", "tf32") else 2.0
        volume = trainable / (tp * pp) * grad_b
        dp_bytes = 2 * (dp - 1) / dp * volume  # ring all-reduce of the gradients
        if t.zero_stage >= 3:
            # Sharded weights (frozen ones too) are all-gathered for the forward and the backward of every
            # micro batch; gradients are reduce-scattered once per step.
            weight_b = MEM.BASE_BYTES_PER_PARAM[t.base_dtype] if t.quantized_base else min(grad_b, 2.0)
            if t.precision in ("fp32", "tf32"):
                weight_b = 4.0
            gathered = m.n_params / (tp * pp) * weight_b * 2 * accum
            dp_bytes = (dp - 1) / dp * (gathered + volume)
            notes.add(
                "FSDP/ZeRO-3: all weights (frozen ones too) all-gathered for forward and backward of each "
                "micro batch, gradients reduce-scattered once per step"
            )
        bw = _intra_node_bytes_per_s(gpu, notes)
        if nodes > 1:
            bw = min(bw, _inter_node_bytes_per_s(gpu, gpn, notes, network_gbps))
        dp_s = dp_bytes / bw
    overlap = 0.0
    if dp > 1:
        overlap = stack.comm_overlap
        if stack.name == "tuned":
            notes.const(NET.COMM_OVERLAP)
    step_s = max(compute_s, dp_s) + (1 - overlap) * min(compute_s, dp_s) + tp_s + fixed_s

    # Throughput in real tokens (padding is work, not progress).
    units_per_step = units_per_step_replica * dp / lengths.pad_factor
    throughput_total = units_per_step / step_s
    throughput_per_gpu = throughput_total / count

    if transformer:
        if t.tokens is not None:
            total_units = t.tokens * t.epochs
        else:
            total_units = (t.samples or 0) * t.epochs * lengths.real_per_sample
    else:
        total_units = (t.samples if t.samples is not None else (t.tokens or 0)) * t.epochs
    goodput = 1.0
    if count > 1:
        goodput = 1 - notes.const(K.MAX_GOODPUT_LOSS) * min(1.0, math.log(count) / math.log(16384))
    compute_hours = total_units / throughput_total / 3600 / goodput
    hours = compute_hours
    bottleneck = "compute"
    comm_exposed = step_s - compute_s - fixed_s
    if comm_exposed > 0.25 * step_s:
        bottleneck = "communication"
    io_hours = 0.0
    if w.data.dataset_gb > 0:
        rate = notes.const(K.STORAGE_READ_GBS_PER_NODE) * nodes
        io_hours = w.data.dataset_gb * t.epochs / rate / 3600
        if io_hours > compute_hours:
            hours = io_hours
            bottleneck = "io"
    fits = mem.total <= capacity
    if not fits:
        bottleneck = "memory_capacity"
    mfu = model_flops * throughput_per_gpu / (peak * (2 if dtype == "fp8" and gpu.peak_tflops("fp8") else 1))
    return Estimate(
        gpu=gpu.name,
        count=count,
        nodes=nodes,
        fits=fits,
        memory=mem,
        memory_capacity_bytes=capacity,
        throughput_per_gpu=throughput_per_gpu,
        throughput_unit=unit,
        hours=hours,
        mfu=mfu,
        bottleneck=bottleneck,
        assumptions=tuple(notes.items),
        details={
            "step_s": step_s,
            "compute_s": compute_s,
            "data_parallel_comm_s": dp_s,
            "tensor_parallel_comm_s": tp_s,
            "efficiency": eff,
            "data_parallel": float(dp),
            "grad_accumulation": float(accum),
            "io_hours": io_hours,
            "goodput": goodput,
            "s_per_step": step_s / goodput,
            "optimizer_step_s": opt_s,
            "offload_s": offload_s,
            "offloaded_bytes_per_gpu": offloaded,
            "padding_factor": lengths.pad_factor,
        },
    )


# ---------------------------------------------------------------------------------------------
# Inference
# ---------------------------------------------------------------------------------------------


def _weights_bytes_per_param(precision: str, notes: _Notes) -> float:
    if precision == "int4":
        return notes.const(MEM.INT4_BYTES_PER_PARAM)
    return K.BYTES[precision]


def _inference_estimate(
    w: Workload, gpu: GpuSpec, *, count: int, nodes: int, calibration: Calibration | None, notes: _Notes
) -> Estimate:
    inf = w.inference
    assert inf is not None
    m = w.model
    tp = inf.tensor_parallel
    capacity = gpu.memory_gib * GIB
    transformer = m.kind == "transformer"
    unit = "output tokens/s" if transformer else "samples/s"
    if tp > count:
        reason = f"tensor_parallel = {tp} needs {tp} GPUs, got {count}"
        return _impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes
        )
    replicas = count // tp
    if replicas * tp != count:
        notes.add(f"{count - replicas * tp} of {count} GPUs idle: count is not a multiple of tensor_parallel")
    gpn = math.ceil(count / nodes)
    layers = m.layers or 0
    c = inf.concurrency

    wb = _weights_bytes_per_param(inf.weights_precision, notes)
    weights = m.n_params * wb / tp
    kv_heads_local = max(m.n_kv_heads / tp, 1.0)
    kv_b = _weights_bytes_per_param(inf.kv_dtype, notes) if inf.kv_dtype != "int4" else 0.5
    kv_per_token = 2 * layers * kv_heads_local * m.n_head_dim * kv_b if transformer else 0.0
    ctx_max = inf.prompt_tokens + inf.output_tokens
    kv = kv_per_token * ctx_max * c
    if transformer:
        notes.add(
            f"KV cache: 2·L·kv_heads·head_dim·{kv_b:g} B per token ({m.n_kv_heads} KV heads, "
            f"{inf.kv_dtype}), {c} sequences × {ctx_max} tokens per replica"
        )
        chunk = min(c * max(inf.prompt_tokens, 1), 8192)
        acts = chunk * ((m.hidden or 0) * 8 + m.n_ffn * 6) / tp + c * (m.vocab or 0) * 4
    else:
        # Inference keeps one layer's activations at a time: a third of the training figure is generous.
        acts = (m.flops_per_sample or 0) * MEM.ACT_BYTES_PER_FLOP_BY_KIND[m.kind] / 3 * c
    allocated = weights + kv + acts
    overhead = notes.const(MEM.CUDA_CONTEXT_GIB) * GIB + allocated * notes.const(MEM.FRAGMENTATION)
    if tp > 1:
        overhead += notes.const(MEM.NCCL_BUFFERS_GIB) * GIB
    mem = MemoryBreakdown(weights, 0.0, 0.0, acts, kv, overhead)

    dtype = {"int8": "int8", "fp8": "fp8", "int4": "int4"}.get(inf.weights_precision, inf.weights_precision)
    peak, used = _peak_flops(gpu, dtype, notes)
    bw = _bandwidth(gpu, notes)
    if peak is None or bw is None:
        reason = f"{gpu.name} lacks a published {'peak' if peak is None else 'memory bandwidth'} figure"
        return _impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes, mem=mem
        )
    prefill_eff = notes.const(K.PREFILL_EFFICIENCY)
    if calibration is not None and calibration.applies_to(gpu.name):
        frac = calibration.gemm_fraction.get(used) or calibration.gemm_fraction.get("bf16")
        if frac:
            prefill_eff = frac * K.TRAIN_EFF_PER_GEMM_FRACTION.value / 0.67 * 0.8
        if calibration.memory_bandwidth_fraction:
            bw_eff = calibration.memory_bandwidth_fraction * notes.const(K.DECODE_EFF_PER_BANDWIDTH_FRACTION)
            notes.add(f"calibration {calibration.source}: measured memory bandwidth replaces the default")
        else:
            bw_eff = notes.const(K.DECODE_BANDWIDTH_EFFICIENCY)
    else:
        bw_eff = notes.const(K.DECODE_BANDWIDTH_EFFICIENCY)

    if not transformer:
        # Same efficiency as training for this kind (convolutions, norms and data movement, not big GEMMs).
        notes.const(K.KIND_EFFICIENCY_SOURCE)
        arch = K.ARCH_EFFICIENCY.get(gpu.architecture.lower(), K.ARCH_EFFICIENCY_DEFAULT)
        kind_eff = K.KIND_EFFICIENCY[m.kind] * arch / K.ARCH_EFFICIENCY["ampere"]
        if used == "fp32":
            kind_eff = notes.const(K.FP32_SIMT_EFFICIENCY)
        flops = (m.flops_per_sample or 0) * c
        step = max(flops / (peak * kind_eff * tp), weights / (bw * bw_eff))
        thr_replica = c / step
        total = _units_to_serve(inf, per_request=1)
        return _inference_result(
            w,
            gpu,
            count=count,
            nodes=nodes,
            capacity=capacity,
            mem=mem,
            unit=unit,
            thr_total=thr_replica * replicas,
            total_units=total,
            mfu=flops / c * thr_replica * replicas / count / peak,
            bottleneck="compute",
            notes=notes,
            details={},
        )

    n_act = _matmul_params(m)
    qd = (m.heads or 1) * m.n_head_dim
    # Prefill: 2N per prompt token + causal attention.
    p = inf.prompt_tokens
    prefill_flops = 2 * n_act * p + 2 * layers * qd * p * p
    prefill_s = prefill_flops / (tp * peak * prefill_eff)
    # Decode: stream local weights + the KV of every sequence per step; compute for c tokens.
    ctx_avg = p + inf.output_tokens / 2
    step_bytes = weights + kv_per_token * ctx_avg * c
    mem_s = step_bytes / (bw * bw_eff)
    step_flops = (2 * n_act * c + 4 * layers * qd * ctx_avg * c) / tp
    comp_s = step_flops / (peak * prefill_eff)
    overhead_s = notes.const(K.DECODE_STEP_OVERHEAD_S)
    if tp > 1:
        lat = notes.const(K.TP_LAYER_LATENCY_S)
        link = (
            _intra_node_bytes_per_s(gpu, notes)
            if tp <= gpn
            else _inter_node_bytes_per_s(gpu, gpn, notes) / gpn
        )
        overhead_s += 2 * layers * (lat + 2 * (tp - 1) / tp * c * (m.hidden or 0) * 2 / link)
    step_s = max(mem_s, comp_s) + overhead_s
    cohort_s = c * prefill_s + inf.output_tokens * step_s
    thr_replica = c * inf.output_tokens / cohort_s
    bottleneck = "memory_bandwidth" if mem_s >= comp_s else "compute"
    thr_total = thr_replica * replicas
    total_out = _units_to_serve(inf, per_request=inf.output_tokens)
    model_flops_per_out = (2 * n_act * (p + inf.output_tokens)) / inf.output_tokens
    mfu = model_flops_per_out * thr_total / count / peak
    notes.add(
        "decode step = max(weights + KV read at the bandwidth efficiency, 2·N·concurrency FLOPs) + overhead"
    )
    details = {
        "prefill_s": prefill_s,
        "decode_step_s": step_s,
        "decode_memory_s": mem_s,
        "decode_compute_s": comp_s,
        "replicas": float(replicas),
    }
    return _inference_result(
        w,
        gpu,
        count=count,
        nodes=nodes,
        capacity=capacity,
        mem=mem,
        unit=unit,
        thr_total=thr_total,
        total_units=total_out,
        mfu=mfu,
        bottleneck=bottleneck,
        notes=notes,
        details=details,
    )


def _units_to_serve(inf: InferenceSpec, *, per_request: float) -> float:
    """What the whole workload serves: every request's units, or the target rate for its duration."""
    if inf.requests is not None:
        return inf.requests * per_request
    return (inf.target_output_tokens_per_s or 0) * (inf.duration_hours or 0) * 3600


def _inference_result(
    w: Workload,
    gpu: GpuSpec,
    *,
    count: int,
    nodes: int,
    capacity: float,
    mem: MemoryBreakdown,
    unit: str,
    thr_total: float,
    total_units: float,
    mfu: float,
    bottleneck: str,
    notes: _Notes,
    details: dict[str, float],
) -> Estimate:
    inf = w.inference
    assert inf is not None
    meets: bool | None = None
    if inf.requests is not None:
        hours = total_units / thr_total / 3600
    else:
        target = inf.target_output_tokens_per_s or 0
        duration = inf.duration_hours or 0
        meets = thr_total >= target
        hours = duration if meets else duration * target / thr_total
        if not meets:
            notes.add(
                f"serves {thr_total:,.0f} of the {target:,.0f} {unit} target: hours stretched to the total"
            )
    fits = mem.total <= capacity
    if not fits:
        bottleneck = "memory_capacity"
    return Estimate(
        gpu=gpu.name,
        count=count,
        nodes=nodes,
        fits=fits,
        memory=mem,
        memory_capacity_bytes=capacity,
        throughput_per_gpu=thr_total / count,
        throughput_unit=unit,
        hours=hours,
        mfu=mfu,
        bottleneck=bottleneck,
        assumptions=tuple(notes.items),
        meets_target=meets,
        details=details,
    )


def _impossible(
    gpu: GpuSpec,
    *,
    count: int,
    nodes: int,
    capacity: float,
    unit: str,
    reason: str,
    notes: _Notes,
    mem: MemoryBreakdown | None = None,
) -> Estimate:
    notes.add(reason)
    memory = mem or MemoryBreakdown(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if mem is not None:
        notes.add("no speed figure: the fit verdict is on memory alone")
    return Estimate(
        gpu=gpu.name,
        count=count,
        nodes=nodes,
        fits=mem is not None and mem.total <= capacity,
        memory=memory,
        memory_capacity_bytes=capacity,
        throughput_per_gpu=0.0,
        throughput_unit=unit,
        hours=math.inf,
        mfu=0.0,
        bottleneck="memory_capacity" if mem is not None and mem.total > capacity else "compute",
        assumptions=tuple(notes.items),
        infeasible_reason=reason,
    )


def default_nodes(count: int) -> int:
    """The fewest nodes of 8 GPUs that hold `count` GPUs (docs/json.md)."""
    return max(1, math.ceil(count / NET.GPUS_PER_NODE))


def estimate(  # noqa: PLR0917 - the positional (workload, gpu, count, nodes, calibration) is public API
    workload: Workload,
    gpu: GpuSpec,
    count: int = 1,
    nodes: int | None = None,
    calibration: Calibration | None = None,
    network_gbps: float | None = None,
) -> Estimate:
    """Memory per GPU, throughput and time for `workload` on `count` × `gpu` over `nodes` nodes.

    `network_gbps`: the inter-node bandwidth of one node (Gb/s, all NICs), when the instance is known or the
    user gives it; otherwise InfiniBand/EFA for HPC GPUs and a conservative Ethernet default for the rest.
    Uneven layouts (10 GPUs on 4 nodes) are allowed when `nodes` is given.
    """
    if count < 1:
        raise ConfigError(f"GPU count must be at least 1, got {count}", fix="pass --count 1 or more")
    n_nodes = default_nodes(count) if nodes is None else nodes
    if n_nodes < 1 or n_nodes > count:
        raise ConfigError(
            f"{count} GPUs cannot be spread over {n_nodes} nodes",
            fix="give at most one node per GPU (e.g. --count 16 --nodes 2)",
        )
    if network_gbps is not None and not (math.isfinite(network_gbps) and network_gbps > 0):
        raise ConfigError(
            f"network bandwidth must be a positive number of Gb/s, got {network_gbps}",
            fix="pass e.g. --network-gbps 100 for 100 Gigabit Ethernet",
        )
    notes = _Notes()
    if workload.model.preset:
        notes.add(f"model {workload.model.preset}: {workload.model.source}")
    if workload.train is not None:
        est = _train_estimate(
            workload,
            gpu,
            count=count,
            nodes=n_nodes,
            calibration=calibration,
            notes=notes,
            network_gbps=network_gbps,
        )
        stack = default_framework(workload.task, workload.train, workload.model.kind)
    else:
        est = _inference_estimate(
            workload, gpu, count=count, nodes=n_nodes, calibration=calibration, notes=notes
        )
        stack = "inference"
    return _finish(est, workload, stack, notes)


def _finish(est: Estimate, w: Workload, stack_name: str, notes: _Notes) -> Estimate:
    """Add what every estimate carries: the time range, the load-time peak, host RAM and the fit verdict."""
    capacity = est.memory_capacity_bytes
    load_peak = 0.0
    host_ram = 0.0
    t = w.train
    if t is not None:
        stack = S.STACKS[stack_name]
        meta = t.low_cpu_mem_usage if t.low_cpu_mem_usage is not None else stack.meta_init
        weights_b = w.model.n_params * MEM.BASE_BYTES_PER_PARAM.get(t.base_dtype, 2.0)
        gpn = math.ceil(est.count / est.nodes)
        if t.zero_stage >= 3 and t.low_cpu_mem_usage is False:
            load_peak = (
                weights_b / (t.tensor_parallel * t.pipeline_parallel) + MEM.CUDA_CONTEXT_GIB.value * GIB
            )
            notes.add(
                "low_cpu_mem_usage = false with FSDP/ZeRO-3: every rank holds the full model on its GPU "
                f"before sharding ({load_peak / GIB:.1f} GiB peak while loading); meta-device init or "
                "low_cpu_mem_usage = true avoids it"
            )
        copies = 1 if meta else gpn
        host_ram = copies * weights_b + gpn * notes.const(MEM.HOST_RAM_PER_RANK_GIB) * GIB
        host_ram += gpn * est.details.get("offloaded_bytes_per_gpu", 0.0)
        notes.add(
            f"host RAM per node ≈ {host_ram / GIB:.0f} GiB: {copies} full copy of the weights while loading "
            + ("(meta-device / rank-0 loading)" if meta else f"(every one of the {gpn} ranks loads its own)")
            + f" + {MEM.HOST_RAM_PER_RANK_GIB.value:g} GiB per rank"
        )
    need = max(est.memory.total, load_peak)
    margin = notes.const(MEM.TIGHT_MARGIN)
    if capacity <= 0 or (est.infeasible_reason is not None and est.memory.total <= 0):
        verdict = "unknown"
    elif need > capacity:
        verdict = "does_not_fit"
    elif need > capacity * (1 - margin):
        verdict = "tight"
        notes.add(
            f"need {need / GIB:.1f} GiB is within {margin:.0%} of the {capacity / GIB:.1f} GiB capacity: "
            "fragmentation decides, expect an out-of-memory error (lower micro_batch or seq_len)"
        )
    else:
        verdict = "fits"
    fits = verdict == "fits"
    bottleneck = est.bottleneck
    if not fits and bottleneck != "memory_capacity" and est.infeasible_reason is None:
        bottleneck = "memory_capacity"
    low_mult, high_mult = S.HOURS_RANGE.get(stack_name, S.HOURS_RANGE_POOLED)
    src = "its own" if stack_name in S.HOURS_RANGE else "the pooled"
    notes.const(S.RANGE_SOURCE)
    notes.add(f"range {low_mult:.2f}-{high_mult:.2f}× the estimate from {src} residual spread ({stack_name})")
    hours_low = est.hours * min(1.0 - S.RANGE_MIN_HALF_WIDTH, low_mult)
    hours_high = est.hours * max(1.0 + S.RANGE_MIN_HALF_WIDTH, high_mult)
    return replace(
        est,
        fits=fits,
        fit_verdict=verdict,
        bottleneck=bottleneck,
        load_peak_bytes=load_peak,
        host_ram_bytes=host_ram,
        hours_low=hours_low,
        hours_high=hours_high,
        stack=stack_name,
        range_source=src,
        assumptions=tuple(notes.items),
    )


__all__ = ["default_nodes", "estimate"]
