"""Model arithmetic the memory and time models share: parameters that run as matmuls, LoRA adapter
parameters, and activation bytes per token per layer.

Pure functions of the model (and training) spec; no constants, no notes.
"""

from __future__ import annotations

from gpuwise.workload.spec import ModelSpec, TrainSpec


def matmul_params(m: ModelSpec, active: bool = True) -> float:
    """Parameters that take part in matmuls per token: the input embedding is a lookup, not a GEMM."""
    n = m.n_active_params if active else m.n_params
    if m.tied_embeddings:
        return n  # the shared matrix is used once, as the output head
    return max(n - m.embedding_params, n * 0.5)


def lora_params(m: ModelSpec, rank: int, targets: str = "all") -> float:
    """LoRA adapter parameters: rank × (in + out) per adapted matrix. `targets` "all" adapts every linear
    layer of attention and MLP (the QLoRA paper's recommendation); "attention" only q, k, v and o."""
    h, kvd, qd = m.hidden or 0, m.n_kv_heads * m.n_head_dim, (m.heads or 1) * m.n_head_dim
    f = m.n_ffn
    attn = (h + qd) * 2 + (h + kvd) * 2  # q, o and k, v
    mlp = (3 if m.gated_mlp else 2) * (h + f) * m.experts if targets == "all" else 0
    return float((m.layers or 0) * rank * (attn + mlp))


def act_bytes_per_token_layer(m: ModelSpec, t: TrainSpec, seq: int, tp: int) -> tuple[float, float]:
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
