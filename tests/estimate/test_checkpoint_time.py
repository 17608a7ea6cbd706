"""Activation checkpointing costs time for every model kind, not only transformers: the forward passes the
backward reruns are charged (train_compute.py), on the scheme the memory side credits (train_memory.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import Estimate, estimate
from gpuwise.workload import Workload, parse_workload

# The three non-transformer kinds the per-sample path estimates: the resnet-50 and vit-l-16 presets, and a
# diffusion model given by its FLOPs (no [diffusion] section: diffusion.py's own path is tested elsewhere).
MODELS: dict[str, dict[str, Any]] = {
    "cnn": {"preset": "resnet-50"},
    "generic": {"preset": "vit-l-16"},
    "diffusion": {"kind": "diffusion", "params": 8.6e8, "flops_per_sample": 1.6e12},
}
GPUS = ["T4", "L4", "A10G", "L40S", "A100-80GB", "H100"]  # L40S: a CNN step bound by memory traffic


def work(model: str, ckpt: str, *, precision: str = "bf16", micro_batch: int = 32) -> Workload:
    train = {
        "method": "full",
        "precision": precision,
        "samples": 1e6,
        "micro_batch": micro_batch,
        "activation_checkpointing": ckpt,
    }
    return parse_workload({"task": "train", "model": MODELS[model], "train": train}, "k.toml")


def run(model: str, ckpt: str, gpu: str, count: int = 1, **keys: Any) -> Estimate:
    return estimate(work(model, ckpt, **keys), resolve_gpu(gpu), count)


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(sorted(MODELS)),
    gpu=st.sampled_from(GPUS),
    precision=st.sampled_from(["bf16", "fp16", "fp32"]),
    micro_batch=st.integers(1, 512),
    count=st.sampled_from([1, 8]),
)
def test_checkpointing_never_makes_a_non_transformer_faster(
    model: str, gpu: str, precision: str, micro_batch: int, count: int
) -> None:
    keys = {"precision": precision, "micro_batch": micro_batch}
    if precision == "bf16" and gpu == "T4":
        keys["precision"] = "fp16"  # T4 has no BF16: the estimate would say so, not what is tested here
    none, sel, full = (run(model, c, gpu, count, **keys) for c in ("none", "selective", "full"))
    assert none.hours <= sel.hours <= full.hours
    assert full.hours > none.hours  # full checkpointing always costs time: one more forward
    assert full.hours / none.hours <= 4 / 3 + 1e-9  # at most the extra forward (fixed costs dilute it)
    assert full.mfu <= none.mfu  # MFU counts the model's FLOPs, not the recomputed ones


@pytest.mark.parametrize("model", sorted(MODELS))
def test_compute_grows_by_one_forward_in_three(model: str) -> None:
    """Full: one more forward on a step of forward + 2× backward (4/3); selective: half of one (7/6)."""
    none, sel, full = (run(model, c, "A100-80GB").details["compute_s"] for c in ("none", "selective", "full"))
    assert full / none == pytest.approx(4 / 3)
    assert sel / none == pytest.approx(7 / 6)


def test_a_traffic_bound_cnn_step_also_pays_the_rerun() -> None:
    """On an L40S (864 GB/s) a ResNet-50 step is paced by moving its activations, not by its FLOPs: the
    rerun forward moves them again, so full checkpointing costs time there too."""
    none, full = run("cnn", "none", "L40S"), run("cnn", "full", "L40S")
    assert any("bound by memory traffic" in a for a in none.assumptions)
    assert full.details["compute_s"] / none.details["compute_s"] == pytest.approx(4 / 3)


def test_the_assumptions_say_what_checkpointing_costs() -> None:
    full = run("cnn", "full", "A100-80GB")
    assert any(
        a.startswith("checkpoint_recompute_forwards = 1 ") and "Chen et al. 2016" in a
        for a in full.assumptions
    )
    assert (
        "full checkpointing reruns 1 forward pass per sample in the backward: 1.33× the training FLOPs"
        " and activation traffic" in full.assumptions
    )
    sel = run("generic", "selective", "A100-80GB")
    assert any("reruns 0.5 forward pass per sample" in a and "1.17×" in a for a in sel.assumptions)
    none = run("cnn", "none", "A100-80GB")
    assert not any("checkpoint_recompute_forwards" in a for a in none.assumptions)


def test_memory_and_time_describe_the_same_scheme() -> None:
    """Full = every segment rerun once (one forward); selective = every other block: half the reruns,
    keeping the average of no checkpointing and full checkpointing (within rounding). A change to one table
    must move the other."""
    from gpuwise.estimate.constants import NON_TRANSFORMER_RECOMPUTE as RERUN
    from gpuwise.estimate.memory_constants import NON_TRANSFORMER_CHECKPOINT_KEEP as KEEP

    assert set(RERUN) == set(KEEP)
    assert RERUN["none"] == 0 and KEEP["none"] == 1
    assert RERUN["full"] == 1
    assert RERUN["selective"] == RERUN["full"] / 2
    assert KEEP["selective"] == pytest.approx((KEEP["none"] + KEEP["full"]) / 2, abs=0.05)
