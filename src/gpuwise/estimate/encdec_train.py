"""Training of encoder-decoder models (T5-style text, Whisper-style speech) as two stacks: FLOPs per decoder
token and the activation bytes the layers keep for the backward.

A training sample runs the encoder over its input once and the decoder over its target, each decoder layer
attending to every encoder position:
- Whisper (Radford et al. 2022, "Robust Speech Recognition via Large-Scale Weak Supervision", §2.2): audio is
  cut to 30-s windows as 80-bin (large-v3: 128) log-mel spectrograms at a 10-ms hop, 3,000 frames; a stem of
  two width-3 convolutions, the second of stride 2, gives 1,500 encoder positions (`encoder_tokens`), whatever
  the clip's length (every input is padded to 30 s). The decoder runs over the transcript's tokens (`seq_len`,
  at most 448).
- T5 (Raffel et al. 2020, "Exploring the Limits of Transfer Learning...", §3.1.2): the encoder reads the input
  (512 tokens in the paper's pre-training), the decoder the target (114 there); the encoder length is
  `[model] encoder_tokens` when given, else `seq_len` (said in the notes).

Units: tokens and `seq_len` of an encoder-decoder job count DECODER tokens (the target's); the encoder's work
per sample is spread over them, so FLOPs "per token" include the encoder's share. Pure; must not import the
CLI, the planner or the catalog loaders.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.encdec import EncDecShape, shape_of
from gpuwise.estimate.model_math import act_bytes_per_token_layer
from gpuwise.estimate.notes import Notes
from gpuwise.locale import _
from gpuwise.workload.spec import ModelSpec, TrainSpec
from gpuwise.workload.speech import is_speech


@dataclass(frozen=True)
class SampleFlops:
    """Training FLOPs of one sample, by part (forward + backward at the method's coefficient)."""

    matmul: float  # GEMMs of both stacks, the cross-attention K/V projections and the output head
    attention: float  # the attention cores: encoder self, decoder self (causal counted full) and cross
    front: float  # a speech model's convolutional stem

    @property
    def total(self) -> float:
        return self.matmul + self.attention + self.front


def encoder_positions(m: ModelSpec, t: TrainSpec) -> int:
    """Encoder positions per sample: Whisper's 1,500 per window; T5's `encoder_tokens`, else `seq_len`."""
    if m.encoder_tokens is not None:
        return m.encoder_tokens
    return t.seq_len or 1


def encdec_shape(m: ModelSpec, t: TrainSpec) -> EncDecShape:
    return shape_of(m, encoder_positions(m, t))


def sample_flops(m: ModelSpec, t: TrainSpec, dec_len: float, dec_attn_len: float) -> SampleFlops:
    """Training FLOPs of one sample of `dec_len` decoder tokens (self-attention costed at `dec_attn_len`).

    Kaplan et al. 2020's 6·N per token, applied per stack at its own length: 2 FLOPs per multiply-add forward,
    twice that backward (4·N with a frozen base: no weight-gradient GEMMs). The attention core follows PaLM
    (Chowdhery et al. 2022, appendix B): 12·L·s·d per token, forward and backward, here with s the length
    each stack attends over (encoder: the encoder length; decoder: its own tokens, and the encoder's for
    cross-attention)."""
    s = encdec_shape(m, t)
    coeff = 6.0 if t.method == "full" else 4.0
    e = s.enc_positions
    cross_kv = s.dec_layers * 2 * s.hidden * s.kvd  # applied to the encoder output, once per sample
    matmul = coeff * (s.enc_params * e + cross_kv * e + s.dec_step_params * dec_len)
    attention = 12 * s.qd * (s.enc_layers * e * e + s.dec_layers * dec_len * (dec_attn_len + e))
    front = coeff / 2 * s.front_flops  # front_flops is the forward; a frozen stem needs no weight gradients
    return SampleFlops(matmul, attention, front)


def layout_note(m: ModelSpec, t: TrainSpec, dec_len: float, per_sample: SampleFlops, notes: Notes) -> None:
    s = encdec_shape(m, t)
    notes.add(
        _(
            "encoder-decoder training: {enc} encoder layers over {positions} positions per sample, {dec} "
            "decoder layers over {tokens} target tokens, each decoder layer cross-attending to the "
            "{positions} encoder positions: {tflops} TFLOPs per sample (forward + backward); tokens and "
            "seq_len count the decoder's"
        ).format(
            enc=s.enc_layers,
            dec=s.dec_layers,
            positions=s.enc_positions,
            tokens=f"{dec_len:.0f}",
            tflops=f"{per_sample.total / 1e12:.2f}",
        )
    )
    if is_speech(m):
        notes.add(
            _(
                "speech encoder: every sample is padded to the model's {window} s window ({mels} mel bins, "
                "{frames} frames, 2 convolutions, the second of stride 2: {positions} positions), however "
                "short the clip (Whisper paper, §2.2)"
            ).format(
                window=f"{m.audio_window_s or 0:g}",
                mels=m.mel_bins or 0,
                frames=2 * s.enc_positions,
                positions=s.enc_positions,
            )
        )
    elif m.encoder_tokens is None:
        notes.add(
            _(
                "no encoder_tokens: the encoder's input assumed as long as seq_len = {seq} (give [model] "
                "encoder_tokens, the input length, when inputs and targets differ, e.g. 512 and 128)"
            ).format(seq=t.seq_len or 1)
        )


def encdec_layer_activations(m: ModelSpec, t: TrainSpec, *, tp: int, seq: int, notes: Notes) -> float:
    """16-bit activations both stacks keep for the backward at `seq` decoder tokens, by checkpointing mode:
    encoder layers at the encoder length, decoder layers at `seq` plus their cross-attention (its query path
    per decoder token, its keys and values over every encoder position), the encoder's output and a speech
    model's convolutional stem."""
    s = encdec_shape(m, t)
    e, b = s.enc_positions, t.micro_batch
    notes.const(MEM.ACTIVATIONS_SOURCE)
    enc_lin, enc_quad = act_bytes_per_token_layer(m, t, e, tp)
    dec_lin, dec_quad = act_bytes_per_token_layer(m, t, seq, tp)
    # Cross-attention: its norm output and query, the attention output for o; K and V of every encoder
    # position per layer (2 bytes each); under eager attention its scores over the encoder positions.
    cross_lin = (2 * s.hidden + 2 * s.qd + 2 * s.qd + 2 * s.hidden) / tp
    cross_quad = 5 * (m.heads or 1) * e / tp if t.attention == "eager" else 0.0
    cross_kv = 4 * s.kvd * e * b / tp  # per decoder layer
    enc_tokens, dec_tokens = b * e, b * seq
    enc_layer = (enc_lin + enc_quad) * enc_tokens
    dec_layer = (dec_lin + dec_quad + cross_lin + cross_quad) * dec_tokens + cross_kv
    mels = m.mel_bins or 0
    # The stem's input (2·E frames of mel bins), each convolution's output and its GELU input.
    stem = b * 2 * (mels * 2 * e + 2 * s.hidden * 2 * e + 2 * s.hidden * e) if mels else 0.0
    kept = 2 * s.hidden * enc_tokens / tp + stem  # the encoder output feeds every decoder layer
    mode = t.activation_checkpointing
    if mode == "full":
        per_token = 2 * (m.hidden or 0) / tp
        acts = per_token * (s.enc_layers * enc_tokens + s.dec_layers * dec_tokens)
        # Each layer's cross-attention K/V are recomputed with the layer (HF checkpoints whole layers).
        acts += max(enc_layer, dec_layer)
        notes.add(
            _("full activation checkpointing: 2·s·b·h bytes kept per layer, one layer recomputed at a time")
        )
    elif mode == "selective":
        acts = s.enc_layers * enc_lin * enc_tokens + s.dec_layers * (
            (dec_lin + cross_lin) * dec_tokens + cross_kv
        )
        notes.add(_("selective checkpointing: attention scores recomputed (Korthikanti et al. 2022 §4.2)"))
    else:
        acts = s.enc_layers * enc_layer + s.dec_layers * dec_layer
    if t.attention == "flash" and mode != "selective":
        notes.add(_("flash attention: no s² attention matrix stored"))
    if t.fused_kernels and m.gated_mlp and mode != "full":
        acts -= 2 * m.n_ffn / tp * (s.enc_layers * enc_tokens + s.dec_layers * dec_tokens)
    return acts + kept


__all__ = [
    "SampleFlops",
    "encdec_layer_activations",
    "encdec_shape",
    "encoder_positions",
    "layout_note",
    "sample_flops",
]
