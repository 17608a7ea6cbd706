"""The small models the training-step and decode tasks run, written here in plain torch (torchvision and
transformers are not dependencies).

- `Gpt`: a decoder-only transformer (pre-norm, causal attention through scaled_dot_product_attention,
  4× GELU MLP, tied output head), GPT-2's layout at the sizes the suite gives.
- `resnet50_layout`: ResNet-50's layout (He et al. 2015, table 1: bottleneck stages of 3, 4, 6, 3 blocks,
  widths 64-512 ×4) with every width divided by `width_div`; at width_div=1 it is ResNet-50 (25.6 M
  parameters), at other widths it is a smaller network of the same shape and is named so in the results.

Imports torch at module level: import this module only where torch is known to be installed.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 - torch's own convention


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, n, d = t.shape
        return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        att = F.scaled_dot_product_attention(self._split(q), self._split(k), self._split(v), is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, n, d))
        out: torch.Tensor = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return out


class Gpt(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, seq: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as GPT-2

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        out: torch.Tensor = self.head(self.ln(x))
        return out


def gpt_matmul_params(model: Gpt) -> int:
    """Parameters that take part in a matrix multiply per token: the blocks and the output head (the
    position table is a lookup, the token table is counted once, as the head)."""
    return sum(p.numel() for p in model.blocks.parameters()) + model.head.weight.numel()


def gpt_train_flops_per_token(model: Gpt, layers: int, d: int, seq: int) -> float:
    """6·N + 12·L·d·T: forward and backward of the matmuls plus attention scores (PaLM, Chowdhery et al.
    2022, appendix B)."""
    return 6.0 * gpt_matmul_params(model) + 12.0 * layers * d * seq


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = F.relu(self.body(x) + self.skip(x))
        return out


def resnet50_layout(width_div: int = 1, classes: int = 1000) -> nn.Module:
    stem = max(8, 64 // width_div)
    layers: list[Any] = [
        nn.Conv2d(3, stem, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(stem),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    cin = stem
    for i, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True)):
        w = max(4, width // width_div)
        for j in range(blocks):
            layers.append(Bottleneck(cin, w, stride=2 if j == 0 and i > 0 else 1))
            cin = w * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)
