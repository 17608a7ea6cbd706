"""Parameter counts of decoder-only Hugging Face configs: dense (Llama, Mistral, Qwen2/3, Gemma, Phi, GPT-2,
GPT-NeoX, Falcon, StarCoder2) and mixture-of-experts (Mixtral, DeepSeek-V2/V3 with multi-head latent
attention and shared experts).

Counts follow the modules transformers builds for each family (which projections carry a bias, LayerNorm
(weight + bias) or RMSNorm (weight), learned position tables, a tied or separate output head). DeepSeek-V3's
multi-token-prediction layer (`num_nextn_predict_layers`) is not counted: transformers does not load it and
the model card's 671B excludes it.

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuwise.workload.hf_config import HfArch

if TYPE_CHECKING:
    from gpuwise.workload.hf_config import _Reader

# family -> (attention projections carry biases, MLP carries biases, gated MLP, LayerNorm (vs RMSNorm))
_SHAPE = {
    "llama": (False, False, True, False),
    "qwen2": (True, False, True, False),  # q, k, v biases only (no o bias)
    "qwen3": (False, False, True, False),
    "mixtral": (False, False, True, False),
    "deepseek": (False, False, True, False),
    "phi": (True, True, False, True),
    "gpt2": (True, True, False, True),
    "gpt_neox": (True, True, False, True),
    "falcon": (False, False, False, True),
    "starcoder2": (True, True, False, True),
}


def count_decoder(r: _Reader, family: str, *, tied_default: bool) -> HfArch:
    """Read a decoder-only config and count its parameters."""
    layers = r.int("num_hidden_layers", "n_layer", "num_layers")
    hidden = r.int("hidden_size", "n_embd", "d_model")
    heads = r.int("num_attention_heads", "n_head")
    vocab = r.int("vocab_size")
    kv_heads = _kv_heads(r, family, heads)
    head_dim = r.int("head_dim", default=hidden // max(heads, 1))
    ffn = r.int("intermediate_size", "n_inner", "ffn_hidden_size", default=4 * hidden)
    tied = r.flag("tie_word_embeddings", tied_default)
    attn_bias, mlp_bias, gated, layer_norm = _SHAPE[family]
    if family == "llama":
        attn_bias = r.flag("attention_bias", False)
        mlp_bias = r.flag("mlp_bias", False)
    if family == "gpt_neox":
        attn_bias = r.flag("attention_bias", True)
    if family == "falcon":
        attn_bias = mlp_bias = r.flag("bias", False)
    if family == "starcoder2":
        attn_bias = mlp_bias = r.flag("use_bias", True)
    if family == "deepseek":
        return _count_deepseek(r, layers=layers, hidden=hidden, heads=heads, vocab=vocab, ffn=ffn, tied=tied)
    norm = (2 if layer_norm else 1) * hidden
    attn = _attention(hidden, heads, kv_heads, head_dim, bias=attn_bias, o_bias=family != "qwen2")
    if family == "qwen3":
        attn += 2 * head_dim  # per-head RMSNorm of q and k
    mlp = (3 if gated else 2) * hidden * ffn + ((ffn + hidden) if mlp_bias else 0)
    per_layer = attn + _norms_per_layer(r, family) * norm
    embed = vocab * hidden * (1 if tied else 2)
    extra = norm  # final norm
    if family == "gpt2":
        extra += r.int("n_positions", "max_position_embeddings") * hidden
    if family == "phi":
        extra += vocab  # lm_head bias
    experts = per_token = 1
    active_mlp = mlp
    if family == "mixtral":
        experts = r.int("num_local_experts")
        per_token = r.int("num_experts_per_tok")
        active_mlp = per_token * mlp + hidden * experts
        mlp = experts * mlp + hidden * experts  # the router: one row per expert
    total = embed + extra + layers * (per_layer + mlp)
    active = embed + extra + layers * (per_layer + active_mlp)
    return HfArch(
        model_type=r.model_type,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn_hidden=ffn,
        vocab=vocab,
        gated_mlp=gated,
        tied_embeddings=tied,
        experts=experts,
        experts_per_token=per_token,
        shared_experts=0,
        params=float(total),
        active_params=float(active),
        encoder_decoder=False,
        used=tuple(r.used),
    )


def _kv_heads(r: _Reader, family: str, heads: int) -> int:
    if family == "falcon":
        # Falcon-40B/180B ("new_decoder_architecture") give num_kv_heads; Falcon-7B is multi-query.
        if r.flag("new_decoder_architecture", False):
            return r.int("num_kv_heads", default=heads)
        return 1 if r.flag("multi_query", True) else heads
    return r.int("num_key_value_heads", default=heads)


def _norms_per_layer(r: _Reader, family: str) -> int:
    if family == "phi":
        return 1  # one LayerNorm before the parallel attention and MLP
    if family == "falcon" and not r.flag("new_decoder_architecture", False):
        return 1 if r.flag("parallel_attn", True) else 2
    if r.model_type == "gemma2":
        return 4  # pre- and post-norms around attention and MLP
    return 2


def _attention(hidden: int, heads: int, kv_heads: int, head_dim: int, *, bias: bool, o_bias: bool) -> int:
    q, kv = heads * head_dim, kv_heads * head_dim
    weights = hidden * (q + 2 * kv) + q * hidden
    return weights + ((q + 2 * kv + (hidden if o_bias else 0)) if bias else 0)


def _count_deepseek(
    r: _Reader, *, layers: int, hidden: int, heads: int, vocab: int, ffn: int, tied: bool
) -> HfArch:
    """Multi-head latent attention (DeepSeek-V2 paper §2.1) and DeepSeekMoE: `first_k_dense_replace` dense
    layers, then routed experts of `moe_intermediate_size` plus `n_shared_experts` always-on experts."""
    q_rank = r.data.get("q_lora_rank")
    kv_rank = r.int("kv_lora_rank")
    nope, rope, v_dim = r.int("qk_nope_head_dim"), r.int("qk_rope_head_dim"), r.int("v_head_dim")
    if q_rank is None:
        q = hidden * heads * (nope + rope)
    else:
        q_rank = r.int("q_lora_rank")
        q = hidden * q_rank + q_rank + q_rank * heads * (nope + rope)
    attn = q + hidden * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
    experts, per_token = r.int("n_routed_experts"), r.int("num_experts_per_tok")
    shared, moe_ffn = r.int("n_shared_experts", default=0), r.int("moe_intermediate_size")
    dense_layers = min(r.int("first_k_dense_replace", default=0), layers)
    expert = 3 * hidden * moe_ffn
    router = hidden * experts + (experts if r.data.get("topk_method") == "noaux_tc" else 0)
    per_layer = attn + 2 * hidden
    embed = vocab * hidden * (1 if tied else 2) + hidden
    dense = dense_layers * (per_layer + 3 * hidden * ffn)
    moe_layers = layers - dense_layers
    total = embed + dense + moe_layers * (per_layer + (experts + shared) * expert + router)
    active = embed + dense + moe_layers * (per_layer + (per_token + shared) * expert + router)
    return HfArch(
        model_type=r.model_type,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=r.int("num_key_value_heads", default=heads),
        head_dim=nope + rope,
        ffn_hidden=moe_ffn,
        vocab=vocab,
        gated_mlp=True,
        tied_embeddings=tied,
        experts=experts,
        experts_per_token=per_token,
        shared_experts=shared,
        params=float(total),
        active_params=float(active),
        encoder_decoder=False,
        used=tuple(r.used),
    )
