"""Block swapping (`[diffusion] blocks_to_swap`, kohya sd-scripts --blocks_to_swap): the DiT blocks of a
frozen LoRA base kept in host RAM, checked against kohya's published settings per GPU memory."""

from __future__ import annotations

from typing import Any

import pytest

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.errors import ConfigError
from gpuwise.estimate import estimate
from gpuwise.units import GIB
from gpuwise.workload import Workload, parse_workload


def flux(blocks_to_swap: int = 0, preset: str = "flux-dev", **train: Any) -> Workload:
    """FLUX.1-dev LoRA as kohya's guide sets it up: FP8 base, gradient checkpointing, 8-bit AdamW, batch 1,
    latents and caption embeddings cached, at 1024 px."""
    t: dict[str, Any] = {
        "method": "lora",
        "precision": "bf16",
        "optimizer": "adamw8bit",
        "micro_batch": 1,
        "activation_checkpointing": "full",
    }
    t.update(train)
    d: dict[str, Any] = {"resolution": 1024, "steps": 100, "cache_latents": True}
    d.update(cache_text_embeddings=True, blocks_to_swap=blocks_to_swap)
    if t["method"] == "lora" and "base_precision" not in t:
        d["fp8_base"] = True
    data = {"task": "finetune", "model": {"preset": preset}, "train": t, "diffusion": d}
    return parse_workload(data, "flux.toml")


@pytest.mark.parametrize(
    ("gpu", "swap"), [("RTX3060", 16), ("RTX3080", 22), ("RTX3070", 28)], ids=["12GB", "10GB", "8GB"]
)
def test_kohyas_settings_per_gpu_memory_fit(gpu: str, swap: int) -> None:
    """kohya sd-scripts docs/flux_train_network.md §6.1 (with --fp8_base): 12 GB "--blocks_to_swap 16 and
    8bit AdamW", 10 GB 22, 8 GB 28. Each fits its card here, and none fits without swapping."""
    spec = resolve_gpu(gpu)
    assert estimate(flux(swap), spec).fits
    assert not estimate(flux(0), spec).fits


def test_swapping_trades_memory_for_pcie_time() -> None:
    spec = resolve_gpu("RTX4090")
    none, some, most = (estimate(flux(n), spec) for n in (0, 18, 35))
    assert none.memory.total > some.memory.total > most.memory.total
    assert none.details["s_per_it"] < some.details["s_per_it"] < most.details["s_per_it"]
    # 35 of 38 blocks in host RAM: about 4 of the base's 38 parts (11.9 GB in FP8) stay on the GPU
    assert most.memory.weights == pytest.approx(
        11.9e9 * 4 / 38 + most.details["trainable_params"] * 4, rel=0.02
    )
    assert any("block swapping" in a for a in most.assumptions)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: flux(36), "more than flux-dev can swap"),
        (lambda: flux(4, preset="sdxl"), "is a UNet"),
        (lambda: flux(4, method="full"), 'method = "full"'),
    ],
    ids=["over-the-limit", "unet", "full"],
)
def test_bad_block_swapping_is_a_config_error(make: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()


def test_an_sd3_lora_can_swap_two_fewer_blocks_than_it_has() -> None:
    assert flux(22, preset="sd3-medium").diffusion is not None
    with pytest.raises(ConfigError, match="22 of its 24 blocks"):
        flux(23, preset="sd3-medium")
    est = estimate(flux(22, preset="sd3-medium"), resolve_gpu("RTX3070"))
    assert est.memory.total < 8 * GIB
