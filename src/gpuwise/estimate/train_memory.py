"""Peak GPU memory of a training job, per GPU: model states (full or LoRA, sharded by ZeRO/FSDP), what CPU
offload moves to host RAM, DeepSpeed's own buffers, activations and the runtime's overhead.

Pure: the ZeRO paper's accounting for model states, Korthikanti et al. 2022 for transformer activations;
every constant is cited in memory_constants.py and named in the notes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.encdec_train import encdec_layer_activations
from gpuwise.estimate.model_math import act_bytes_per_token_layer, lora_params
from gpuwise.estimate.models import MemoryBreakdown
from gpuwise.estimate.notes import Notes
from gpuwise.estimate.stacks import Stack
from gpuwise.locale import _
from gpuwise.units import GIB
from gpuwise.workload.spec import ModelSpec, TrainSpec, Workload


@dataclass(frozen=True)
class _States:
    """Model-state bytes per GPU before offload, and what is trained."""

    weights: float
    grads: float
    optimizer: float
    trainable: float  # trainable parameters of the whole model
    adapters: float  # LoRA adapter parameters per tensor/pipeline shard; 0 for full training


def train_memory(
    w: Workload,
    t: TrainSpec,
    *,
    dp: int,
    tp: int,
    pp: int,
    count: int,
    stack: Stack,
    seq_mem: float,
    notes: Notes,
) -> tuple[MemoryBreakdown, float]:
    """Peak GPU memory per GPU, and the bytes per GPU that CPU offload keeps in host RAM instead."""
    m = w.arch
    shard = tp * pp
    compute_b = K.BYTES[t.precision] if t.precision != "fp8" else 2.0
    opt_state = _optimizer_state_bytes(t, notes)
    states = (_full_states if t.method == "full" else _lora_states)(
        m, t, dp=dp, shard=shard, compute_b=compute_b, opt_state=opt_state, notes=notes
    )
    if t.method != "full":
        states = _with_kbit_upcast(m, t, states, stack=stack, dp=dp, shard=shard, notes=notes)
    trainable_local = states.trainable / shard / (dp if t.zero_stage >= 1 else 1)
    weights, grads, optimizer, offloaded = _offload(
        m, t, states, shard=shard, compute_b=compute_b, notes=notes
    )
    if stack.name == "deepspeed" and t.zero_stage >= 1:
        grads = _with_deepspeed_buffers(grads, t, trainable_local, notes)
    if m.kind == "transformer":
        acts = _transformer_activations(m, t, tp=tp, pp=pp, seq_mem=seq_mem, stack=stack, notes=notes)
    else:
        acts = _per_sample_activations(m, t, notes)
    allocated = weights + grads + optimizer + acts
    overhead = _runtime_overhead(allocated, stack, count, notes)
    return MemoryBreakdown(weights, grads, optimizer, acts, 0.0, overhead), offloaded


def _optimizer_state_bytes(t: TrainSpec, notes: Notes) -> float:
    """Optimizer state bytes per trainable parameter, beyond any fp32 master copy."""
    opt_state = MEM.OPTIMIZER_STATE_BYTES[t.optimizer_kind]
    notes.const(MEM.OPTIMIZER_SOURCES[t.optimizer_kind])
    if t.pure_low_precision and t.precision not in ("fp32", "tf32"):
        opt_state = opt_state / 2 if t.optimizer_kind in ("adamw", "sgd") else opt_state
        notes.add(
            _(
                "pure low precision: weights, gradients and optimizer states in the compute dtype, "
                "no fp32 master"
            )
        )
    return opt_state


def _full_states(
    m: ModelSpec, t: TrainSpec, *, dp: int, shard: int, compute_b: float, opt_state: float, notes: Notes
) -> _States:
    """Full training: every parameter has weights, gradients, optimizer states (and an fp32 master copy in
    mixed precision), each sharded over data parallelism by the ZeRO stage."""
    n = m.n_params
    zero = t.zero_stage
    mixed = t.precision not in ("fp32", "tf32") and not t.pure_low_precision
    weights = n / shard * compute_b
    grads = n / shard * compute_b
    optimizer = n / shard * (opt_state + (MEM.MASTER_WEIGHT_BYTES if mixed else 0.0))
    if mixed:
        per_param = 2 * compute_b + opt_state + MEM.MASTER_WEIGHT_BYTES
        notes.add(
            _(
                "mixed precision: {precision} weights and gradients + fp32 master weights and "
                "{optimizer} states = {per_param} B/param before sharding (ZeRO paper accounting)"
            ).format(precision=t.precision, optimizer=t.optimizer, per_param=f"{per_param:g}")
        )
    if t.precision == "fp8":
        notes.add(_("FP8 training keeps BF16 weights (Transformer Engine casts per GEMM)"))
    if zero >= 1:
        optimizer /= dp
    if zero >= 2:
        grads /= dp
    if zero >= 3:
        weights /= dp
        # FSDP gathers the current and the prefetched layer's full weights.
        weights += 2 * n / shard / max(m.layers or 1, 1) * compute_b
    return _States(weights, grads, optimizer, trainable=n, adapters=0.0)


def _lora_states(
    m: ModelSpec, t: TrainSpec, *, dp: int, shard: int, compute_b: float, opt_state: float, notes: Notes
) -> _States:
    """LoRA: a frozen base (16-bit or quantized) plus fp32 adapters with their gradients and states."""
    n = m.n_params
    zero = t.zero_stage
    lora = lora_params(m, t.lora_rank, t.lora_targets) / shard
    base_dtype = t.base_dtype
    if t.quantized_base:
        if base_dtype == "nf4":
            notes.const(MEM.NF4_BYTES_PER_PARAM)
        qb = MEM.BASE_BYTES_PER_PARAM[base_dtype]
        emb = m.embedding_params * (1 if m.tied_embeddings else 2)
        base = ((n - emb) * qb + emb * 2) / shard
        notes.add(
            _(
                "{dtype} base ({bytes} B/param): linear layers quantized, embeddings and output head "
                "kept in 16-bit (bitsandbytes / GPTQ / AWQ)"
            ).format(dtype=base_dtype, bytes=f"{qb:.3g}")
        )
    else:
        base = n / shard * MEM.BASE_BYTES_PER_PARAM.get(base_dtype, compute_b)
    if zero >= 3 and base_dtype in ("int8", "gptq-4bit", "awq-4bit"):
        # FSDP/ZeRO-3 flatten and shard floating-point tensors only: an integer-stored base (LLM.int8
        # Int8Params, GPTQ/AWQ packed int32) stays whole on every GPU. NF4 shards since bitsandbytes'
        # bnb_4bit_quant_storage (Answer.AI's FSDP-QLoRA, 2024).
        notes.add(
            _("{dtype} base is integer-stored: FSDP/ZeRO-3 cannot shard it (a full copy per GPU)").format(
                dtype=base_dtype
            )
        )
    elif zero >= 3:
        base /= dp
    where = _("all attention and MLP") if t.lora_targets == "all" else _("the attention (q, k, v, o)")
    notes.add(
        _(
            "LoRA rank {rank} on {where} linear layers: {params}M trainable params in fp32 with "
            "{optimizer} states"
        ).format(rank=t.lora_rank, where=where, params=f"{lora * shard / 1e6:.0f}", optimizer=t.optimizer)
    )
    return _States(base + lora * 4, lora * 4, lora * opt_state, trainable=lora * shard, adapters=lora)


def _with_kbit_upcast(
    m: ModelSpec, t: TrainSpec, s: _States, *, stack: Stack, dp: int, shard: int, notes: Notes
) -> _States:
    """States plus the fp32 copy of the embedding and output head that peft's
    prepare_model_for_kbit_training makes of an NF4 base, where the stack calls it and nothing casts them
    back (fp16 runs; see the constant)."""
    if not (t.base_dtype == "nf4" and t.precision == "fp16" and stack.name in MEM.KBIT_FP32_UPCAST_STACKS):
        return s
    emb = m.embedding_params * (1 if m.tied_embeddings else 2)
    extra = emb * notes.const(MEM.KBIT_FP32_UPCAST_BYTES) / shard / (dp if t.zero_stage >= 3 else 1)
    notes.add(
        _(
            "peft's prepare_model_for_kbit_training keeps the embedding and output head in fp32 on an nf4 "
            "base under fp16: +{gib} GiB"
        ).format(gib=f"{extra / GIB:.2f}")
    )
    return replace(s, weights=s.weights + extra)


def _offload(
    m: ModelSpec, t: TrainSpec, s: _States, *, shard: int, compute_b: float, notes: Notes
) -> tuple[float, float, float, float]:
    """(weights, gradients, optimizer, offloaded) bytes per GPU once CPU offload moves its share to host RAM.

    "optimizer" moves the fp32 master and optimizer states; "optimizer+params" also the parameters and
    gradients, keeping two layers' gathered weights on the GPU.
    """
    if t.offload == "none":
        return s.weights, s.grads, s.optimizer, 0.0
    weights, grads = s.weights, s.grads
    offloaded = s.optimizer
    what = _("fp32 master weights and optimizer states")
    if t.offload == "optimizer+params":
        window = 2 * m.n_params / shard / max(m.layers or 1, 1) * compute_b
        if t.method == "full":
            offloaded += weights + grads - window
            weights, grads = window, window
        else:
            offloaded += weights - window
            weights = window + s.adapters * 4
        what += _(", parameters and gradients (two layers' weights gathered on the GPU at a time)")
    notes.add(
        _("CPU offload: {what} live in host RAM ({gib} GiB per GPU)").format(
            what=what, gib=f"{offloaded / GIB:.1f}"
        )
    )
    return weights, grads, 0.0, offloaded


def _with_deepspeed_buffers(grads: float, t: TrainSpec, trainable_local: float, notes: Notes) -> float:
    """Gradient bytes plus what DeepSpeed's ZeRO engine adds and FSDP does not: an fp32 gradient partition
    for the step (on the CPU with ZeRO-Offload) and its communication buckets."""
    zero = t.zero_stage
    if t.offload == "none":
        part = trainable_local if zero < 3 else min(trainable_local, MEM.DEEPSPEED_SUBGROUP_ELEMENTS)
        grads += part * notes.const(MEM.DEEPSPEED_FP32_GRAD_BYTES)
    buckets = (2 if zero < 3 else 1) * notes.const(MEM.DEEPSPEED_BUCKET_BYTES)
    grads += buckets
    notes.add(
        _(
            "DeepSpeed ZeRO-{stage}: fp32 gradient partition for the optimizer step{where} and {gb} GB of "
            "communication buckets at DeepSpeed's defaults"
        ).format(
            stage=zero,
            where=_(" (on the CPU with offload)") if t.offload != "none" else "",
            gb=f"{buckets / 1e9:g}",
        )
    )
    return grads


def _transformer_activations(
    m: ModelSpec, t: TrainSpec, *, tp: int, pp: int, seq_mem: float, stack: Stack, notes: Notes
) -> float:
    """Activation bytes per GPU at the longest batch: the layers, the loss on the logits, and one
    dequantized weight matrix of a quantized base."""
    seq = max(1, round(seq_mem))
    tokens = t.micro_batch * seq
    if m.encoder_layers is not None:  # T5- and Whisper-style: two stacks at their own lengths
        acts = encdec_layer_activations(m, t, tp=tp, seq=seq, notes=notes)
    else:
        acts = _layer_activations(m, t, tp=tp, pp=pp, seq=seq, tokens=tokens, notes=notes)
    logits, loss = _loss_activations(m, t, tokens=tokens, tp=tp, stack=stack, notes=notes)
    acts += logits
    if t.precision in ("fp32", "tf32"):
        acts *= 2
    acts += loss
    if t.quantized_base:
        acts += 2 * (m.hidden or 0) * m.n_ffn * 2 / tp  # one dequantized BF16 weight matrix at a time
    if t.base_dtype == "nf4" and m.encoder_layers is None and stack.name != "unsloth":  # own LoRA kernels
        _note_old_bitsandbytes_inputs(m, t, tp=tp, tokens=tokens, notes=notes)
    return acts


def _note_old_bitsandbytes_inputs(m: ModelSpec, t: TrainSpec, *, tp: int, tokens: int, notes: Notes) -> None:
    """Name, without charging it, what an NF4 base kept with bitsandbytes before 0.43.2.

    Until bitsandbytes PR #1270 (in 0.43.2, July 2024) MatMul4Bit saved its input for the backward whenever
    that input needed a gradient, though the backward never read it (the weight is frozen); a frozen 16-bit
    linear keeps no input (torch saves it only for the weight's gradient). The inputs of the four frozen
    linears per layer: the q/k/v input, the attention output, the MLP input, the down projection's input.
    Current releases do not keep them, so the figure is a note for pinned environments, not a charge: on
    LitGPT's published LoRA/QLoRA pairs (2023-24) the LoRA-to-QLoRA step is short of the weight saving by
    about this much (docs/accuracy.md). Under full checkpointing only one layer is live: negligible.
    """
    if t.activation_checkpointing == "full":
        return
    h, qd = m.hidden or 0, (m.heads or 1) * m.n_head_dim
    per_token_layer = 2 * h + 2 * qd + 2 * h + 2 * m.n_ffn * m.experts_per_token
    elem = 2 if t.precision in ("fp32", "tf32") else 1  # bytes above are 16-bit
    extra = (m.layers or 1) * per_token_layer * elem * tokens / tp
    notes.add(
        _(
            "bitsandbytes before 0.43.2 (July 2024) also kept the input of every 4-bit linear layer for the "
            "backward: +{gib} GiB with such a version (not included; current versions do not keep them)"
        ).format(gib=f"{extra / GIB:.2f}")
    )


def _layer_activations(
    m: ModelSpec, t: TrainSpec, *, tp: int, pp: int, seq: int, tokens: int, notes: Notes
) -> float:
    """16-bit activations the transformer layers keep for the backward, by checkpointing mode."""
    layers = m.layers or 1
    linear, quad = act_bytes_per_token_layer(m, t, seq, tp)
    notes.const(MEM.ACTIVATIONS_SOURCE)
    # 1F1B pipeline: the first stage holds pp micro batches of L/pp layers = L layers' worth.
    layer_count = layers / pp * min(pp, 10**9)
    if t.activation_checkpointing == "full":
        per_layer = 2 * (m.hidden or 0) / tp
        acts = layer_count * per_layer * tokens + (linear + quad) * tokens
        notes.add(
            _("full activation checkpointing: 2·s·b·h bytes kept per layer, one layer recomputed at a time")
        )
    elif t.activation_checkpointing == "selective":
        acts = layer_count * linear * tokens
        notes.add(_("selective checkpointing: attention scores recomputed (Korthikanti et al. 2022 §4.2)"))
    else:
        acts = layer_count * (linear + quad) * tokens
    if t.attention == "flash" and t.activation_checkpointing != "selective":
        notes.add(_("flash attention: no s² attention matrix stored"))
    if t.fused_kernels and m.gated_mlp and t.activation_checkpointing != "full":
        # The fused SwiGLU recomputes silu(gate) in the backward: 2·ffn bytes per token per layer fewer.
        acts -= layer_count * 2 * m.n_ffn * m.experts_per_token / tp * tokens
    return acts


def _loss_activations(
    m: ModelSpec, t: TrainSpec, *, tokens: int, tp: int, stack: Stack, notes: Notes
) -> tuple[float, float]:
    """(logit bytes that double with fp32 training, loss bytes that already hold their fp32 copies)."""
    if m.vocab and t.fused_kernels:
        lb = notes.const(MEM.FUSED_LOSS_BYTES_PER_ELEMENT)
        notes.add(_("fused kernels: chunked cross-entropy on the 16-bit logits, SwiGLU recomputed"))
        return 0.0, tokens * m.vocab * lb / tp
    if m.vocab and stack.hf_loss:
        # Counted after the fp32 doubling: the figure already holds the fp32 copies.
        lb = notes.const(MEM.HF_LOSS_BYTES_PER_ELEMENT)
        return 0.0, tokens * m.vocab * lb / tp
    if m.vocab:
        lb = notes.const(MEM.LOGITS_BYTES_PER_ELEMENT)
        return tokens * m.vocab * lb / tp, 0.0
    return 0.0, 0.0


def _per_sample_activations(m: ModelSpec, t: TrainSpec, notes: Notes) -> float:
    """Activations of a model without a per-layer formula (CNN, diffusion, generic): bytes per FLOP of a
    sample, reduced by checkpointing."""
    notes.const(MEM.ACT_BYTES_PER_FLOP)
    per_flop = MEM.ACT_BYTES_PER_FLOP_BY_KIND[m.kind]
    keep = MEM.NON_TRANSFORMER_CHECKPOINT_KEEP[t.activation_checkpointing]
    acts = (m.flops_per_sample or 0) * per_flop * t.micro_batch * keep
    if keep < 1:
        mode = t.activation_checkpointing
        notes.add(
            _("{mode} checkpointing keeps ~{share} of activations (Chen et al. 2016)").format(
                mode=mode, share=f"{keep:.0%}"
            )
        )
    if t.precision in ("fp32", "tf32"):
        acts *= 2
    return acts


def _runtime_overhead(allocated: float, stack: Stack, count: int, notes: Notes) -> float:
    """CUDA context, the caching allocator's fragmentation for this stack, and NCCL buffers when multi-GPU."""
    frag = stack.fragmentation
    notes.add(
        _(
            "allocator_fragmentation = {frag} × allocated for the {stack} stack (PyTorch caching allocator: "
            "reserved exceeds allocated by ~5% with fixed shapes, 8-15% with variable-length batches, as "
            "torch.cuda.memory_summary reports in user threads)"
        ).format(frag=f"{frag:g}", stack=stack.name)
    )
    overhead = notes.const(MEM.CUDA_CONTEXT_GIB) * GIB + allocated * frag
    if count > 1:
        overhead += notes.const(MEM.NCCL_BUFFERS_GIB) * GIB
    return overhead
