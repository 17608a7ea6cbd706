"""Workload files: every example and preset loads; every kind of bad input is one clear ConfigError."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from gpuwise.errors import ConfigError
from gpuwise.workload import get_preset, load_workload, parse_workload, preset_names
from gpuwise.workload.spec import default_framework

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))


def _lora(**train: Any) -> dict[str, Any]:
    base = {"method": "lora", "precision": "bf16", "tokens": 1e6, "seq_len": 1024, "micro_batch": 2}
    base.update(train)
    return {"task": "finetune", "model": {"preset": "llama-3-8b"}, "train": base}


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_workload(data, "work.toml")
    text = info.value.render()
    assert "work.toml" in text
    return text


def test_at_least_five_examples_and_the_demo_file_load() -> None:
    assert len(EXAMPLES) >= 5
    assert REPO / "examples" / "llama3-8b-lora.toml" in EXAMPLES
    for path in EXAMPLES:
        work = load_workload(path)
        assert work.name
        assert (work.train is None) != (work.inference is None)


def test_defaults_are_filled_and_dumped() -> None:
    work = parse_workload(_lora(), "w.toml")
    dumped = work.model_dump(mode="json")
    assert dumped["name"] == "w"
    assert dumped["train"]["optimizer"] == "adamw"
    assert dumped["train"]["sharding"] == "none"
    assert dumped["train"]["lora_rank"] == 16
    assert dumped["model"]["kv_heads"] == 8
    assert dumped["data"] == {"dataset_gb": 0.0, "checkpoint_every_hours": 1.0, "egress_gb": 0.0}
    assert dumped["constraints"]["interruptible"] is True
    assert dumped["constraints"]["max_nodes"] == 1
    assert dumped["constraints"]["deadline_hours"] is None


def test_kv_precision_defaults_to_weights_precision() -> None:
    work = parse_workload(
        {
            "task": "inference",
            "model": {"preset": "mistral-7b"},
            "inference": {
                "weights_precision": "fp8",
                "prompt_tokens": 10,
                "output_tokens": 10,
                "concurrency": 1,
                "requests": 5,
            },
        },
        "i.toml",
    )
    assert work.inference is not None
    assert work.inference.kv_precision == "fp8"


def test_user_fields_override_a_preset() -> None:
    data = _lora()
    data["model"]["layers"] = 2
    assert parse_workload(data, "w.toml").model.layers == 2


def test_unknown_key_suggests_the_close_one() -> None:
    data = _lora()
    data["train"]["micro_bach"] = 4
    text = _error(data)
    assert "train.micro_bach" in text
    assert "did you mean 'train.micro_batch'" in text


def test_unknown_top_level_key_and_preset() -> None:
    assert "did you mean 'task'" in _error({"tsk": "train"})
    text = _error({"task": "train", "model": {"preset": "llama-3-9b"}})
    assert "model.preset" in text
    assert "llama-3-8b" in text


@pytest.mark.parametrize(
    ("override", "key", "phrase"),
    [
        ({"micro_batch": "4"}, "train.micro_batch", "whole number"),
        ({"micro_batch": 0}, "train.micro_batch", "at least 1"),
        ({"tokens": -5.0}, "train.tokens", "greater than 0"),
        ({"tokens": math.inf}, "train.tokens", "finite"),
        ({"tokens": math.nan}, "train.tokens", ""),
        ({"precision": "bf17"}, "train.precision", "one of"),
        ({"samples": 10}, "train", "exactly one of tokens or samples"),
        ({"lora_targets": "mlp"}, "train.lora_targets", "one of"),
        ({"framework": "pytorch"}, "train.framework", "one of"),
        ({"pipeline_schedule": "gpipe"}, "train.pipeline_schedule", "one of"),
    ],
)
def test_bad_values_name_the_key(override: dict[str, Any], key: str, phrase: str) -> None:
    text = _error(_lora(**override))
    assert f"'{key}" in text or f"[{key}]:" in text  # a key, or a rule over a whole section
    assert phrase in text


def test_missing_required_fields() -> None:
    data = _lora()
    del data["train"]["micro_batch"]
    assert "'train.micro_batch' is required" in _error(data)
    assert "needs params" in _error({"task": "train", "model": {"layers": 2}, "train": _lora()["train"]})
    assert "[train]" in _error({"task": "train", "model": {"preset": "gpt2"}})
    data = _lora()
    del data["train"]["seq_len"]
    assert "seq_len" in _error(data)


def test_inference_needs_exactly_one_amount() -> None:
    inf: dict[str, Any] = {"prompt_tokens": 1, "output_tokens": 1, "concurrency": 1}
    base = {"task": "inference", "model": {"preset": "gpt2"}}
    assert "exactly one of requests" in _error({**base, "inference": inf})
    both = {**inf, "requests": 5, "target_output_tokens_per_s": 10.0, "duration_hours": 1.0}
    assert "not both" in _error({**base, "inference": both})


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("task = \n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_workload(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_workload(tmp_path / "none.toml")


def test_presets_are_many_real_and_cited() -> None:
    names = preset_names()
    assert len(names) >= 20
    for required in ("llama-3-8b", "mixtral-8x7b", "qwen2.5-72b", "gemma-2-27b", "resnet-50", "sdxl-unet"):
        assert required in names
    for name in names:
        row = get_preset(name)
        assert row["source"], name
        work = parse_workload(
            {
                "task": "inference",
                "model": {"preset": name},
                "inference": {"prompt_tokens": 8, "output_tokens": 8, "concurrency": 1, "requests": 1},
            },
            "p.toml",
        )
        assert work.model.n_params > 0


def test_moe_preset_has_fewer_active_than_total_params() -> None:
    work = parse_workload(_lora(), "w.toml")
    assert work.model.n_active_params == work.model.n_params
    data = _lora()
    data["model"] = {"preset": "mixtral-8x7b"}
    moe = parse_workload(data, "w.toml").model
    assert moe.n_active_params < moe.n_params / 3
    derived = moe.model_copy(update={"active_params": None})
    assert derived.n_active_params == pytest.approx(12.9e9, rel=0.03)


def test_resnet_flops_are_forward_flops_not_macs() -> None:
    assert get_preset("resnet-50")["flops_per_sample"] == pytest.approx(8.2e9)


def test_lora_targets_default_to_all_and_framework_to_the_common_stack() -> None:
    w = parse_workload(_lora(), "w.toml")
    assert w.train is not None
    assert (w.train.lora_targets, w.train.framework) == ("all", None)
    assert default_framework(w.task, w.train) == "hf"
    assert w.train.pipeline_schedule == "interleaved"
    w = parse_workload(_lora(lora_targets="attention", framework="hf"), "w.toml")
    assert w.train is not None
    assert (w.train.lora_targets, w.train.framework) == ("attention", "hf")
