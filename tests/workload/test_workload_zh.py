"""Bad workload files explained in Chinese (what, why and the fix) when the language is zh, and in the same
English as before otherwise. Library calls in-process: the language is switched and always switched back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuwise.errors import ConfigError
from gpuwise.locale import use_language
from gpuwise.workload.loading import load_workload, parse_workload


@pytest.fixture
def zh() -> Iterator[None]:
    use_language("zh")
    try:
        yield
    finally:
        use_language("en")


def _problem(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_workload(data, "job.toml")
    return info.value.render()


_LORA = {"task": "finetune", "model": {"preset": "llama-3-8b"}}
_TRAIN = {"method": "lora", "precision": "bf16", "seq_len": 2048, "micro_batch": 1, "tokens": 1e6}


def test_a_misspelt_key_gets_its_correction_in_chinese(zh: None) -> None:
    said = _problem({**_LORA, "train": {**_TRAIN, "micro_bach": 2}})
    assert "工作负载文件 job.toml：未知的键 'train.micro_bach'（是不是想写 'train.micro_batch'？）" in said
    assert "请改正或删除这个键" in said


def test_a_hugging_face_key_is_moved_in_chinese(zh: None) -> None:
    said = _problem({**_LORA, "train": {**_TRAIN, "per_device_train_batch_size": 4}})
    assert "是 Hugging Face config/训练参数的名称，不是工作负载的键" in said
    assert "请移动它：在 [train] 下写 micro_batch = …" in said


def test_bad_values_and_validator_rules_are_chinese(zh: None) -> None:
    said = _problem({**_LORA, "train": {**_TRAIN, "micro_batch": 0, "seq_len": "long"}})
    assert "键 'train.seq_len' 必须是整数，实际为 'long'" in said
    assert "键 'train.micro_batch' 必须至少为 1，实际为 0" in said
    said = _problem({**_LORA, "train": {**_TRAIN, "samples": 10}})
    assert "tokens 和 samples 必须且只能给出一个" in said  # a pydantic model validator's own message


def test_a_missing_file_is_named_in_chinese(zh: None, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_workload(tmp_path / "nope.toml")
    said = info.value.render()
    assert f"工作负载文件 {tmp_path / 'nope.toml'} 不存在" in said
    assert "请改正文件（TOML 格式" in said


def test_english_is_unchanged_after_chinese(zh: None) -> None:
    use_language("en")
    said = _problem({**_LORA, "train": {**_TRAIN, "samples": 10}})
    assert "Workload file job.toml: [train]: give exactly one of tokens or samples" in said
