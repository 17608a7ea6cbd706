"""Compute time of one training step: FLOPs per token, the share of peak the stack reaches, FP8, and what
adds to the GEMMs (4-bit dequantization, a CNN's memory traffic, the pipeline bubble, the stack's per-layer
and data-loader time).

Pure; every constant is cited in constants.py or stacks.py and named in the notes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.encdec_train import encoder_positions, layout_note, sample_flops
from gpuwise.estimate.hardware import arch_efficiency, bandwidth
from gpuwise.estimate.lengths import Lengths
from gpuwise.estimate.model_math import matmul_params
from gpuwise.estimate.notes import Notes
from gpuwise.estimate.stacks import Stack
from gpuwise.locale import _
from gpuwise.workload.spec import ModelSpec, TrainSpec, Workload


@dataclass(frozen=True)
class Flops:
    """FLOPs per token (transformer) or sample (other kinds) of one training pass."""

    model: float  # what the model needs: the figure MFU counts
    hardware: float  # what the GPUs run, recomputation included
    linear: float  # the hardware FLOPs outside the attention core (FP8 speeds up only these)


def flops_per_unit(m: ModelSpec, t: TrainSpec, lengths: Lengths, notes: Notes) -> Flops:
    """6·N (4·N with a frozen base) + the attention core per token, plus what recomputation adds."""
    if m.kind != "transformer":
        return _per_sample_flops(m, t, notes)
    if m.encoder_layers is not None:
        return _encdec_flops(m, t, lengths, notes)
    n_mm = matmul_params(m)
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
        _("{coeff}·N + 12·L·s·h FLOPs per token (N = {params}B matmul params{active}{frozen})").format(
            coeff=f"{coeff:g}",
            params=f"{n_mm / 1e9:.2f}",
            active=_(", active per token") if m.experts > 1 else "",
            frozen=_(", frozen base: no weight-gradient GEMMs") if t.method != "full" else "",
        )
    )
    return Flops(model_flops, hw_flops, linear_hw_flops)


def _per_sample_flops(m: ModelSpec, t: TrainSpec, notes: Notes) -> Flops:
    """A model without a per-layer formula (CNN, generic, a diffusion model given by its FLOPs): forward +
    backward = 3 × forward per sample, plus the forward passes checkpointing reruns in the backward."""
    forward = m.flops_per_sample or 0
    model_flops = 3 * forward
    notes.add(_("3 × forward FLOPs per training sample (forward + backward)"))
    reruns = K.NON_TRANSFORMER_RECOMPUTE[t.activation_checkpointing]
    hw_flops = model_flops + reruns * forward
    if reruns:
        notes.const(K.NON_TRANSFORMER_RECOMPUTE_SOURCE)
        notes.add(
            _(
                "{mode} checkpointing reruns {forwards} forward pass per sample in the backward: {factor}× "
                "the training FLOPs{traffic}"
            ).format(
                mode=t.activation_checkpointing,
                forwards=f"{reruns:g}",
                factor=f"{hw_flops / model_flops:.2f}" if model_flops else "1",
                traffic=_(" and activation traffic") if m.kind == "cnn" else "",
            )
        )
    return Flops(model_flops, hw_flops, hw_flops)


def _encdec_flops(m: ModelSpec, t: TrainSpec, lengths: Lengths, notes: Notes) -> Flops:
    """An encoder-decoder sample's FLOPs (encdec_train.py) per decoder token of a padded micro batch."""
    dec_len = lengths.batch_len
    per_sample = sample_flops(m, t, dec_len, lengths.attn_len)
    layout_note(m, t, dec_len, per_sample, notes)
    mm, attn = per_sample.matmul / dec_len, per_sample.attention / dec_len
    front = per_sample.front / dec_len
    model_flops = mm + attn + front
    hw_flops, linear = model_flops, mm
    coeff = 6.0 if t.method == "full" else 4.0
    if t.activation_checkpointing == "full":
        notes.const(K.FULL_RECOMPUTE_FLOPS)
        hw_flops += 2 / coeff * (mm + front) + attn / 3  # one more forward of every layer
        linear += 2 / coeff * mm
    elif t.activation_checkpointing == "selective":
        hw_flops += attn / 3
    return Flops(model_flops, hw_flops, linear)


def efficiency(
    gpu: GpuSpec,
    m: ModelSpec,
    t: TrainSpec,
    stack: Stack,
    *,
    used_dtype: str,
    units_per_micro: float,
    calibration: Calibration | None,
    notes: Notes,
) -> float:
    """Share of the dense peak a step reaches: the GPU's GEMM efficiency, scaled for a narrow model, a
    small micro batch, LoRA, an int8 base and the stack (transformers), or by model kind (others)."""
    eff = arch_efficiency(gpu, used_dtype, calibration, notes)
    simt = used_dtype == "fp32"
    if simt:
        eff = notes.const(K.FP32_SIMT_EFFICIENCY)
    if m.kind == "transformer":
        h = (m.hidden or 1) / 1
        h0 = notes.const(K.SIZE_HIDDEN_H0)
        eff *= h / (h + h0)
        t0 = notes.const(K.BATCH_TOKENS_T0)
        if m.encoder_layers is not None:
            # The encoder's GEMMs see micro_batch × encoder positions rows, not the decoder tokens.
            units_per_micro += t.micro_batch * encoder_positions(m, t)
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
    return eff


def fp8_speed(speed: float, gpu: GpuSpec, flops: Flops, notes: Notes) -> float:
    """FLOP/s of an FP8 step from its BF16 speed: only the linear layers run faster (Amdahl)."""
    if not gpu.peak_tflops("fp8"):
        notes.add(_("{gpu} has no FP8 tensor cores: time assumes BF16/FP16 speed").format(gpu=gpu.name))
        return speed
    fp8 = notes.const(K.FP8_SPEEDUP)
    # Only the linear layers run in FP8: the attention core (and its recompute) keeps BF16 speed.
    linear_share = flops.linear / flops.hardware if flops.hardware > 0 else 1.0
    speed /= linear_share / fp8 + (1 - linear_share)
    notes.add(
        f"FP8 speeds up the linear layers ({linear_share:.0%} of the FLOPs) by {fp8:g}×; "
        "the attention core stays BF16"
    )
    return speed


def compute_seconds(
    w: Workload,
    t: TrainSpec,
    gpu: GpuSpec,
    stack: Stack,
    *,
    flops: Flops,
    speed: float,
    units_per_step: float,
    accum: int,
    notes: Notes,
) -> float:
    """Seconds of compute per optimizer step for one data-parallel replica (`units_per_step` tokens or
    samples), with everything that runs in line with the GEMMs."""
    m = w.arch
    tp, pp = t.tensor_parallel, t.pipeline_parallel
    transformer = m.kind == "transformer"
    compute_s = flops.hardware * units_per_step / (tp * pp * speed)
    if transformer and t.quantized_base and t.base_dtype in K.DEQUANT_BASES:
        compute_s += dequant_seconds(w, t, gpu, accum=accum, notes=notes)
    if m.kind == "cnn":
        compute_s = _cnn_traffic_bound(
            compute_s, m, t, gpu, flops, units_per_step=units_per_step, notes=notes
        )
    if pp > 1:
        compute_s /= 1 - _pipeline_bubble(m, t, accum=accum, notes=notes)
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
    return compute_s


def dequant_seconds(w: Workload, t: TrainSpec, gpu: GpuSpec, *, accum: int, notes: Notes) -> float:
    """Seconds per optimizer step spent dequantizing a 4-bit base (NF4, GPTQ, AWQ) to 16 bits.

    bitsandbytes (and the GPTQ/AWQ training paths) dequantize each whole weight matrix before a 16-bit GEMM,
    in the forward, in the backward's input-gradient GEMM and again in a recomputed forward: a cost per
    micro batch that does not shrink with fewer tokens, paced by memory bandwidth. FSDP/ZeRO-3 gather the
    full layer first, so every GPU dequantizes the whole (tensor/pipeline-local) base.
    """
    m = w.arch
    bw = bandwidth(gpu, notes)
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


def _cnn_traffic_bound(
    compute_s: float,
    m: ModelSpec,
    t: TrainSpec,
    gpu: GpuSpec,
    flops: Flops,
    *,
    units_per_step: float,
    notes: Notes,
) -> float:
    """Memory roofline: a CNN step also moves its activations through HBM several times.

    A forward that checkpointing reruns moves its activations again: the traffic grows by the factor the
    FLOPs do (hardware ÷ model), the forward taken as a third of a step's traffic as it is of its FLOPs (the
    backward reads the saved activations and the incoming gradient and writes the outgoing one, once for each
    of its two convolutions)."""
    bw = bandwidth(gpu, notes)
    if not bw:
        return compute_s
    act_b = (m.flops_per_sample or 0) * MEM.ACT_BYTES_PER_FLOP_BY_KIND["cnn"]
    act_b *= 2 if t.precision in ("fp32", "tf32") else 1
    rerun = flops.hardware / flops.model if flops.model else 1.0
    traffic_s = notes.const(K.CNN_TRAIN_TRAFFIC) * act_b * units_per_step * rerun / bw
    if traffic_s > compute_s:
        notes.add(_("CNN step bound by memory traffic (activations), not by convolution FLOPs"))
        return traffic_s
    return compute_s


def _pipeline_bubble(m: ModelSpec, t: TrainSpec, *, accum: int, notes: Notes) -> float:
    """Idle share (p-1)/(v·m+p-1) of a pipeline-parallel step, v interleaved chunks per stage."""
    pp = t.pipeline_parallel
    if t.pipeline_schedule == "1f1b":
        v = 1
        notes.add("pipeline schedule: plain 1F1B, no interleaved virtual stages (Narayanan et al. 2021)")
    else:
        v = max(1, min(int(notes.const(K.PIPELINE_INTERLEAVE)), (m.layers or pp) // pp))
    bubble = (pp - 1) / (v * accum + pp - 1)
    notes.add(
        f"pipeline bubble (p−1)/(v·m+p−1) = {bubble:.0%} with {accum} micro batches per step, "
        f"{v} interleaved chunks per stage"
    )
    return bubble
