"""Batch inference of encoder-decoder models (T5-style text, Whisper-style speech): memory per GPU, time and
the real-time factor.

Each request (a text prompt, or one window of audio) runs the encoder once over its input (for Whisper: the
convolutional front end over 3,000 mel frames, then 1,500 positions), projects the encoder output into the
decoder's cross-attention keys and values once, then decodes its output tokens. A replica serves batches of
`concurrency` requests: the encoder pass is compute-bound (c × 1,500 positions of GEMMs); each decode step
streams the decoder's weights and every sequence's self- and cross-attention KV cache (the cross cache,
2·layers·d·1,500 values per window, outweighs the weights from a batch of a few windows), or is held up by
eager PyTorch's per-operator CPU time, whichever is longer. Hugging Face's pipeline batches statically: a
batch decodes as many steps as its outputs need (output_tokens is that figure, not the mean).

Pure: data in, an `Estimate` out. Training of encoder-decoder models is still estimated as one stack of
`layers` (estimate/train.py). Must not import the CLI, the planner or the catalog loaders.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import constants as K  # noqa: N812 - the constants table
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.constants import Constant
from gpuwise.estimate.hardware import bandwidth, peak_flops
from gpuwise.estimate.infeasible import impossible
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.estimate.notes import Notes
from gpuwise.locale import _
from gpuwise.units import GIB
from gpuwise.workload.spec import InferenceSpec, ModelSpec, Workload
from gpuwise.workload.speech import is_speech, windows

EAGER_OP_OVERHEAD_S = Constant(
    "eager_op_overhead_s",
    10e-6,
    "s of CPU time per PyTorch operator",
    "eager PyTorch dispatch + kernel launch is on the order of 10 µs per operator (H. He, 'Making Deep "
    "Learning Go Brrrr From First Principles', 2022, overhead section)",
)
OPS_PER_DECODER_LAYER = Constant(
    "ops_per_decoder_layer",
    50,
    "dispatches per decoder layer per step",
    "gpuwise's count of one step of an HF WhisperDecoderLayer (T5 blocks are alike): self-attention 19 "
    "operators (norm, q/k/v, scale, 6 view/transposes, 2 cache concats, attention, 2 reshapes, o, dropout, "
    "add), cross-attention 11, MLP 7, plus 13 nn.Module calls",
)
OPS_PER_STEP = Constant(
    "ops_per_decode_step",
    20,
    "operators per step outside the layers",
    "embedding + positions, final norm, output head, logits processors, argmax and stopping check in HF "
    "generate (gpuwise's count)",
)


@dataclass(frozen=True)
class EncDecShape:
    """The model split into its two stacks: matmul parameters and the sizes the FLOP and byte counts use."""

    enc_layers: int
    dec_layers: int
    hidden: int
    qd: int  # query width: heads × head_dim
    kvd: int  # key/value width: kv_heads × head_dim
    enc_params: float  # encoder matmul parameters (per position)
    dec_step_params: float  # decoder matmul parameters per output token (output head included)
    dec_weight_params: float  # decoder parameters a decode step reads (embedding and head included)
    front_flops: float  # convolutional front end per input (speech), FLOPs
    enc_positions: int  # encoder positions per input

    def encode_flops(self) -> float:
        """One input through the front end and the encoder, plus its cross-attention K/V projections."""
        s = self.enc_positions
        attn = 4 * self.enc_layers * s * s * self.qd  # QKᵀ and AV, bidirectional
        cross_kv = 2 * self.dec_layers * 2 * self.hidden * self.kvd * s
        return self.front_flops + 2 * self.enc_params * s + attn + cross_kv

    def step_flops(self, ctx: float) -> float:
        """One output token of one sequence: decoder GEMMs, self-attention over `ctx`, cross-attention."""
        return 2 * self.dec_step_params + 4 * self.dec_layers * self.qd * (ctx + self.enc_positions)

    def kv_bytes(self, ctx: float, kv_b: float) -> tuple[float, float]:
        """(self-attention, cross-attention) KV bytes of one sequence at `ctx` decoder tokens."""
        per_pos = 2 * self.dec_layers * self.kvd * kv_b
        return per_pos * ctx, per_pos * self.enc_positions


def shape_of(m: ModelSpec, enc_positions: int) -> EncDecShape:
    """Split `m`'s parameters between encoder and decoder in the ratio of their layers' matrices (a decoder
    layer adds cross-attention); embeddings and the speech front end are counted apart."""
    h, hd = m.hidden or 0, m.n_head_dim
    qd, kvd = (m.heads or 1) * hd, m.n_kv_heads * hd
    enc_l = m.encoder_layers or 0
    dec_l = max((m.layers or 0) - enc_l, 1)
    attn = 2 * h * qd + 2 * h * kvd
    mlp = (3 if m.gated_mlp else 2) * h * m.n_ffn
    enc_struct, dec_struct = enc_l * (attn + mlp), dec_l * (2 * attn + mlp)
    emb = float((m.vocab or 0) * h)
    mels = m.mel_bins or 0
    front_params = float(3 * mels * h + 3 * h * h) if mels else 0.0
    embeddings = emb * (1 if m.tied_embeddings else 2)
    body = max(m.n_params - embeddings - front_params, 0.5 * m.n_params)
    enc = body * enc_struct / (enc_struct + dec_struct)
    dec = body - enc
    cross_kv = dec_l * 2 * h * kvd  # applied to the encoder output once, not per step
    # Conv1 (kernel 3) runs over 2×positions mel frames, conv2 (kernel 3, stride 2) gives the positions.
    front = 2 * 3 * (mels * h * 2 * enc_positions + h * h * enc_positions) if mels else 0.0
    return EncDecShape(
        enc_layers=enc_l,
        dec_layers=dec_l,
        hidden=h,
        qd=qd,
        kvd=kvd,
        enc_params=enc,
        dec_step_params=dec - cross_kv + emb,
        dec_weight_params=dec + embeddings,
        front_flops=float(front),
        enc_positions=enc_positions,
    )


@dataclass(frozen=True)
class _Batch:
    """One batch of `c` requests on one replica: its time parts in seconds."""

    encode_s: float
    step_s: float
    step_memory_s: float
    step_compute_s: float
    step_cpu_s: float
    steps: int

    @property
    def total_s(self) -> float:
        return self.encode_s + self.steps * self.step_s


def encdec_inference_estimate(
    w: Workload, gpu: GpuSpec, *, count: int, nodes: int, calibration: Calibration | None, notes: Notes
) -> Estimate:
    """Memory, throughput and hours of an encoder-decoder inference workload on `count` × `gpu`."""
    inf, m = w.inference, w.arch
    assert inf is not None
    speech = is_speech(m)
    unit = "audio seconds/s" if speech else "output tokens/s"
    capacity = gpu.memory_gib * GIB
    tp = inf.tensor_parallel
    if tp > count:
        reason = _("tensor_parallel = {tp} needs {tp} GPUs, got {count}").format(tp=tp, count=count)
        return impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes
        )
    enc_positions = (m.encoder_tokens or 0) if speech else max(inf.prompt_tokens, 1)
    dec_prompt = inf.prompt_tokens if speech else 1  # T5's decoder starts from one start token
    shape = shape_of(m, enc_positions)
    mem = _memory(m, inf, shape, dec_prompt, notes)
    peak, _used = peak_flops(gpu, inf.weights_precision, notes)
    bw = bandwidth(gpu, notes)
    if peak is None or bw is None:
        reason = (
            _("{gpu} lacks a published peak figure")
            if peak is None
            else _("{gpu} lacks a published memory bandwidth figure")
        ).format(gpu=gpu.name)
        return impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes, mem=mem
        )
    if calibration is not None and calibration.kind == "bench":
        notes.add(
            _("calibration {source}: not applied to encoder-decoder estimates (defaults used)").format(
                source=calibration.source
            )
        )
    flops_s = peak * notes.const(K.PREFILL_EFFICIENCY)
    batch = _batch_time(inf, shape, dec_prompt, flops_s=flops_s, bw=bw, notes=notes)
    replicas = count // tp
    c = inf.concurrency
    notes.add(_layout_note(shape, enc_positions, inf.output_tokens, c))
    details = {
        "encode_s_per_batch": batch.encode_s,
        "decode_step_s": batch.step_s,
        "decode_memory_s": batch.step_memory_s,
        "decode_compute_s": batch.step_compute_s,
        "decode_cpu_s": batch.step_cpu_s,
        "replicas": float(replicas),
    }
    requests_per_s = c / batch.total_s * replicas
    flops_per_request = shape.encode_flops() + inf.output_tokens * inf.beams * shape.step_flops(dec_prompt)
    mfu = flops_per_request * requests_per_s / count / peak
    if speech:
        n_windows, advance = windows(inf, m)
        thr_total = requests_per_s * advance  # audio seconds per wall second: the real-time factor
        hours = n_windows / requests_per_s / 3600
        details |= {
            "windows": n_windows,
            "window_advance_s": advance,
            "realtime_factor": thr_total,
            "rtf": 1 / thr_total,
            "output_tokens_per_s": requests_per_s * inf.output_tokens,
        }
        notes.add(_windows_note(inf, m, n_windows, advance))
    else:
        thr_total = requests_per_s * inf.output_tokens
        hours, meets = _text_hours(inf, thr_total, notes)
    est = _result(gpu, count, nodes, capacity, mem, unit, thr_total, hours, mfu, batch, details, notes)
    return est if speech else replace(est, meets_target=meets)


def _layout_note(shape: EncDecShape, enc_positions: int, steps: int, batch: int) -> str:
    return _(
        "encoder-decoder: {enc} encoder + {dec} decoder layers; per request the encoder runs once over "
        "{positions} positions, then {steps} decode steps per batch of {batch} (static batching: "
        "output_tokens is what the longest output in a batch needs)"
    ).format(enc=shape.enc_layers, dec=shape.dec_layers, positions=enc_positions, steps=steps, batch=batch)


def _windows_note(inf: InferenceSpec, m: ModelSpec, n_windows: float, advance: float) -> str:
    hours = (
        _("{hours} audio hours in ").format(hours=f"{inf.audio_hours:g}")
        if inf.audio_hours is not None
        else ""
    )
    return hours + _(
        "{windows} windows of {advance} s of new audio (window {window} s, overlap {overlap} s; "
        "every window is padded to the model's {model} s, so a shorter window costs the same compute)"
    ).format(
        windows=f"{n_windows:,.0f}",
        advance=f"{advance:g}",
        window=f"{advance + inf.overlap_s:g}",
        overlap=f"{inf.overlap_s:g}",
        model=f"{m.audio_window_s:g}",
    )


def _text_hours(inf: InferenceSpec, thr_total: float, notes: Notes) -> tuple[float, bool | None]:
    """Hours to serve every request, or the target rate's duration (stretched when it is not met)."""
    if inf.requests is not None:
        return inf.requests * inf.output_tokens / thr_total / 3600, None
    target, duration = inf.target_output_tokens_per_s or 0.0, inf.duration_hours or 0.0
    if thr_total >= target:
        return duration, True
    notes.add(
        _("serves {served} of the {target} output tokens/s target: hours stretched").format(
            served=f"{thr_total:,.0f}", target=f"{target:,.0f}"
        )
    )
    return duration * target / thr_total, False


def _memory(
    m: ModelSpec, inf: InferenceSpec, shape: EncDecShape, dec_prompt: int, notes: Notes
) -> MemoryBreakdown:
    """One replica's memory per GPU: weights, both KV caches of every sequence, the encoder's activations for
    the whole batch (one layer at a time), logits."""
    tp, c = inf.tensor_parallel, inf.concurrency
    wb = (
        notes.const(MEM.INT4_BYTES_PER_PARAM)
        if inf.weights_precision == "int4"
        else K.BYTES[inf.weights_precision]
    )
    kv_b = 0.5 if inf.kv_dtype == "int4" else K.BYTES[inf.kv_dtype]
    weights = m.n_params * wb / tp
    self_kv, cross_kv = shape.kv_bytes(dec_prompt + inf.output_tokens, kv_b)
    # Beam search decodes `beams` hypotheses per request, each with its own copy of both caches (HF
    # generate expands the encoder output per beam).
    seqs = c * inf.beams
    kv = seqs * (self_kv + cross_kv) / tp
    notes.add(
        f"KV cache per sequence: self-attention {self_kv / 2**20:,.1f} MiB + cross-attention "
        f"{cross_kv / 2**20:,.1f} MiB (2·decoder layers·d·{kv_b:g} B per position, {shape.enc_positions} "
        f"encoder positions), × {seqs} sequences"
        + (f" ({c} requests × {inf.beams} beams)" if inf.beams > 1 else "")
    )
    # The encoder runs the whole batch at once (no chunked prefill): SDPA/flash attention keeps no s² matrix.
    acts = c * shape.enc_positions * (shape.hidden * 8 + m.n_ffn * 6) / tp + seqs * (m.vocab or 0) * 4
    allocated = weights + kv + acts
    overhead = notes.const(MEM.CUDA_CONTEXT_GIB) * GIB + allocated * notes.const(MEM.FRAGMENTATION)
    if tp > 1:
        overhead += notes.const(MEM.NCCL_BUFFERS_GIB) * GIB
    return MemoryBreakdown(weights, 0.0, 0.0, acts, kv, overhead)


def _batch_time(
    inf: InferenceSpec, shape: EncDecShape, dec_prompt: int, *, flops_s: float, bw: float, notes: Notes
) -> _Batch:
    """Encode a batch (compute-bound), then decode it step by step: each step as long as the longer of the
    GPU's work (weights + KV streamed, or its FLOPs) and eager PyTorch's CPU time to launch it."""
    tp, c = inf.tensor_parallel, inf.concurrency
    wb = K.BYTES.get(inf.weights_precision, 0.5)
    kv_b = 0.5 if inf.kv_dtype == "int4" else K.BYTES[inf.kv_dtype]
    bw_eff = bw * notes.const(K.DECODE_BANDWIDTH_EFFICIENCY)
    encode_s = c * (shape.encode_flops() + 2 * shape.dec_step_params * dec_prompt) / (tp * flops_s)
    encode_s = max(encode_s, shape.enc_params * wb / tp / bw_eff)
    ctx_avg = dec_prompt + inf.output_tokens / 2
    self_kv, cross_kv = shape.kv_bytes(ctx_avg, kv_b)
    seqs = c * inf.beams  # every beam is a sequence the decoder steps
    memory_s = (shape.dec_weight_params * wb + seqs * (self_kv + cross_kv)) / tp / bw_eff
    compute_s = seqs * shape.step_flops(ctx_avg) / (tp * flops_s)
    if inf.engine == "compiled":  # one graph launch per step: the serving engines' fixed overhead
        cpu_s = 0.0
        step_s = max(memory_s, compute_s) + notes.const(K.DECODE_STEP_OVERHEAD_S)
    else:
        ops = notes.const(OPS_PER_DECODER_LAYER) * shape.dec_layers + notes.const(OPS_PER_STEP)
        cpu_s = ops * notes.const(EAGER_OP_OVERHEAD_S)
        step_s = max(memory_s, compute_s, cpu_s)
        notes.add(_('engine = "eager" (PyTorch eager, as Hugging Face transformers and openai-whisper run)'))
    if tp > 1:
        step_s += 3 * shape.dec_layers * notes.const(K.TP_LAYER_LATENCY_S)
    notes.add(
        _(
            "decode step = max(decoder weights + self and cross KV read at the bandwidth efficiency, "
            "its FLOPs) + a compiled engine's fixed overhead"
        )
        if inf.engine == "compiled"
        else _(
            "decode step = max(decoder weights + self and cross KV read at the bandwidth efficiency, "
            "its FLOPs, eager PyTorch's CPU time: operators × overhead, which the GPU cannot hide at small "
            "batches)"
        )
    )
    return _Batch(encode_s, step_s, memory_s, compute_s, cpu_s, inf.output_tokens)


def _result(  # noqa: PLR0917 - one place builds the Estimate from the parts computed above
    gpu: GpuSpec,
    count: int,
    nodes: int,
    capacity: float,
    mem: MemoryBreakdown,
    unit: str,
    thr_total: float,
    hours: float,
    mfu: float,
    batch: _Batch,
    details: dict[str, float],
    notes: Notes,
) -> Estimate:
    decode_s = batch.steps * batch.step_s
    if batch.encode_s >= decode_s:
        bottleneck = "compute"
    elif batch.step_memory_s >= max(batch.step_compute_s, batch.step_cpu_s):
        bottleneck = "memory_bandwidth"
    else:
        bottleneck = "compute"
        if batch.step_cpu_s > batch.step_compute_s:
            notes.add(
                _(
                    "decode is held up by the CPU launching operators (eager PyTorch), not by the GPU: until "
                    "the GPU's work per step catches up, a larger batch adds little time per step; CUDA "
                    "graphs or CTranslate2 (faster-whisper) remove most of the launch time"
                )
            )
    fits = mem.total <= capacity
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
        bottleneck=bottleneck if fits else "memory_capacity",
        assumptions=tuple(notes.items),
        details=details,
    )


__all__ = ["EncDecShape", "encdec_inference_estimate", "shape_of"]
