"""The fp32 embedding and output head that peft's prepare_model_for_kbit_training leaves on an NF4 base
(issue 11 item 4): charged on the HF stack under fp16, where nothing casts them back, and nowhere else."""

from __future__ import annotations

from typing import Any

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import estimate
from gpuwise.workload import Workload, parse_workload

# llama-2-7b: 32,000 × 4,096 embedding, untied output head of the same size.
EMB_AND_HEAD = 2 * 32000 * 4096


def _w(**train: Any) -> Workload:
    t: dict[str, Any] = {
        "method": "lora",
        "samples": 1000.0,
        "seq_len": 1024,
        "micro_batch": 1,
        "global_batch": 16,
        "activation_checkpointing": "full",
        "base_precision": "nf4",
    }
    t.update(train)
    return parse_workload({"task": "finetune", "model": {"preset": "llama-2-7b"}, "train": t}, "u.toml")


def _weights(**train: Any) -> float:
    return estimate(_w(**train), resolve_gpu("V100-32GB")).memory.weights


def test_fp16_nf4_on_hf_keeps_embedding_and_head_in_fp32() -> None:
    fp16 = _weights(precision="fp16", framework="hf")
    bf16 = _weights(precision="bf16", framework="hf")
    # 4 B instead of 2 B for every embedding and head parameter; nothing else differs between the two.
    assert fp16 - bf16 == EMB_AND_HEAD * 2
    est = estimate(_w(precision="fp16", framework="hf"), resolve_gpu("V100-32GB"))
    assert any("prepare_model_for_kbit_training" in a for a in est.assumptions)


def test_upcast_only_where_peft_casts_and_nothing_casts_back() -> None:
    # LitGPT (lightning) and Unsloth do not call peft's function; an int8 or GPTQ base is not charged
    # (GPTQ is skipped by the function; int8's March 2023 predecessor upcast only the norms).
    for stack in ("lightning", "unsloth"):
        assert _weights(precision="fp16", framework=stack) == _weights(precision="bf16", framework=stack)
    for base in ("int8", "gptq-4bit"):
        fp16 = _weights(precision="fp16", framework="hf", base_precision=base)
        assert fp16 == _weights(precision="bf16", framework="hf", base_precision=base)
