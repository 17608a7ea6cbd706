"""Greedy decoding with a preallocated KV cache over `nets.Gpt`'s weights (imports torch: see nets).

The cache starts filled with `context` positions of random keys and values (their values do not change the
cost); each step appends one position per sequence and attends over everything so far.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch.nn import functional as F  # noqa: N812 - torch's own convention

from gpuwise.bench.nets import Block, Gpt


class Decoder:
    def __init__(self, torch_module: Any, model: Gpt, batch: int, context: int, steps: int) -> None:
        del torch_module  # the same torch as imported here; the argument keeps the call site uniform
        self.model, self.batch, self.context, self.steps = model, batch, context, steps
        p = next(model.parameters())
        d = model.tok.weight.shape[1]
        self.blocks = [cast(Block, b) for b in model.blocks]
        self.heads: int = self.blocks[0].heads
        self.hd = d // self.heads
        total = context + steps
        shape = (len(self.blocks), batch, self.heads, total, self.hd)
        self.k = torch.randn(shape, device=p.device, dtype=p.dtype)
        self.v = torch.randn(shape, device=p.device, dtype=p.dtype)
        self.first = torch.zeros(batch, 1, dtype=torch.long, device=p.device)

    def bytes_per_step(self) -> int:
        """Weights once (the position table is a lookup) plus the mean KV cache read per step."""
        weights = sum(
            p.numel() * p.element_size() for n, p in self.model.named_parameters() if n != "pos.weight"
        )
        mean_len = self.context + self.steps / 2
        kv = 2 * self.k.shape[0] * self.batch * self.heads * mean_len * self.hd * self.k.element_size()
        return int(weights + kv)

    @torch.no_grad()
    def generate(self) -> torch.Tensor:
        m, token = self.model, self.first
        for i in range(self.steps):
            pos = self.context + i
            x = m.tok(token) + m.pos.weight[pos]
            for layer, blk in enumerate(self.blocks):
                b, _, d = x.shape
                q, k, v = blk.qkv(blk.ln1(x)).split(d, dim=2)
                q = q.view(b, 1, self.heads, self.hd).transpose(1, 2)
                self.k[layer, :, :, pos] = k.view(b, self.heads, self.hd)
                self.v[layer, :, :, pos] = v.view(b, self.heads, self.hd)
                att = F.scaled_dot_product_attention(
                    q, self.k[layer, :, :, : pos + 1], self.v[layer, :, :, : pos + 1]
                )
                x = x + blk.proj(att.transpose(1, 2).reshape(b, 1, d))
                x = x + blk.out(F.gelu(blk.fc(blk.ln2(x))))
            token = m.head(m.ln(x)).argmax(-1)
        return token
