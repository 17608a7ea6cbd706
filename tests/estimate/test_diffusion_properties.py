"""Invariants of the diffusion estimate over every architecture: more pixels or a bigger micro batch never
need less memory or time, checkpointing never needs more memory, and every answer is finite."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import estimate
from gpuwise.estimate.models import Estimate
from gpuwise.workload import parse_workload
from gpuwise.workload.diffusion_arch import diffusion_arch, diffusion_names

H100 = resolve_gpu("H100")


def run(arch: str, side: int, batch: int, ckpt: str, method: str) -> Estimate:
    train: dict[str, Any] = {
        "method": method,
        "precision": "bf16",
        "micro_batch": batch,
        "samples": 1000.0,
        "activation_checkpointing": ckpt,
    }
    w = parse_workload(
        {"task": "finetune", "model": {"preset": arch}, "train": train, "diffusion": {"resolution": side}},
        "p.toml",
    )
    return estimate(w, H100)


@settings(max_examples=40, deadline=None)
@given(
    arch=st.sampled_from(diffusion_names()),
    grid=st.integers(16, 96),
    batch=st.integers(1, 4),
    ckpt=st.sampled_from(["none", "selective", "full"]),
    method=st.sampled_from(["lora", "qlora", "full"]),
)
def test_memory_and_time_grow_with_pixels_and_batch(
    arch: str, grid: int, batch: int, ckpt: str, method: str
) -> None:
    found = diffusion_arch(arch)
    assert found is not None
    step = found.pixel_multiple
    side = grid * step
    base = run(arch, side, batch, ckpt, method)
    assert math.isfinite(base.hours) and base.hours > 0 and base.memory.total > 0
    bigger = run(arch, side + step, batch, ckpt, method)
    more = run(arch, side, batch + 1, ckpt, method)
    for other in (bigger, more):
        assert other.memory.total > base.memory.total
        assert other.details["s_per_it"] > base.details["s_per_it"]
    if ckpt != "full":
        assert run(arch, side, batch, "full", method).memory.activations < base.memory.activations
