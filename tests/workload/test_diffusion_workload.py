"""The [diffusion] section: a diffusion preset fills [model], steps become images, and bad input (a
resolution off the VAE's grid, an unknown architecture, a key from a language-model job) exits 2 with the
fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuwise.cli.main import main
from gpuwise.errors import ConfigError
from gpuwise.workload import Workload, parse_workload
from gpuwise.workload.diffusion_arch import denoiser_macs, diffusion_arch
from gpuwise.workload.presets import preset_rows


def flux(
    train: dict[str, Any] | None = None, diffusion: dict[str, Any] | None = None, **top: Any
) -> dict[str, Any]:
    t = {"method": "lora", "precision": "bf16", "micro_batch": 1, "samples": 100.0}
    t.update(train or {})
    data: dict[str, Any] = {"task": "finetune", "model": {"preset": "flux-dev"}, "train": t}
    data["diffusion"] = diffusion if diffusion is not None else {}
    data.update(top)
    return data


def parse(data: dict[str, Any]) -> Workload:
    return parse_workload(data, "w.toml")


def test_preset_fills_the_model_and_the_native_resolution() -> None:
    w = parse(flux())
    assert w.arch.kind == "diffusion" and w.arch.preset == "flux-dev"
    assert w.arch.params == pytest.approx(11.9e9)
    assert w.arch.sample_unit == "image"
    assert w.diffusion is not None and w.diffusion.resolution == 1024 and w.diffusion.text_tokens == 512
    assert w.train is not None and w.train.method == "lora"  # LoRA is no longer "for transformers only"


def test_forward_flops_grow_with_resolution_faster_than_the_pixel_count() -> None:
    """Self-attention is quadratic in the latent positions: 2× the side is more than 4× a UNet's FLOPs."""
    small_data, big_data = flux(diffusion={"resolution": 512}), flux(diffusion={"resolution": 1024})
    small_data["model"]["preset"] = big_data["model"]["preset"] = "sdxl"
    small = parse(small_data).arch.flops_per_sample
    big = parse(big_data).arch.flops_per_sample
    assert small is not None and big is not None and 4 < big / small < 16


def test_unet_count_matches_bk_sdm() -> None:
    """BK-SDM (Kim et al. 2023, Table 1) gives the SD 1.5 U-Net 338.7 G MACs at 512×512 (conv + linear)."""
    arch = diffusion_arch("sd15")
    assert arch is not None
    linear, _ = denoiser_macs(arch, 512, 512, 77)
    assert linear == pytest.approx(338.7e9, rel=0.01)


def test_steps_become_images_of_the_global_batch() -> None:
    data = flux(train={"micro_batch": 2, "global_batch": 8}, diffusion={"steps": 500})
    del data["train"]["samples"]
    w = parse(data)
    assert w.train is not None and w.train.samples == 4000


def test_aliases_any_case() -> None:
    data = flux()
    data["model"]["preset"] = "FLUX.1-dev"
    assert parse(data).arch.preset == "flux-dev"


def test_legacy_kind_diffusion_is_unchanged() -> None:
    w = parse(
        {
            "task": "train",
            "model": {"kind": "diffusion", "params": 8.6e8, "flops_per_sample": 8e11},
            "train": {"method": "full", "precision": "bf16", "micro_batch": 8, "samples": 1000.0},
        }
    )
    assert w.diffusion is None and w.arch.flops_per_sample == 8e11


def test_presets_list_the_diffusion_architectures() -> None:
    rows = {r["name"]: r for r in preset_rows()}
    for name in ("sd15", "sdxl", "sd3-medium", "flux-dev", "flux-schnell"):
        assert rows[name]["kind"] == "diffusion" and rows[name]["source"]


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"diffusion": {"resolution": 1020}}, "not a multiple of 8"),
        ({"diffusion": {"resolution": 1000}}, "not a multiple of 16"),
        ({"diffusion": {"resolution": [1024, 768, 512]}}, "[width, height]"),
        ({"diffusion": {"resolution": 32}}, "64-8192"),
        ({"diffusion": {"resolutoin": 1024}}, "did you mean 'diffusion.resolution'"),
        ({"model": {"preset": "flux-dve"}}, "did you mean 'flux-dev'"),
        ({"model": {"preset": "llama-3-8b"}}, "is not one"),
        ({"model": {"kind": "diffusion", "params": 1e9, "flops_per_sample": 1e12}}, "needs [model] preset"),
        ({"model": {"preset": "sdxl", "params": 3e9}}, "do not belong with diffusion preset"),
        ({"train": {"seq_len": 1024}}, "train.seq_len' does not belong"),
        ({"train": {"tokens": 1e6}}, "train.tokens' does not belong"),
        ({"train": {"framework": "hf"}}, "train.framework' does not belong"),
        ({"diffusion": {"steps": 10}}, "not both"),
        ({"diffusion": {"fp8_base": True}, "train": {"method": "full"}}, "trains every weight"),
        ({"diffusion": {"fp8_base": True}, "train": {"method": "qlora"}}, "choose one"),
        ({"task": "inference"}, "not modelled from its preset"),
    ],
)
def test_bad_input_names_the_fix(change: dict[str, Any], phrase: str) -> None:
    data = flux()
    for key, value in change.items():
        if key == "train":
            data["train"].update(value)
        else:
            data[key] = value
    with pytest.raises(ConfigError) as err:
        parse(data)
    assert phrase in str(err.value) + err.value.fix + err.value.why


def test_no_images_at_all_says_what_to_give() -> None:
    data = flux()
    del data["train"]["samples"]
    with pytest.raises(ConfigError, match="how many images"):
        parse(data)


def test_misspelt_preset_without_a_diffusion_section_suggests_the_architecture() -> None:
    data = flux()
    del data["diffusion"]
    data["model"]["preset"] = "sdxll"
    with pytest.raises(ConfigError, match="did you mean 'sdxl'"):
        parse(data)


def test_cli_exits_two_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'task = "finetune"\n[model]\npreset = "sdxl"\n[train]\nmethod = "lora"\nprecision = "bf16"\n'
        "micro_batch = 1\nsamples = 10\n[diffusion]\nresolution = 1020\n",
        encoding="utf-8",
    )
    assert main(["estimate", str(bad), "--gpu", "RTX4090"]) == 2
    err = capsys.readouterr().err
    assert "not a multiple of 8" in err and "Traceback" not in err


def test_training_the_text_encoder_needs_them_uncached() -> None:
    with pytest.raises(ConfigError, match="train_text_encoder needs the text encoders"):
        parse(flux(diffusion={"train_text_encoder": True, "cache_text_embeddings": True}))
