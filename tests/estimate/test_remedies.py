"""The remedies search (estimate/remedies.py): what it proposes, in what order, and what it never proposes."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import Estimate, estimate
from gpuwise.estimate.models import Remedy
from gpuwise.estimate.remedies import SEQ_STEP, apply_updates, first_remedy_text, remedies
from gpuwise.units import GIB
from gpuwise.workload import Workload, parse_workload


def train(preset: str, task: str = "finetune", **keys: Any) -> Workload:
    t: dict[str, Any] = {
        "method": "lora",
        "precision": "bf16",
        "tokens": 1e8,
        "seq_len": 2048,
        "micro_batch": 4,
    }
    t.update(keys)
    return parse_workload({"task": task, "model": {"preset": preset}, "train": t}, "w.toml")


# examples/llama3-8b-lora.toml's settings: 28 GiB on HF Trainer, above a 24 GB card
EXAMPLE_LORA = train("llama-3-8b", micro_batch=1, seq_len=4096, activation_checkpointing="full")


def serve(preset: str, **keys: Any) -> Workload:
    i: dict[str, Any] = {"prompt_tokens": 1000, "output_tokens": 300, "concurrency": 16, "requests": 1e4}
    i.update(keys)
    return parse_workload({"task": "inference", "model": {"preset": preset}, "inference": i}, "w.toml")


def search(w: Workload, gpu: str, count: int = 1) -> tuple[Estimate, tuple[Remedy, ...]]:
    spec = resolve_gpu(gpu)
    base = estimate(w, spec, count)
    return base, remedies(w, spec, base, count=count)


def fits(w: Workload, gpu: str, updates: dict[str, Any], count: int = 1) -> bool:
    applied = apply_updates(w, count, updates)
    assert applied is not None
    return estimate(applied[0], resolve_gpu(gpu), applied[1]).fits


def by_key(found: tuple[Remedy, ...], key: str) -> Remedy:
    return next(r for r in found if r.fits and set(r.updates) == {key})


def test_a_configuration_that_fits_has_no_remedies() -> None:
    base, found = search(train("llama-3-8b", micro_batch=1, activation_checkpointing="full"), "H100")
    assert base.fits
    assert found == ()


def test_micro_batch_is_the_largest_that_fits() -> None:
    w = train("gpt2", task="train", method="full", seq_len=1024, micro_batch=64, framework="tuned")
    base, found = search(w, "A10")
    assert not base.fits
    best = by_key(found, "train.micro_batch").updates["train.micro_batch"]
    assert isinstance(best, int) and 1 <= best < 64
    assert fits(w, "A10", {"train.micro_batch": best})
    assert not fits(w, "A10", {"train.micro_batch": best + 1})
    assert "largest that fits" in by_key(found, "train.micro_batch").change


def test_seq_len_is_the_largest_multiple_of_the_step_that_fits() -> None:
    w = train("llama-3-8b", micro_batch=1, seq_len=8192)
    base, found = search(w, "RTX4090")
    assert not base.fits
    best = by_key(found, "train.seq_len").updates["train.seq_len"]
    assert isinstance(best, int) and best % SEQ_STEP == 0 and best < 8192
    assert fits(w, "RTX4090", {"train.seq_len": best})
    assert not fits(w, "RTX4090", {"train.seq_len": best + SEQ_STEP})


def test_fitting_changes_come_cheapest_in_gpu_hours_first_and_the_rest_last() -> None:
    _, found = search(EXAMPLE_LORA, "RTX4090")
    fitting = [r for r in found if r.fits]
    assert len(fitting) >= 3
    costs = [r.hours * r.count for r in fitting]
    assert costs == sorted(costs)
    assert all(r.fits for r in found[: len(fitting)])
    for r in fitting:
        assert r.memory_per_gpu_bytes <= resolve_gpu("RTX4090").memory_gib * GIB


def test_an_integer_stored_base_says_more_gpus_will_not_help() -> None:
    """Issue 13: "more GPUs will not help" when every GPU must hold the whole frozen base (int8 cannot be
    sharded by FSDP/ZeRO-3)."""
    w = train("llama-3-70b", base_precision="int8", micro_batch=1)
    _, found = search(w, "L40S")
    wont = [r for r in found if not r.fits]
    assert len(wont) == 1
    assert "will not help" in wont[0].change and "int8" in wont[0].change
    assert wont[0].memory_per_gpu_bytes > resolve_gpu("L40S").memory_gib * GIB
    assert wont[0].to_json()["hours"] is None  # what does not fit has no time
    assert found[0].fits  # something else does (a 4-bit base)


def test_unsharded_data_parallelism_says_every_gpu_holds_the_whole_base() -> None:
    _, found = search(EXAMPLE_LORA, "RTX4090")
    wont = [r for r in found if not r.fits]
    assert [r.updates for r in wont] == [{"count": 1024}]
    assert "whole frozen base" in wont[0].change
    sharded = [r for r in found if r.fits and r.updates.get("train.sharding") == "fsdp"]
    assert sharded and sharded[0].count > 1


def test_pretraining_is_never_told_to_switch_to_lora() -> None:
    w = train("llama-3.1-8b", task="train", method="full", seq_len=8192, micro_batch=2)
    _, found = search(w, "A100", count=8)
    assert found and found[0].fits
    assert all("train.method" not in r.updates for r in found)


def test_a_full_fine_tune_may_be_told_lora_or_qlora() -> None:
    _, found = search(train("llama-3-8b", method="full", micro_batch=1), "L40S")
    methods = {r.updates.get("train.method") for r in found if r.fits}
    assert "qlora" in methods


def test_a_cnn_is_offered_only_what_a_cnn_takes() -> None:
    w = parse_workload(
        {
            "task": "train",
            "model": {"preset": "resnet-50"},
            "train": {"method": "full", "precision": "bf16", "samples": 1e6, "micro_batch": 2048},
        },
        "cnn.toml",
    )
    base, found = search(w, "T4")
    assert not base.fits
    assert found and found[0].fits
    keys = {k for r in found for k in r.updates}
    assert not keys & {"train.method", "train.seq_len", "train.fused_kernels", "train.base_precision"}
    assert "train.micro_batch" in keys


def test_a_cnn_is_told_what_checkpointing_costs_in_time() -> None:
    """Full checkpointing reruns the forward of a ResNet in the backward: the remedy's time says ×1.33, not
    ×1.00, and the cheaper change (a smaller micro batch at the same speed) ranks first."""
    w = parse_workload(
        {
            "task": "train",
            "model": {"preset": "resnet-50"},
            "train": {"method": "full", "precision": "fp16", "samples": 1e6, "micro_batch": 512},
        },
        "cnn.toml",
    )
    base, found = search(w, "T4")
    assert not base.fits
    ckpt = by_key(found, "train.activation_checkpointing")
    assert ckpt.updates == {"train.activation_checkpointing": "full"}
    assert ckpt.time_ratio == pytest.approx(4 / 3, rel=0.01)
    assert set(found[0].updates) == {"train.micro_batch"} and found[0].time_ratio == pytest.approx(1.0)


def test_inference_gets_smaller_concurrency_lower_precision_and_tensor_parallelism() -> None:
    w = serve("llama-3-70b", concurrency=64)
    base, found = search(w, "H100")
    assert not base.fits
    kinds = {k for r in found if r.fits for k in r.updates}
    assert {"inference.weights_precision", "inference.tensor_parallel", "count"} <= kinds
    tp = next(r for r in found if "inference.tensor_parallel" in r.updates)
    assert tp.updates["count"] == tp.updates["inference.tensor_parallel"] == tp.count
    assert all(not k.startswith("train.") for k in kinds)
    conc = [r for r in found if "inference.concurrency" in r.updates]
    assert all(isinstance(v, int) and v < 64 for r in conc for v in [r.updates["inference.concurrency"]])


def test_too_few_gpus_for_the_tensor_parallel_group_gets_the_gpus_it_needs() -> None:
    w = serve("llama-3-8b", tensor_parallel=2)
    base, found = search(w, "H100")
    assert base.infeasible_reason is not None and not base.fits
    assert found[0].updates == {"count": 2}
    assert found[0].fits and math.isnan(found[0].time_ratio)  # no time to compare with


def test_apply_updates_validates_the_section_whole() -> None:
    w = train("llama-3-8b")
    assert apply_updates(w, 1, {"train.no_such_key": 1}) is None
    assert apply_updates(w, 1, {"inference.concurrency": 1}) is None  # a training workload has none
    # ZeRO-Offload needs a ZeRO stage: the section's own rule rejects it alone
    assert apply_updates(w, 1, {"train.offload": "optimizer"}) is None
    applied = apply_updates(w, 1, {"train.sharding": "zero2", "train.offload": "optimizer", "count": 4})
    assert applied is not None
    w2, count = applied
    assert count == 4 and w2.train is not None and w2.train.offload == "optimizer"
    assert w.train is not None and w.train.offload == "none"  # the original is untouched


def test_json_of_a_remedy() -> None:
    _, found = search(EXAMPLE_LORA, "RTX4090")
    doc = found[0].to_json()
    assert set(doc) == {
        "change",
        "set",
        "fits",
        "memory_per_gpu_gib",
        "hours",
        "gpu_hours",
        "count",
        "time_ratio",
    }
    assert doc["fits"] is True and doc["set"] == found[0].updates
    assert doc["gpu_hours"] == pytest.approx(found[0].hours * found[0].count)


def test_plan_sentence_names_the_first_remedy() -> None:
    w = EXAMPLE_LORA
    text = first_remedy_text(w, resolve_gpu("RTX4090"), 1)
    assert text is not None
    _, found = search(w, "RTX4090")
    assert found[0].change in text and "RTX4090" in text
    assert first_remedy_text(w, resolve_gpu("H100"), 1) is None  # it fits: nothing to say


def test_when_nothing_fits_it_says_so_with_the_closest_on_few_gpus() -> None:
    """A 5B-parameter generic model without a layer count trained at micro_batch 64 on a 15 GiB T4: FSDP
    and parameter offload gather all its weights at once (10 GB in BF16), so no change gpuwise models fits;
    the answer names the closest change, on the fewest GPUs that come within 5 % of its memory, not on the
    1024 the search tries first. (This was SDXL's UNet until its preset gained its 87 blocks.)"""
    w = parse_workload(
        {
            "task": "train",
            "model": {"kind": "generic", "params": 5e9, "flops_per_sample": 1e13},
            "train": {"method": "full", "precision": "bf16", "samples": 1e6, "micro_batch": 64},
        },
        "generic.toml",
    )
    base, found = search(w, "T4")
    assert not base.fits
    assert found and not any(r.fits for r in found)
    closest = found[-1]
    assert closest.change.startswith("nothing gpuwise can change fits on a 15 GiB T4")
    assert closest.memory_per_gpu_bytes > resolve_gpu("T4").memory_gib * GIB
    assert closest.count < 1024
    assert closest.memory_per_gpu_bytes < base.memory.total / 10
