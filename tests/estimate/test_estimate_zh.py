"""Chinese estimator citations and diffusion errors (issue 20): the units and sources of the figures an
estimate cites, marked with N_() where defined, come out translated in Chinese with the author names, titles
and numbers kept, and exactly as before in English."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpuwise.errors import ConfigError
from gpuwise.estimate.constants import ARCH_EFFICIENCY_SOURCE, Constant
from gpuwise.estimate.stacks import RANGE_SOURCE, STACKS
from gpuwise.locale import use_language
from gpuwise.workload import parse_workload


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    yield
    use_language("en")


def _old_describe(c: Constant) -> str:
    """The English line as gpuwise printed it before the citations were translatable."""
    cal = f"; calibrated on validation rows {', '.join(c.calibrated_on)}" if c.calibrated_on else ""
    unit = f" {c.unit}" if c.unit else ""
    return f"{c.name} = {c.value:g}{unit} ({c.source}{cal})"


@pytest.mark.parametrize("constant", [ARCH_EFFICIENCY_SOURCE, RANGE_SOURCE], ids=lambda c: c.name)
def test_english_citations_are_unchanged(constant: Constant) -> None:
    assert constant.describe() == _old_describe(constant)


def test_a_citation_in_chinese_keeps_names_and_numbers() -> None:
    use_language("zh")
    line = ARCH_EFFICIENCY_SOURCE.describe()
    assert "稠密峰值" in line and "已用验证数据行" in line and "把握较小" in line
    assert "Narayanan 等 2021" in line and "Llama 3 herd §3.3" in line and "llama2-7b-gpuhours" in line
    assert "of dense peak" not in line and "calibrated on" not in line


def test_an_hf_wrapper_s_source_is_translated_in_both_pieces() -> None:
    use_language("zh")
    line = STACKS["axolotl"].describe()
    assert "封装 HF Trainer；HF Trainer + PEFT，eager 模式 PyTorch" in line
    assert "wraps" not in line and "fitted on" not in line


def _flux(**diffusion: object) -> object:
    d = {"resolution": 1024, "steps": 100, "cache_latents": True, "fp8_base": True, **diffusion}
    train = {"method": "lora", "precision": "bf16", "micro_batch": 1}
    return parse_workload(
        {"task": "finetune", "model": {"preset": "flux-dev"}, "train": train, "diffusion": d}, "f.toml"
    )


def test_a_block_swapping_error_in_chinese() -> None:
    use_language("zh")
    with pytest.raises(ConfigError) as caught:
        _flux(blocks_to_swap=36)
    text = str(caught.value)
    assert "超过了 flux-dev 能交换的块数" in text and "blocks_to_swap" in text
    assert "is more than" not in text
