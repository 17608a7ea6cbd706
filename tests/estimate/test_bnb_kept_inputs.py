"""What bitsandbytes before 0.43.2 kept for an NF4 base (issue 11 item 4): its MatMul4Bit saved the input of
every 4-bit linear for the backward (bitsandbytes PR #1270). Named in the assumptions with its size, not
charged: current releases do not keep it."""

from __future__ import annotations

from typing import Any

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import estimate
from gpuwise.estimate.models import Estimate
from gpuwise.units import GIB
from gpuwise.workload import parse_workload

# llama-2-7b: 32 layers, hidden 4,096 (32 heads × 128), MLP 11,008. Inputs of the q/k/v, output, MLP and
# down projections: 2·4096 + 2·4096 + 2·4096 + 2·11008 bytes per token per layer in bf16.
PER_TOKEN_LAYER = 2 * 4096 * 3 + 2 * 11008
NOTE = "bitsandbytes before 0.43.2"


def _est(**train: Any) -> Estimate:
    t: dict[str, Any] = {
        "method": "lora",
        "precision": "bf16",
        "tokens": 1e6,
        "seq_len": 1024,
        "micro_batch": 2,
        "lora_rank": 8,
        "lora_targets": "attention",
        "activation_checkpointing": "none",
        "base_precision": "nf4",
        "framework": "lightning",
    }
    t.update(train)
    w = parse_workload({"task": "finetune", "model": {"preset": "llama-2-7b"}, "train": t}, "u.toml")
    return estimate(w, resolve_gpu("A100"))


def _notes(e: Estimate) -> list[str]:
    return [a for a in e.assumptions if NOTE in a]


def test_nf4_base_names_the_inputs_old_bitsandbytes_kept() -> None:
    (note,) = _notes(_est())
    gib = 32 * PER_TOKEN_LAYER * 2 * 1024 / GIB
    assert f"+{gib:.2f} GiB" in note


def test_note_charges_nothing_and_only_where_it_applies() -> None:
    # Informational: an NF4 base's activations exceed a bf16 base's by the one dequantized MLP matrix only.
    dequant = 2 * 4096 * 11008 * 2
    diff = _est().memory.activations - _est(base_precision="bf16").memory.activations
    assert abs(diff - dequant) < 1.0
    assert _notes(_est(framework="hf"))  # peft's and Lightning's NF4 layers ran MatMul4Bit
    assert not _notes(_est(framework="unsloth"))  # Unsloth's LoRA kernels dequantize and multiply themselves
    # A 16-bit or int8 base never ran MatMul4Bit; under full checkpointing only one layer is live.
    for other in (
        {"base_precision": "bf16"},
        {"base_precision": "int8"},
        {"activation_checkpointing": "full"},
    ):
        assert not _notes(_est(**other))
