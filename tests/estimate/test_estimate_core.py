"""The estimator: memory parts, fit, scaling, honesty about missing figures, calibration, speed."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from gpuwise.catalog.models import Figure, GpuSpec
from gpuwise.catalog.specs import resolve_gpu
from gpuwise.errors import ConfigError
from gpuwise.estimate import estimate, load_calibration
from gpuwise.workload import Workload, parse_workload

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "estimate"
GIB = 1024**3


def work(task: str = "finetune", model: str = "llama-3-8b", **train: Any) -> Workload:
    """A workload on the tuned stack (these tests check the mechanics; stacks are tested on their own)."""
    t = {"method": "full", "precision": "bf16", "tokens": 1e8, "seq_len": 2048, "micro_batch": 1}
    t["framework"] = "tuned"
    t.update(train)
    return parse_workload({"task": task, "model": {"preset": model}, "train": t}, "t.toml")


def serve(**inf: Any) -> Workload:
    i = {"prompt_tokens": 1000, "output_tokens": 200, "concurrency": 32, "requests": 10000}
    i.update(inf)
    return parse_workload({"task": "inference", "model": {"preset": "llama-3-70b"}, "inference": i}, "s.toml")


def test_full_finetune_model_states_are_16_bytes_per_param() -> None:
    est = estimate(work(), resolve_gpu("H100"))
    m = est.memory
    assert (m.weights + m.gradients + m.optimizer) / 8.03e9 == pytest.approx(16, rel=0.01)
    assert not est.fits
    assert est.bottleneck == "memory_capacity"


def test_zero3_shards_everything_and_fits_on_eight() -> None:
    est = estimate(work(sharding="fsdp", activation_checkpointing="full"), resolve_gpu("H100"), 8)
    assert est.fits
    assert est.memory.optimizer / 8.03e9 == pytest.approx(12 / 8, rel=0.01)


def test_qlora_base_is_nf4_with_scales() -> None:
    est = estimate(work(method="qlora", activation_checkpointing="full"), resolve_gpu("RTX4090"))
    # 7.5B quantized params × 0.516 B + 2 × 0.525B embeddings in BF16 ≈ 5.9 GB.
    assert 5.0 * GIB < est.memory.weights < 6.5 * GIB
    assert est.fits


def test_kv_cache_counts_grouped_query_heads() -> None:
    gpu = resolve_gpu("H200")
    est = estimate(serve(), gpu, 2)
    # Llama 3 70B: 2 × 80 layers × 8 KV heads × 128 × 2 B = 320 KiB per token.
    assert est.memory.kv_cache == pytest.approx(327680 * 1200 * 32, rel=0.01)
    fp8 = estimate(serve(kv_precision="fp8"), gpu, 2)
    assert fp8.memory.kv_cache == pytest.approx(est.memory.kv_cache / 2)
    assert est.throughput_unit == "output tokens/s"


def test_decode_is_memory_bound_at_small_concurrency() -> None:
    est = estimate(serve(concurrency=1, tensor_parallel=2), resolve_gpu("H100"), 2)
    assert est.bottleneck == "memory_bandwidth"
    # One stream streams ~70 GB of BF16 weights per token: tens of tokens/s, not thousands.
    assert 10 < est.throughput_total < 40


def test_target_rate_mode_says_whether_it_is_met() -> None:
    w = serve(requests=None, target_output_tokens_per_s=1e6, duration_hours=10.0, tensor_parallel=2)
    est = estimate(w, resolve_gpu("H100"), 2)
    assert est.meets_target is False
    assert est.hours > 10
    w = serve(requests=None, target_output_tokens_per_s=1.0, duration_hours=10.0, tensor_parallel=2)
    assert estimate(w, resolve_gpu("H100"), 2).hours == 10


def test_multi_node_on_ethernet_is_communication_bound() -> None:
    w = work(model="llama-3-70b", sharding="fsdp", activation_checkpointing="full")
    est = estimate(w, resolve_gpu("L40S"), 16, 2)
    assert est.bottleneck in ("communication", "memory_capacity")
    assert est.details["data_parallel_comm_s"] > est.details["compute_s"]
    assert any("Ethernet" in a for a in est.assumptions)


def test_nodes_default_and_validation() -> None:
    assert estimate(work(), resolve_gpu("H100"), 16).nodes == 2
    assert estimate(work(), resolve_gpu("H100"), 8).nodes == 1
    uneven = estimate(work(), resolve_gpu("H100"), 10, 4)  # asked for: 3 + 3 + 2 + 2 GPUs
    assert uneven.nodes == 4
    assert any("uneven layout" in a for a in uneven.assumptions)
    with pytest.raises(ConfigError):
        estimate(work(), resolve_gpu("H100"), 2, 3)
    with pytest.raises(ConfigError):
        estimate(work(), resolve_gpu("H100"), 0)


def test_tensor_parallel_larger_than_count_is_an_answer_not_a_crash() -> None:
    est = estimate(work(tensor_parallel=4), resolve_gpu("H100"), 2)
    assert not est.fits
    assert est.infeasible_reason and "at least 4" in est.infeasible_reason
    assert est.to_json()["hours"] is None


def _bare_gpu(**tflops: float | None) -> GpuSpec:
    return GpuSpec(
        name="TESTGPU",
        vendor="NVIDIA",
        architecture="Turing",
        memory_gib=16,
        memory_bandwidth_gbs=Figure(320, "test"),
        tflops={k: Figure(v, "test") for k, v in tflops.items()},
        nvlink_bidir_gbs=Figure(None, "none"),
        pcie_gen=3,
        tdp_watts=Figure(70, "test"),
        compute_capability="7.5",
        form_factor="PCIe",
    )


def test_missing_bf16_falls_back_to_fp16_and_says_so() -> None:
    est = estimate(work(model="gpt2"), _bare_gpu(fp16=65.0), 1)
    assert est.throughput_per_gpu > 0
    assert any("no dense BF16 peak" in a for a in est.assumptions)


def test_no_published_peak_is_declared_impossible() -> None:
    est = estimate(work(model="gpt2"), _bare_gpu(), 1)
    assert math.isinf(est.hours)
    assert est.infeasible_reason and "no published" in est.infeasible_reason
    doc = est.to_json()  # no speed at all: null, never a 0 that reads like a measurement
    assert doc["hours"] is None and doc["mfu"] is None
    assert doc["throughput_per_gpu"] is None and doc["throughput_total"] is None


def test_fp8_is_faster_than_bf16_on_hopper_but_not_twice() -> None:
    gpu = resolve_gpu("H100")
    bf16 = estimate(work(model="llama-3-8b", precision="bf16", sharding="fsdp"), gpu, 8)
    fp8 = estimate(work(model="llama-3-8b", precision="fp8", sharding="fsdp"), gpu, 8)
    assert 1.2 < bf16.hours / fp8.hours < 2
    a100 = estimate(work(model="gpt2", precision="fp8"), resolve_gpu("A100-80GB"), 1)
    assert any("no FP8" in a for a in a100.assumptions)


def test_every_estimate_lists_sourced_assumptions() -> None:
    est = estimate(work(sharding="zero3"), resolve_gpu("H100"), 16)
    text = " ".join(est.assumptions)
    for phrase in ("Korthikanti", "ZeRO", "max_training_efficiency", "InfiniBand", "meta-llama"):
        assert phrase in text


def test_cnn_uses_flops_per_sample() -> None:
    w = parse_workload(
        {
            "task": "train",
            "model": {"preset": "resnet-50"},
            "train": {
                "method": "full",
                "precision": "bf16",
                "samples": 1281167,
                "epochs": 90,
                "micro_batch": 256,
            },
        },
        "r.toml",
    )
    est = estimate(w, resolve_gpu("A100-80GB"), 8)
    assert est.throughput_unit == "samples/s"
    # DGX A100 trains ResNet-50 at roughly 2-3k images/s per GPU (NVIDIA DeepLearningExamples).
    assert 1500 < est.throughput_per_gpu < 4000


def test_calibration_replaces_default_efficiency() -> None:
    cal = load_calibration(FIXTURES / "bench-h100.json")
    assert cal.gpu == "H100"
    assert cal.gemm_fraction["bf16"] == pytest.approx(0.6)
    gpu = resolve_gpu("H100")
    plain = estimate(work(sharding="fsdp"), gpu, 8)
    slow = estimate(work(sharding="fsdp"), gpu, 8, calibration=cal)
    assert slow.hours > plain.hours
    assert any("calibration" in a for a in slow.assumptions)
    other = estimate(work(sharding="fsdp"), resolve_gpu("A100-80GB"), 8, calibration=cal)
    assert any("not used" in a for a in other.assumptions)


def test_bad_calibration_file(tmp_path: Path) -> None:
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"machine": {}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="no 'results'"):
        load_calibration(bad)
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not (readable )?JSON"):
        load_calibration(bad)


def test_fp8_speeds_up_only_the_linear_layers() -> None:
    """FP8 gains less than its GEMM speed-up, and least at long sequences where attention dominates."""
    h100 = resolve_gpu("H100")

    def gain(seq: int) -> float:
        fp8 = estimate(work(precision="fp8", seq_len=seq), h100, 8).throughput_per_gpu
        bf16 = estimate(work(precision="bf16", seq_len=seq), h100, 8).throughput_per_gpu
        return fp8 / bf16

    short, long = gain(2048), gain(65536)
    assert 1.4 < short < 1.7
    assert 1.0 < long < short - 0.2


def test_fp8_is_no_faster_on_a_gpu_without_fp8_tensor_cores() -> None:
    a100 = resolve_gpu("A100-80GB")
    fp8 = estimate(work(precision="fp8"), a100, 8)
    bf16 = estimate(work(precision="bf16"), a100, 8)
    assert fp8.throughput_per_gpu == pytest.approx(bf16.throughput_per_gpu)
    assert any("no FP8 tensor cores" in a for a in fp8.assumptions)


def test_cnn_training_is_bounded_by_memory_bandwidth_too() -> None:
    """Same tensor peak, a quarter of the bandwidth: ResNet-50 slows down, a large transformer does not."""
    from dataclasses import replace

    l40s = resolve_gpu("L40S")
    bw = l40s.memory_bandwidth_gbs.value
    assert bw is not None
    starved = replace(l40s, memory_bandwidth_gbs=Figure(bw / 4, "test"))
    cnn = parse_workload(
        {
            "task": "train",
            "model": {"preset": "resnet-50"},
            "train": {"method": "full", "precision": "fp16", "samples": 1e6, "micro_batch": 256},
        },
        "cnn.toml",
    )
    fast, slow = estimate(cnn, l40s), estimate(cnn, starved)
    assert slow.throughput_per_gpu < 0.5 * fast.throughput_per_gpu
    assert any("memory traffic" in a for a in slow.assumptions)
    llm = work(model="llama-3-8b", precision="bf16", sharding="fsdp")
    assert estimate(llm, starved, 8).throughput_per_gpu == pytest.approx(
        estimate(llm, l40s, 8).throughput_per_gpu
    )


def test_lora_on_attention_only_trains_fewer_parameters_than_on_all_linear_layers() -> None:
    gpu = resolve_gpu("A100-80GB")
    full = estimate(work(method="lora", lora_rank=64), gpu)
    attn = estimate(work(method="lora", lora_rank=64, lora_targets="attention"), gpu)
    # Llama 3 8B, rank 64: q,k,v,o adapters = 32 · 64 · (2·(4096+4096) + 2·(4096+1024)) = 54.5M params;
    # the MLP's three matrices add 32 · 64 · 3 · (4096+14336) = 113M more. Each costs 4 (weight) + 4 (grad)
    # + 8 (AdamW) bytes.
    saved = (full.memory.total - attn.memory.total) / (113.2e6 * 16)
    assert 0.95 < saved < 1.1
    assert any("attention (q, k, v, o)" in a for a in attn.assumptions)
    assert attn.hours == pytest.approx(full.hours, rel=0.01)  # the frozen base's GEMMs dominate the time


def test_hf_framework_counts_the_fp32_copies_of_the_logits() -> None:
    gpu = resolve_gpu("A100-80GB")
    generic = estimate(work(method="qlora", seq_len=8192, activation_checkpointing="full"), gpu)
    hf = estimate(work(method="qlora", seq_len=8192, activation_checkpointing="full", framework="hf"), gpu)
    extra = hf.memory.activations - generic.memory.activations
    assert extra == pytest.approx(8192 * 128256 * (16 - 6), rel=1e-6)
    assert any(a.startswith("hf_loss_bytes_per_element = 16") for a in hf.assumptions)
    assert not any(a.startswith("hf_loss_bytes_per_element") for a in generic.assumptions)


def test_plain_1f1b_pipeline_has_a_larger_bubble_than_interleaved() -> None:
    gpu = resolve_gpu("H100")
    kw: dict[str, Any] = {"tokens": 1e9, "seq_len": 4096, "global_batch": 64, "tensor_parallel": 8}
    inter = estimate(work("train", "llama-3-70b", pipeline_parallel=4, **kw), gpu, 64)
    plain = estimate(
        work("train", "llama-3-70b", pipeline_parallel=4, pipeline_schedule="1f1b", **kw), gpu, 64
    )
    # 2 data-parallel replicas × 32 micro batches: bubble 3/(4·32+3) interleaved vs 3/(32+3) plain.
    ratio = plain.details["compute_s"] / inter.details["compute_s"]
    assert ratio == pytest.approx((1 - 3 / 131) / (1 - 3 / 35), rel=1e-6)
    assert any("plain 1F1B" in a for a in plain.assumptions)
    # Without pipeline parallelism the schedule changes nothing.
    a = estimate(work("train", "llama-3-8b", tokens=1e9), gpu, 8)
    b = estimate(work("train", "llama-3-8b", tokens=1e9, pipeline_schedule="1f1b"), gpu, 8)
    assert a.hours == b.hours


def test_checkpoint_size_reads_the_estimators_own_tables() -> None:
    """plan kept its own checkpoint table: Adafactor 0 B/param there vs 0.5 here, LoRA targets ignored, and
    8-bit AdamW's new spellings fell back to 8 B/param. There is one home now."""
    from gpuwise.estimate import memory_constants as K  # noqa: N812 - the memory constants table
    from gpuwise.estimate.checkpoint import checkpoint_size
    from gpuwise.workload.loading import parse_workload

    def work(**train: object) -> object:
        base = {"method": "full", "precision": "bf16", "tokens": 1e9, "seq_len": 2048, "micro_batch": 1}
        return parse_workload(
            {"task": "train", "model": {"preset": "llama-3-8b"}, "train": {**base, **train}}, "t"
        )

    full = checkpoint_size(work(optimizer="adafactor"))  # type: ignore[arg-type]
    params = 8.03e9
    assert full.bytes / params == pytest.approx(2 + 4 + K.OPTIMIZER_STATE_BYTES["adafactor"], rel=0.01)
    paged = checkpoint_size(work(optimizer="paged-adamw-8bit"))  # type: ignore[arg-type]
    assert paged.bytes / params == pytest.approx(2 + 4 + 2, rel=0.01)
    everything = checkpoint_size(work(method="lora", lora_targets="all"))  # type: ignore[arg-type]
    attention = checkpoint_size(work(method="lora", lora_targets="attention"))  # type: ignore[arg-type]
    assert attention.bytes < everything.bytes
