"""Sample lengths as a training job sees them: packed rows, or unpacked micro batches padded to their
longest sample (lengths assumed lognormal), and the longest batch that sets peak memory.

Pure; `expected_max_length` is cached (plain arithmetic, called a few hundred times per plan).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate.notes import Notes
from gpuwise.locale import _
from gpuwise.workload.spec import TrainSpec


@lru_cache(maxsize=4096)
def expected_max_length(mean: float, cv: float, batch: int, cap: float) -> float:
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


def length_quantile(mean: float, cv: float, q: float) -> float:
    """The q-quantile of lognormal lengths with this mean and coefficient of variation."""
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    return math.exp(mu + sigma * statistics.NormalDist().inv_cdf(q))


@dataclass(frozen=True)
class Lengths:
    """Tokens as the job sees them: padded length per micro batch, attention length, peak length."""

    batch_len: float  # tokens per sequence slot of a micro batch (seq_len packed; longest sample unpacked)
    attn_len: float  # sequence length the attention core costs per token
    peak_len: float  # the longest batch: sets peak activation memory
    pad_factor: float  # computed tokens / real tokens (≥ 1)
    real_per_sample: float  # real tokens per sample


# The lengths of a model without sequences (CNNs and other per-sample models).
NO_SEQUENCE = Lengths(1.0, 1.0, 1.0, 1.0, 1.0)


def lengths(t: TrainSpec, notes: Notes) -> Lengths:
    """The job's lengths from seq_len, avg_tokens, packing and group_by_length."""
    seq = float(t.seq_len or 1)
    if t.avg_tokens is None:
        if t.samples is not None:
            notes.add(
                _(
                    "no avg_tokens: every sample assumed to fill seq_len = {seq} tokens (give [train] "
                    "avg_tokens, the mean tokens per sample, for shorter data)"
                ).format(seq=f"{seq:g}")
            )
        return Lengths(seq, seq, seq, 1.0, seq)
    mean = float(t.avg_tokens)
    cv = notes.const(K.LENGTH_CV)
    attn = min(seq, mean * (1 + cv * cv))  # E[L²]/E[L]: attention cost per token of variable-length samples
    peak = min(seq, length_quantile(mean, cv, K.LENGTH_PEAK_QUANTILE))
    if t.packing:
        notes.add(
            _(
                "packing: samples of {mean} tokens on average concatenated into rows of {seq}; attention "
                "per sample (variable-length flash attention)"
            ).format(mean=f"{mean:g}", seq=f"{seq:g}")
        )
        return Lengths(seq, attn, seq, 1.0, mean)
    if t.group_by_length:
        pad = min(seq, mean * notes.const(K.GROUP_BY_LENGTH_PAD))
        notes.add(
            _("group_by_length: batches of similar length, padded to ~{pad} tokens").format(pad=f"{pad:.0f}")
        )
    else:
        pad = expected_max_length(mean, cv, t.micro_batch, seq)
        notes.add(
            _(
                "no packing: each micro batch of {batch} padded to its longest sample, expected "
                "{pad} tokens for a mean of {mean} ({ratio}× the real tokens)"
            ).format(batch=t.micro_batch, pad=f"{pad:.0f}", mean=f"{mean:g}", ratio=f"{pad / mean:.2f}")
        )
    pad = max(pad, mean)
    return Lengths(pad, max(attn, pad if t.micro_batch > 1 else attn), peak, pad / mean, mean)
