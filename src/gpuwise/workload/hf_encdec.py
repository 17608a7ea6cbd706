"""Parameter counts of encoder-decoder Hugging Face configs: T5 (and T5 v1.1 / Flan-T5) and Whisper.

Both stacks are counted, and the decoder's cross-attention: T5's shared embedding, relative position
buckets and RMS norms; Whisper's two input convolutions, position tables, biased projections (k has none)
and LayerNorms. The `[model]` fields they fill give `layers` as encoder + decoder layers and
`encoder_layers` as the encoder's share; Whisper adds its audio window (`max_source_positions` frames ×
the front end's stride of 2 × the 10-ms mel hop = 30 s), mel bins and decoder positions. Inference is
estimated per stack (gpuwise.estimate.encdec); training still as one stack of `layers`.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuwise.workload.hf_config import HfArch

if TYPE_CHECKING:
    from gpuwise.workload.hf_config import _Reader


def count_t5(r: _Reader) -> HfArch:
    hidden = r.int("d_model")
    d_kv = r.int("d_kv")
    ffn = r.int("d_ff")
    enc_layers = r.int("num_layers")
    dec_layers = r.int("num_decoder_layers", default=enc_layers)
    heads = r.int("num_heads")
    vocab = r.int("vocab_size")
    buckets = r.int("relative_attention_num_buckets", default=32)
    tied = r.flag("tie_word_embeddings", True)
    projection = r.data.get("feed_forward_proj", "relu")
    gated = isinstance(projection, str) and projection.startswith("gated")
    if "feed_forward_proj" in r.data:
        r.used.append("feed_forward_proj")
    attn = 4 * hidden * heads * d_kv
    mlp = (3 if gated else 2) * hidden * ffn
    encoder = enc_layers * (attn + mlp + 2 * hidden) + buckets * heads + hidden
    decoder = dec_layers * (2 * attn + mlp + 3 * hidden) + buckets * heads + hidden
    total = vocab * hidden * (1 if tied else 2) + encoder + decoder
    return _arch(
        r,
        layers=enc_layers + dec_layers,
        hidden=hidden,
        heads=heads,
        head_dim=d_kv,
        ffn=ffn,
        vocab=vocab,
        gated=gated,
        tied=tied,
        total=total,
        encdec=(("encoder_layers", enc_layers),),
    )


def count_whisper(r: _Reader) -> HfArch:
    hidden = r.int("d_model")
    enc_layers, dec_layers = r.int("encoder_layers"), r.int("decoder_layers")
    heads = r.int("encoder_attention_heads")
    r.int("decoder_attention_heads", default=heads)
    enc_ffn, dec_ffn = r.int("encoder_ffn_dim"), r.int("decoder_ffn_dim")
    vocab, mels = r.int("vocab_size"), r.int("num_mel_bins")
    src_pos, tgt_pos = r.int("max_source_positions"), r.int("max_target_positions")
    tied = r.flag("tie_word_embeddings", True)
    attn = 4 * hidden * hidden + 3 * hidden  # q, v, o with bias; k without
    layer_norm = 2 * hidden
    convs = mels * hidden * 3 + hidden + hidden * hidden * 3 + hidden  # two kernel-3 convolutions

    def mlp(f: int) -> int:
        return 2 * hidden * f + f + hidden

    encoder = convs + src_pos * hidden + enc_layers * (attn + mlp(enc_ffn) + 2 * layer_norm) + layer_norm
    decoder = tgt_pos * hidden + dec_layers * (2 * attn + mlp(dec_ffn) + 3 * layer_norm) + layer_norm
    total = vocab * hidden * (1 if tied else 2) + encoder + decoder
    return _arch(
        r,
        layers=enc_layers + dec_layers,
        hidden=hidden,
        heads=heads,
        head_dim=hidden // heads,
        ffn=enc_ffn,
        vocab=vocab,
        gated=False,
        tied=tied,
        total=total,
        encdec=(
            ("encoder_layers", enc_layers),
            ("encoder_tokens", src_pos),
            # conv2 has stride 2 and the mel hop is 10 ms (160 samples at 16 kHz): 1500 positions = 30 s
            ("audio_window_s", src_pos * 2 / 100),
            ("mel_bins", mels),
            ("decoder_max_tokens", tgt_pos),
        ),
    )


def _arch(
    r: _Reader,
    *,
    layers: int,
    hidden: int,
    heads: int,
    head_dim: int,
    ffn: int,
    vocab: int,
    gated: bool,
    tied: bool,
    total: int,
    encdec: tuple[tuple[str, float], ...],
) -> HfArch:
    return HfArch(
        model_type=r.model_type,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=head_dim,
        ffn_hidden=ffn,
        vocab=vocab,
        gated_mlp=gated,
        tied_embeddings=tied,
        experts=1,
        experts_per_token=1,
        shared_experts=0,
        params=float(total),
        active_params=float(total),
        encoder_decoder=True,
        used=tuple(r.used),
        encdec_fields=encdec,
    )
