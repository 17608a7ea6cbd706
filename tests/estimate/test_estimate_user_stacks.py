"""Estimates for real users' jobs (issue 11): stacks, sample lengths, quantized bases, ranges, fit verdicts,
multi-node bandwidth, every catalog GPU, and the accuracy on the user-reported table's held-out rows."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.catalog.models import Figure
from gpuwise.catalog.specs import load_gpu_specs, resolve_gpu
from gpuwise.cli.main import main
from gpuwise.estimate import estimate
from gpuwise.workload import Workload, parse_workload

REPO = Path(__file__).resolve().parents[2]
USER_TABLE = REPO / "tests" / "estimate" / "user_reports.toml"
STACKS = [
    "hf",
    "axolotl",
    "llama-factory",
    "unsloth",
    "accelerate-fsdp",
    "deepspeed",
    "lightning",
    "torchtitan",
    "megatron",
    "nanogpt",
    "tuned",
]


def lora(**train: Any) -> Workload:
    t: dict[str, Any] = {
        "method": "lora",
        "precision": "bf16",
        "samples": 20000.0,
        "seq_len": 2048,
        "micro_batch": 4,
        "global_batch": 32,
        "activation_checkpointing": "full",
    }
    t.update(train)
    return parse_workload({"task": "finetune", "model": {"preset": "llama-2-7b"}, "train": t}, "u.toml")


def _bench() -> ModuleType:
    path = REPO / "benchmarks" / "estimate_accuracy.py"
    spec = importlib.util.spec_from_file_location("estimate_accuracy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["estimate_accuracy"] = module
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------------------------- defaults


def test_a_newcomer_gets_the_common_stack_and_one_line_per_default() -> None:
    est = estimate(lora(), resolve_gpu("A100-80GB"))
    lines = est.assumptions
    assert est.stack == "hf"
    assert sum(a.startswith("no framework given: assuming hf") for a in lines) == 1
    assert sum(a.startswith("no avg_tokens") for a in lines) == 1
    assert sum(a.startswith("no base_precision") for a in lines) == 1
    named = estimate(lora(framework="unsloth", avg_tokens=500.0, base_precision="bf16"), resolve_gpu("A100"))
    assert not any(
        a.startswith(("no framework", "no avg_tokens", "no base_precision")) for a in named.assumptions
    )


def test_default_stack_follows_task_and_method() -> None:
    h100 = resolve_gpu("H100")
    full = parse_workload(
        {
            "task": "train",
            "model": {"preset": "gpt2"},
            "train": {
                "method": "full",
                "precision": "bf16",
                "tokens": 1e9,
                "seq_len": 1024,
                "micro_batch": 8,
            },
        },
        "p.toml",
    )
    assert estimate(full, h100).stack == "nanogpt"
    assert estimate(lora(method="full", sharding="fsdp"), h100, 8).stack == "accelerate-fsdp"
    assert estimate(lora(method="full", sharding="zero2"), h100, 8).stack == "deepspeed"


def test_user_stacks_are_slower_than_tuned_and_say_why() -> None:
    gpu = resolve_gpu("A100-80GB")
    tuned = estimate(lora(framework="tuned"), gpu)
    hf = estimate(lora(framework="hf"), gpu)
    assert hf.hours > tuned.hours
    assert any(a.startswith("stack hf:") for a in hf.assumptions)


# ------------------------------------------------------------------------------------------------ properties


@settings(max_examples=30, deadline=None)
@given(
    stack=st.sampled_from(STACKS),
    gpu=st.sampled_from(["H100", "A100", "L4", "RTX4090", "A10G", "T4", "MI300X"]),
    count=st.sampled_from([1, 2, 8, 16]),
    method=st.sampled_from(["lora", "qlora", "full"]),
)
def test_hours_low_le_hours_le_hours_high(stack: str, gpu: str, count: int, method: str) -> None:
    est = estimate(lora(framework=stack, method=method, sharding="fsdp"), resolve_gpu(gpu), count)
    assert est.hours_low <= est.hours <= est.hours_high
    doc = est.to_json()
    assert isinstance(doc["hours_low"], float) and isinstance(doc["hours_high"], float)
    assert doc["throughput_low"] <= doc["throughput_total"] <= doc["throughput_high"]


@settings(max_examples=25, deadline=None)
@given(
    stack=st.sampled_from(STACKS),
    gpu=st.sampled_from(["A100-80GB", "RTX3090", "L4", "H100"]),
    micro=st.integers(1, 8),
)
def test_int8_base_is_slower_than_bf16_base(stack: str, gpu: str, micro: int) -> None:
    g = resolve_gpu(gpu)
    bf16 = estimate(lora(framework=stack, micro_batch=micro, base_precision="bf16"), g)
    int8 = estimate(lora(framework=stack, micro_batch=micro, base_precision="int8"), g)
    assert int8.hours > bf16.hours
    assert int8.memory.weights < bf16.memory.weights
    assert any("int8_base_speed" in a for a in int8.assumptions)


def test_qlora_is_lora_with_an_nf4_base_and_8bit_optimizer_names_agree() -> None:
    gpu = resolve_gpu("RTX4090")
    alias = estimate(lora(method="qlora", optimizer="adamw8bit"), gpu)
    spelled = estimate(lora(base_precision="nf4", optimizer="paged-adamw-8bit"), gpu)
    assert alias.hours == pytest.approx(spelled.hours)
    assert alias.memory.total == pytest.approx(spelled.memory.total)
    assert (
        estimate(lora(base_precision="gptq-4bit"), gpu).memory.weights < estimate(lora(), gpu).memory.weights
    )


@settings(max_examples=40, deadline=None)
@given(
    stack=st.sampled_from(STACKS),
    seq=st.sampled_from([256, 512, 2048, 8192]),
    frac=st.floats(0.02, 1.0),
    micro=st.integers(1, 16),
    grouped=st.booleans(),
)
def test_padding_is_never_faster_than_packing(
    stack: str, seq: int, frac: float, micro: int, grouped: bool
) -> None:
    gpu = resolve_gpu("A100-80GB")
    avg = max(1.0, frac * seq)
    common = {"framework": stack, "seq_len": seq, "avg_tokens": avg, "micro_batch": micro}
    packed = estimate(lora(packing=True, **common), gpu)
    padded = estimate(lora(packing=False, group_by_length=grouped, **common), gpu)
    assert padded.hours >= packed.hours * (1 - 1e-9)


def test_unpacked_batches_pad_to_the_expected_longest_sample() -> None:
    gpu = resolve_gpu("A100-80GB")
    one = estimate(lora(avg_tokens=300.0, micro_batch=1), gpu).details["padding_factor"]
    eight = estimate(lora(avg_tokens=300.0, micro_batch=8), gpu).details["padding_factor"]
    grouped = estimate(lora(avg_tokens=300.0, micro_batch=8, group_by_length=True), gpu).details[
        "padding_factor"
    ]
    assert one == pytest.approx(1.0)
    assert eight > 1.5 > grouped >= 1.0


@settings(max_examples=30, deadline=None)
@given(
    stack=st.sampled_from(STACKS),
    low=st.floats(1.0, 400.0),
    factor=st.floats(1.0, 20.0),
    count=st.sampled_from([(16, 2), (10, 4), (32, 4)]),
    sharding=st.sampled_from(["none", "fsdp", "zero2"]),
)
def test_more_inter_node_bandwidth_is_never_slower(
    stack: str, low: float, factor: float, count: tuple[int, int], sharding: str
) -> None:
    gpu = resolve_gpu("L40S")
    w = lora(framework=stack, method="full", sharding=sharding)
    slow = estimate(w, gpu, count[0], count[1], network_gbps=low)
    fast = estimate(w, gpu, count[0], count[1], network_gbps=low * factor)
    assert fast.hours <= slow.hours * (1 + 1e-9)


def test_network_default_is_stated_and_overridable() -> None:
    gpu = resolve_gpu("A10G")
    w = lora(method="full", sharding="fsdp")
    default = estimate(w, gpu, 8, 2)
    assert any("25 Gb/s Ethernet per node assumed" in a for a in default.assumptions)
    fast = estimate(w, gpu, 8, 2, network_gbps=400.0)
    assert fast.hours < default.hours
    assert any("400 Gb/s per node (given" in a for a in fast.assumptions)


def test_instance_network_comes_from_the_catalog_where_listed() -> None:
    from gpuwise.catalog.specs import instance_network_gbps

    assert instance_network_gbps("aws", "p5.48xlarge") == (3200.0, "3200 Gbps EFAv2")
    assert instance_network_gbps("AWS", "g5.12xlarge") == (40.0, "40 Gigabit")
    assert instance_network_gbps("aws", "no-such-type") is None
    gpu = resolve_gpu("H100")
    w = lora(method="full", sharding="fsdp")
    efa = estimate(w, gpu, 16, 2, network_gbps=3200.0)
    ethernet = estimate(w, gpu, 16, 2, network_gbps=100.0)
    assert efa.hours < ethernet.hours


# ---------------------------------------------------------------------------------------- fit verdicts


def test_need_within_the_allocator_margin_is_tight_not_fits() -> None:
    est = estimate(lora(), resolve_gpu("A100-80GB"))
    need = est.memory.total
    snug = replace(resolve_gpu("A100-80GB"), memory_gib=need / 1024**3 * 1.02)
    tight = estimate(lora(), snug)
    assert tight.fit_verdict == "tight" and not tight.fits
    assert estimate(lora(), replace(snug, memory_gib=need / 1024**3 * 1.5)).fit_verdict == "fits"
    assert estimate(lora(), replace(snug, memory_gib=need / 1024**3 * 0.9)).fit_verdict == "does_not_fit"


def test_fsdp_load_peak_and_host_ram_depend_on_meta_init() -> None:
    gpu = resolve_gpu("A100-80GB")
    eager = estimate(lora(method="full", sharding="fsdp", low_cpu_mem_usage=False), gpu, 8)
    meta = estimate(lora(method="full", sharding="fsdp", low_cpu_mem_usage=True), gpu, 8)
    assert eager.load_peak_bytes > 13e9  # the whole 6.7B model in bf16 on every GPU before sharding
    assert meta.load_peak_bytes == 0
    assert eager.host_ram_bytes > meta.host_ram_bytes
    assert eager.to_json()["load_peak_gib"] > 12
    # A 70B model materialised on each 80 GB GPU before sharding: does not fit while loading.
    big = parse_workload(
        {
            "task": "finetune",
            "model": {"preset": "llama-2-70b"},
            "train": {
                "method": "full",
                "precision": "bf16",
                "tokens": 1e8,
                "seq_len": 1024,
                "micro_batch": 1,
                "sharding": "fsdp",
                "activation_checkpointing": "full",
                "low_cpu_mem_usage": False,
            },
        },
        "b.toml",
    )
    assert estimate(big, gpu, 32).fit_verdict == "does_not_fit"


# ------------------------------------------------------------------------------------------------ GPUs


def test_every_catalog_gpu_gets_an_estimate_or_a_reason() -> None:
    for name, spec in load_gpu_specs().items():
        est = estimate(lora(base_precision="nf4"), spec)
        assert math.isfinite(est.hours) or est.infeasible_reason, name
        assert est.fit_verdict in ("fits", "tight", "does_not_fit"), name


def test_a_gpu_without_a_compute_figure_gets_a_memory_only_verdict() -> None:
    bare = replace(
        resolve_gpu("H100"),
        tflops={k: Figure(None, "not published (test)") for k in resolve_gpu("H100").tflops},
    )
    est = estimate(lora(), bare)
    assert est.infeasible_reason is not None
    assert est.fits and est.fit_verdict == "fits"
    assert est.to_json()["hours"] is None


def test_a10g_lora_example_has_a_throughput_and_a_fit_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", str(REPO / "examples/llama3-8b-lora.toml"), "--gpu", "A10G", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["throughput_per_gpu"] > 0
    assert doc["fit_verdict"] in ("fits", "tight", "does_not_fit")
    assert any("not datasheet" in a for a in doc["assumptions"])
    assert doc["hours_low"] <= doc["hours"] <= doc["hours_high"]


# ------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("train", "phrase"),
    [
        ('framework = "keras"', "train.framework"),
        ('base_precision = "int3"', "train.base_precision"),
        ("avg_tokens = 5000.0", "cannot exceed seq_len"),
        ("num_hidden_layers = 32", "layers"),
        ("hidden = 4096", "belongs in [model]"),
        ('method = "qlora"\nbase_precision = "int8"', 'method = "lora" with base_precision = "int8"'),
        ('offload = "optimizer"', 'needs sharding = "zero1"'),
        ('sharding = "zero2"\noffload = "optimizer+params"', 'write offload = "optimizer"'),
        ('offload = "gpu"', "train.offload"),
    ],
)
def test_bad_stack_keys_exit_two_with_the_fix(
    train: str, phrase: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ['task = "finetune"', "[model]", 'preset = "llama-2-7b"', "[train]"]
    if "method" not in train:
        lines.append('method = "lora"')
    lines += ['precision = "bf16"', "samples = 1000.0", "seq_len = 2048", "micro_batch = 1", train]
    path = tmp_path / "w.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["estimate", str(path), "--gpu", "A100"]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert phrase in err
    assert "To fix" in err
    assert "Traceback" not in err


def test_network_gbps_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", str(REPO / "examples/llama3-8b-lora.toml"), "--gpu", "H100:16", "--network-gbps", "0"]
    assert main(args) == 2
    assert "--network-gbps" in capsys.readouterr().err


# ------------------------------------------------------------------------------- accuracy on user reports


def test_held_out_split_is_by_hash_unless_the_row_names_its_set() -> None:
    bench = _bench()
    ids = [f"row-{i}" for i in range(200)]
    share = sum(bench.held_out({"id": i}) for i in ids) / len(ids)
    assert 0.3 < share < 0.5
    assert bench.held_out({"id": "x", "set": "holdout"}) and not bench.held_out({"id": "x", "set": "fit"})


# The thresholds below are the "Done when" lines. Those not met yet are strict xfails that record the
# true figures: the day one is met the test fails, and its marker has to go.
def _user_stats() -> dict[str, dict[str, float]]:
    if not USER_TABLE.exists():
        pytest.skip(
            "tests/estimate/user_reports.toml is not in this checkout yet (merged from the research branch)"
        )
    bench = _bench()
    results = bench.evaluate_table(bench.load_rows(USER_TABLE), "user")
    held = [r for r in results if r.held_out]
    return {"held": bench.stats(held), "fit": bench.stats([r for r in results if not r.held_out])}


def test_user_table_is_large_and_cited() -> None:
    if not USER_TABLE.exists():
        pytest.skip("tests/estimate/user_reports.toml is not in this checkout yet")
    rows = _bench().load_rows(USER_TABLE)
    assert len(rows) >= 40
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(len(r["source"]) > 30 for r in rows)


def test_held_out_user_rows_fall_inside_the_range_for_80_percent() -> None:
    s = _user_stats()["held"]
    assert s["coverage"] >= 0.80, s


def test_held_out_user_rows_median_error_within_25_percent() -> None:
    s = _user_stats()["held"]
    assert s["median"] <= 0.25, s


@pytest.mark.xfail(
    strict=True,
    reason="85 % (47 of 55) of held-out numeric rows are within 2× (target ≥ 90 %): the re-fit on the 96 fit "
    "rows moved no efficiency, and the sourced input corrections made after these rows missed (post hoc) "
    "brought one row in (Megatron-DeepSpeed's 600M memory, 2.01× → 0.84× once its tensor 2 × pipeline 2 "
    "layout is written) and moved two further out (alpaca-lora's March 2023 int8 LoRA on a 4090: 3.50× "
    "and 4.85× too slow once every sample is padded to 256 tokens, as that finetune.py did); the other "
    "misses are sources that contradict others (whyNLP issue #1 vs its README, two Stanford Alpaca "
    "reports 4.5× apart) and four rows gpuwise estimates 2.0-3.8× too slow (Qwen's LoRA and Q-LoRA "
    "profile on one A100, whose settings a maintainer confirmed; H2O LLM Studio's 13B nf4 on an A10G and "
    "7B bf16 on an A100, whose mean OASST length no source gives, so they assume every sample fills 512 "
    "tokens)",
)
def test_held_out_user_rows_90_percent_within_2x() -> None:
    s = _user_stats()["held"]
    assert s["within_2x"] >= 0.90, s


def test_lightning_is_fitted_to_its_fit_rows() -> None:
    """Lightning's efficiency is re-fitted on its fit rows (LitGPT config hub): residuals centre on 1."""
    if not USER_TABLE.exists():
        pytest.skip("tests/estimate/user_reports.toml is not in this checkout yet")
    bench = _bench()
    rows = [r for r in bench.load_rows(USER_TABLE) if r.get("stack") == "lightning" and not bench.held_out(r)]
    logs = [r.log_residual for r in bench.evaluate_table(rows, "user") if r.log_residual is not None]
    assert len(logs) >= 5
    assert abs(statistics.median(logs)) < 0.1, logs


@pytest.mark.parametrize(("gpu", "fraction"), [("RTX4090", 0.96), ("RTX3090", 1.08)])
def test_geforce_cards_use_their_measured_gemm_ceiling(gpu: str, fraction: float) -> None:
    """GeForce cards reach their datasheet peak in large GEMMs: the measured fraction, not the generation's
    default (Ada 0.50 made every RTX 4090 fit row 1.8-3.6× too slow), sets their efficiency."""
    from gpuwise.estimate import constants as K  # noqa: N812 - the constants table
    from gpuwise.estimate.hardware import default_efficiency
    from gpuwise.estimate.notes import Notes

    eff = default_efficiency(resolve_gpu(gpu), "bf16", Notes())
    assert eff == pytest.approx(fraction * K.TRAIN_EFF_PER_GEMM_FRACTION.value)
    est = estimate(lora(), resolve_gpu(gpu))
    assert any("sustained_gemm_fraction" in a for a in est.assumptions)


@pytest.mark.xfail(
    strict=True,
    reason="18 of 19 held-out fit verdicts are right: lit-llama's full fine-tune of LLaMA-7B under FSDP on "
    "4 × A100-40GB ran out of memory at micro-batch 1 (Lightning-AI/lit-llama#381), gpuwise says it fits; "
    "the cause was PyTorch 2.0's FSDP issuing all-gathers without a rate limit (lit-llama#389 set "
    "limit_all_gathers=True; PyTorch made it the default in pytorch#104900), not a cost of today's FSDP",
)
def test_held_out_user_rows_every_fit_verdict_right() -> None:
    s = _user_stats()["held"]
    assert s["fit_hit_rate"] == 1.0, s


def test_benchmark_prints_both_tables_per_stack(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    bench.print_tables()
    out = capsys.readouterr().out
    assert "validation table" in out
    assert "tuned (held-out)" in out
    if USER_TABLE.exists():
        assert "user table" in out and "hf (fit)" in out and "in [low, high]" in out


def full(**train: Any) -> Workload:
    t: dict[str, Any] = {
        "method": "full",
        "precision": "bf16",
        "samples": 52002.0,
        "seq_len": 512,
        "micro_batch": 2,
        "global_batch": 128,
        "sharding": "fsdp",
        "framework": "accelerate-fsdp",
    }
    t.update(train)
    return parse_workload({"task": "finetune", "model": {"preset": "llama-2-7b"}, "train": t}, "u.toml")


def test_cpu_offload_moves_memory_to_the_host_and_costs_time() -> None:
    a100 = resolve_gpu("A100")
    base = estimate(full(), a100, 4)
    opt = estimate(full(sharding="zero3", framework="deepspeed", offload="optimizer"), a100, 4)
    ds = estimate(full(sharding="zero3", framework="deepspeed"), a100, 4)
    both = estimate(full(offload="optimizer+params"), a100, 4)
    assert opt.memory.optimizer == 0 and opt.memory.total < ds.memory.total
    assert both.memory.total < base.memory.total / 2
    assert both.host_ram_bytes > base.host_ram_bytes + 3 * 6.7e9 * 12 / 4
    assert both.hours > 2 * base.hours
    assert opt.hours > ds.hours
    assert any("PCIe" in a for a in both.assumptions)


def test_deepspeed_zero_adds_its_fp32_gradient_partition_and_buckets() -> None:
    a100 = resolve_gpu("A100")
    fsdp = estimate(full(sharding="zero2", framework="accelerate-fsdp"), a100, 8)
    ds = estimate(full(sharding="zero2", framework="deepspeed"), a100, 8)
    # 4 B per local parameter + two 1 GB buckets
    extra = 6.74e9 / 8 * 4 + 2e9
    assert ds.memory.gradients - fsdp.memory.gradients == pytest.approx(extra, rel=0.05)


def test_an_integer_stored_base_is_not_sharded_by_fsdp() -> None:
    t4 = resolve_gpu("T4")
    int8 = estimate(lora(base_precision="int8", sharding="fsdp"), t4, 4)
    nf4 = estimate(lora(base_precision="nf4", sharding="fsdp"), t4, 4)
    assert int8.memory.weights > 6.0e9  # the whole 7B int8 base on every GPU
    assert nf4.memory.weights < 1.5e9  # NF4 (float quant storage) shards four ways


def test_fused_kernels_drop_the_fp32_logits_and_the_swiglu_activation() -> None:
    a100 = resolve_gpu("A100-80GB")
    plain = estimate(lora(activation_checkpointing="none", framework="hf"), a100, 1)
    fused = estimate(lora(activation_checkpointing="none", framework="hf", fused_kernels=True), a100, 1)
    tokens = 4 * 2048
    logits = tokens * 32000 * (16 - 2)
    swiglu = 32 * tokens * 2 * 11008
    assert plain.memory.activations - fused.memory.activations == pytest.approx(logits + swiglu, rel=0.01)


def test_a_4bit_base_costs_a_dequantization_per_micro_batch_not_a_fixed_factor() -> None:
    a100 = resolve_gpu("A100-80GB")

    def hours(base: str, micro: int) -> float:
        w = lora(base_precision=base, micro_batch=micro, global_batch=64, packing=True, framework="hf")
        return estimate(w, a100, 1).hours

    small = hours("nf4", 1) / hours("bf16", 1)
    large = hours("nf4", 16) / hours("bf16", 16)
    assert small > large > 1.0  # always slower, and the fixed per-call cost weighs most at small batches


def test_a_power_capped_card_trains_at_its_measured_gemm_rate() -> None:
    w = lora(base_precision="bf16", framework="hf")
    l4 = resolve_gpu("L4")
    est = estimate(w, l4, 1)
    # same card with the Ada default instead of the measured 0.47 of peak: faster by 0.50 / (0.47 × 0.67)
    default = estimate(w, replace(l4, name="L4-unmeasured"), 1)
    assert est.hours > 1.4 * default.hours
    assert any("sustained large-GEMM 47%" in a for a in est.assumptions)
