"""Diffusion training estimates against public measurements, each cited beside its test with its figure.

Tolerances: memory within ±15% where the source gives a peak from torch or nvidia-smi for a stated setup,
±30% where it rounds ("approximately", "a bit more than") or leaves a setting unstated; time within 1.25×
on the two runs the speed shares were fitted on (diffusion_constants.FAMILY_SHARE: a check that the fit is
where it says) and within 2× on runs not used for fitting (the spread of one GPU generation's efficiency
and of the trainers' overheads, as for the language-model stacks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.cli.main import main
from gpuwise.estimate import estimate
from gpuwise.estimate.models import Estimate
from gpuwise.workload import load_workload, parse_workload

REPO = Path(__file__).resolve().parents[2]
GB = 1e9
GIB = 1024**3


def run(preset: str, gpu: str, train: dict[str, Any], diffusion: dict[str, Any], count: int = 1) -> Estimate:
    t = {"precision": "bf16", "micro_batch": 1, "samples": 1000.0, "activation_checkpointing": "full"}
    t.update(train)
    w = parse_workload(
        {"task": "finetune", "model": {"preset": preset}, "train": t, "diffusion": diffusion}, "m.toml"
    )
    return estimate(w, resolve_gpu(gpu), count)


# Hugging Face blog "(LoRA) Fine-Tuning FLUX.1-dev on Consumer Hardware" (2025),
# huggingface.co/blog/flux-qlora: RTX 4090, train_batch_size 1, gradient_accumulation_steps 4, bf16,
# gradient checkpointing, 8-bit Adam,
# rank 4 on to_q/to_k/to_v/to_out, 512×768, latents cached, text embeddings pre-computed (77 tokens).
HF_BLOG = {"optimizer": "adamw8bit", "lora_rank": 4, "samples": 700 * 4.0}
HF_BLOG_D = {
    "resolution": [512, 768],
    "cache_latents": True,
    "cache_text_embeddings": True,
    "text_tokens": 77,
}


def test_flux_qlora_on_a_4090_memory() -> None:
    """Quoted: "QLoRA: Peak VRAM usage for QLoRA fine-tuning was approximately 9GB." (±30%: rounded)"""
    est = run("flux-dev", "RTX4090", {"method": "qlora", **HF_BLOG}, HF_BLOG_D)
    assert est.fits
    assert 0.7 * 9 * GB < est.memory.total < 1.3 * 9 * GB


def test_flux_bf16_lora_on_a_4090_memory() -> None:
    """Quoted: "BF16 LoRA: Running standard LoRA (with the base FLUX.1-dev in FP16) on the same setup
    consumed 26 GB VRAM." (±15%; it does not fit a 24 GB card: the post moved to QLoRA for that reason)"""
    est = run("flux-dev", "RTX4090", {"method": "lora", **HF_BLOG}, HF_BLOG_D)
    assert 0.85 * 26 * GB < est.memory.total < 1.15 * 26 * GB
    assert not est.fits


def test_flux_qlora_on_a_4090_time_is_where_it_was_fitted() -> None:
    """Quoted: "Fine-tuning for 700 steps ... took approximately 41 minutes on the RTX 4090" (700 optimizer
    steps × 4 accumulated images). Fitted on (dit_training_share): within 1.25×."""
    est = run("flux-dev", "RTX4090", {"method": "qlora", **HF_BLOG}, HF_BLOG_D)
    assert est.hours * 60 == pytest.approx(41, rel=0.25)


def test_flux_qlora_on_a_t4_time_not_fitted() -> None:
    """Quoted: "On a T4, you can expect the fine-tuning process to take significantly longer around 4 hours
    for the same number of steps." Not used for fitting: within 2×."""
    est = run("flux-dev", "T4", {"method": "qlora", "precision": "fp16", **HF_BLOG}, HF_BLOG_D)
    assert 4 / 2 < est.hours < 4 * 2


def test_flux_lora_with_encoders_on_the_gpu_h100_memory() -> None:
    """Same post, H100 SXM, train_dreambooth_lora_flux.py: bf16 base, batch 1, gradient checkpointing,
    8-bit Adam, rank 4, 512×768, no cached latents or embeddings (T5 at diffusers' 512 tokens on the GPU):
    quoted "The training run had a peak memory usage of 36.57 GB". (±15%; its "~20 minutes" includes
    loading and validation and is not compared.)"""
    est = run(
        "flux-dev",
        "H100",
        {"method": "lora", "precision": "fp8", "optimizer": "adamw8bit", "lora_rank": 4},
        {"resolution": [512, 768]},
    )
    assert 0.85 * 36.57 * GB < est.memory.total < 1.15 * 36.57 * GB


# SimpleTuner's Flux quickstart (github.com/bghira/SimpleTuner, documentation/quickstart/FLUX.md):
# "When you're training every component of a rank-16 LoRA (MLP, projections, multimodal blocks), it ends up
# using: a bit more than 30G VRAM when not quantising the base model; a bit more than 18G VRAM when quantising
# to int8". Batch 1, gradient checkpointing on, latents and text embeddings cached (SimpleTuner always
# caches), 1024 px datasets.
@pytest.mark.parametrize(("train", "quoted_gb"), [({"method": "lora"}, 30), ({"base_precision": "int8"}, 18)])
def test_flux_dev_lora_at_1024_on_one_80gb_gpu(train: dict[str, Any], quoted_gb: float) -> None:
    """±30%: "a bit more than", the optimizer and the exact resolution mix are not stated."""
    t = {"method": "lora", "lora_rank": 16, "optimizer": "adamw8bit", **train}
    est = run(
        "flux-dev", "H100", t, {"resolution": 1024, "cache_latents": True, "cache_text_embeddings": True}
    )
    assert est.fits
    assert 0.7 * quoted_gb * GB < est.memory.total < 1.3 * quoted_gb * GB


# kohya_ss issue 1288 (github.com/bmaltais/kohya_ss/issues/1288), an RTX 4090 training an SDXL LoRA on 1024 px
# images: quoted "Now I'm running with batch size 8 at 3s/it", "the main thing was: gradient checkpointing &
# caching latents to disk" (text encoders on the GPU: kohya's default).
SDXL_KOHYA = {"method": "lora", "micro_batch": 8, "optimizer": "adamw8bit", "lora_rank": 32}


def test_sdxl_lora_on_a_24gb_card_fits_and_runs_at_the_reported_speed() -> None:
    """It ran, so it fits in 24 GB; 3 s/it was fitted on (unet_training_share): within 1.25×."""
    est = run("sdxl", "RTX4090", SDXL_KOHYA, {"resolution": 1024, "cache_latents": True})
    assert est.fits
    assert est.details["s_per_it"] == pytest.approx(3.0, rel=0.25)


def test_examples_answer_estimate_and_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """The two examples of the issue: Flux-dev LoRA at 1024 px on one 80 GB GPU, SDXL LoRA on a 24 GB card."""
    flux = load_workload(REPO / "examples/flux-dev-lora.toml")
    for gpu in ("H100", "A100-80GB"):
        assert estimate(flux, resolve_gpu(gpu)).fits
    sdxl = load_workload(REPO / "examples/sdxl-lora.toml")
    assert estimate(sdxl, resolve_gpu("RTX4090")).fits
    assert main(["plan", str(REPO / "examples/flux-dev-lora.toml"), "--json", "--top", "3"]) == 0
    assert '"options"' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("knob", "value"),
    [
        ("activation_checkpointing", "none"),
        ("cache_latents", False),
        ("cache_text_embeddings", False),
        ("method", "full"),
    ],
)
def test_each_memory_knob_costs_memory(knob: str, value: object) -> None:
    """The knobs a remedy changes move memory the expected way (from the Flux example's setting)."""
    train: dict[str, Any] = {"method": "lora", "optimizer": "adamw8bit"}
    diff: dict[str, Any] = {"cache_latents": True, "cache_text_embeddings": True}
    base = run("flux-dev", "H100", train, diff).memory.total
    (train if knob in ("activation_checkpointing", "method") else diff)[knob] = value
    assert run("flux-dev", "H100", train, diff).memory.total > base


def test_fp8_base_and_smaller_resolution_and_batch_save_memory() -> None:
    train: dict[str, Any] = {"method": "lora", "micro_batch": 2}
    base = run("flux-dev", "RTX4090", train, {}).memory.total
    assert run("flux-dev", "RTX4090", train, {"fp8_base": True}).memory.total < base - 10 * GIB
    assert run("flux-dev", "RTX4090", train, {"resolution": 512}).memory.total < base
    assert run("flux-dev", "RTX4090", {**train, "micro_batch": 1}, {}).memory.total < base


def test_full_fine_tune_shards_over_gpus_and_time_scales_with_images() -> None:
    full = {"method": "full", "optimizer": "adamw8bit", "sharding": "fsdp"}
    one = run("sdxl", "H100", full, {"cache_latents": True})
    eight = run("sdxl", "H100", full, {"cache_latents": True}, count=8)
    assert eight.memory.optimizer == pytest.approx(one.memory.optimizer / 8)
    assert eight.hours < one.hours
    twice = run("sdxl", "H100", {**full, "samples": 2000.0}, {"cache_latents": True})
    assert twice.hours == pytest.approx(2 * one.hours)


def test_training_the_text_encoders_costs_memory_and_time() -> None:
    """kohya's SDXL LoRA default also trains LoRA on both CLIP encoders: more parameters, more time."""
    plain = run("sdxl", "RTX4090", SDXL_KOHYA, {"cache_latents": True})
    both = run("sdxl", "RTX4090", SDXL_KOHYA, {"cache_latents": True, "train_text_encoder": True})
    assert both.details["trainable_params"] > plain.details["trainable_params"]
    assert both.memory.total > plain.memory.total
    assert both.details["s_per_it"] > plain.details["s_per_it"]


# Held-out speed checks (issue 13): measurements that no constant was fitted on, each compared within 2×
# (the module docstring's tolerance for runs not used for fitting). Where the estimate falls outside, the test
# is xfail(strict=True) with the measured ratio: the model is not tuned to these rows, and a strict xfail
# turns into a failure the day a change brings the estimate within 2×, so the marker is then removed.
SIMPLETUNER_CACHED = {"cache_latents": True, "cache_text_embeddings": True}  # SimpleTuner always caches both


def test_flux_dev_lora_on_an_h100_speed_held_out() -> None:
    """SimpleTuner pull request 1033 (github.com/bghira/SimpleTuner/pull/1033, "H100/H200/B200
    FlashAttention3 for Flux + TorchAO improvements"), on an H100: quoted "When using torch.compile in bf16
    mode w/ rank 16 LoRA we see 2 iterations per second. 1000 steps can be trained in 500 seconds".
    Not stated there: resolution, batch and optimizer. Written as SimpleTuner's Flux quickstart sets a run
    up: train_batch_size 1, 1024 px subject data (Flux's native size), gradient checkpointing on, AdamW
    (its beginner default adamw_bf16), latents and text embeddings cached. torch.compile and
    FlashAttention-3 are speed-ups gpuwise does not model, inside the 2× (the estimate at 512 px would be
    about 3× faster than the quote, so this row also says the run was not at 512 px, or not at batch 1)."""
    est = run(
        "flux-dev",
        "H100",
        {"method": "lora", "lora_rank": 16, "optimizer": "adamw"},
        {"resolution": 1024, **SIMPLETUNER_CACHED},
    )
    assert est.fits
    assert 0.5 / 2 < est.details["s_per_it"] < 0.5 * 2


def test_flux_dev_fp8_lora_at_1024_on_a_4090_speed_held_out() -> None:
    """SimpleTuner pull request 1184 (github.com/bghira/SimpleTuner/pull/1184, "gradient checkpointing
    speed-up"): quoted "when training with a rank 1 lora we can use `--gradient_checkpointing_interval=2` on
    a 24G 4090 w/ fp8-quanto and speed up from 4.25 second per training step to 3.00 second per training step
    at 1024px". The 4.25 s is the run with every block checkpointed (gpuwise's "full"); batch 1 and an 8-bit
    optimizer assumed (not stated; neither moves the step time of a rank-1 LoRA)."""
    est = run(
        "flux-dev",
        "RTX4090",
        {"method": "lora", "lora_rank": 1, "optimizer": "adamw8bit"},
        {"resolution": 1024, "fp8_base": True, **SIMPLETUNER_CACHED},
    )
    assert est.fits
    assert 4.25 / 2 < est.details["s_per_it"] < 4.25 * 2


# SimpleTuner's Flux quickstart (documentation/quickstart/FLUX.md, "NF4-quantised training"): quoted
# "Upping the resolution from 512px to 1024px slows training down from, for example, 1.4 seconds per step to
# 3.5 seconds per step (batch size of 1, 4090)". NF4 base = gpuwise's qlora; rank not stated (16, as the
# quickstart's memory list). Held out: the DiT share was fitted on another source's QLoRA run at 512×768.
NF4_ON_A_4090 = {"method": "qlora", "lora_rank": 16, "optimizer": "adamw8bit"}


def test_flux_dev_nf4_lora_at_1024_on_a_4090_speed_held_out() -> None:
    est = run("flux-dev", "RTX4090", NF4_ON_A_4090, {"resolution": 1024, **SIMPLETUNER_CACHED})
    assert est.fits
    assert 3.5 / 2 < est.details["s_per_it"] < 3.5 * 2


@pytest.mark.xfail(
    strict=True,
    reason="held out, outside 2×: measured 1.4 s/step, estimated 0.67 s (measured/estimated 2.1); with the "
    "1024 px row (ratio 1.56) the measured time grows 2.5× from 512 to 1024 px, the estimate 3.4×: a fixed "
    "per-step cost the model lacks",
)
def test_flux_dev_nf4_lora_at_512_on_a_4090_speed_held_out() -> None:
    est = run("flux-dev", "RTX4090", NF4_ON_A_4090, {"resolution": 512, **SIMPLETUNER_CACHED})
    assert 1.4 / 2 < est.details["s_per_it"] < 1.4 * 2


# kohya sd-scripts issue 827 (github.com/kohya-ss/sd-scripts/issues/827), an RTX 3090 Ti (24 GB) on Windows:
# quoted "LoRA gets 1.12 s/it with xformers enabled and gradient checkpoint disabled", command
# sdxl_train_network.py --resolution="1024,1024" --network_dim=32 --train_batch_size="1" --full_bf16
# --cache_latents --optimizer_type="Adafactor" --text_encoder_lr=0.0004 (the text encoders' LoRA trained, so
# they stay on the GPU). Independent of kohya_ss issue 1288, which the UNet share was fitted on.
SDXL_827 = {"method": "lora", "lora_rank": 32, "optimizer": "adafactor", "activation_checkpointing": "none"}
SDXL_827_D = {"resolution": 1024, "cache_latents": True, "train_text_encoder": True}


def test_sdxl_lora_on_a_24gb_rtx3090ti_fits() -> None:
    """It ran on the 24 GB card, so it fits."""
    assert run("sdxl", "RTX3090Ti", SDXL_827, SDXL_827_D).fits


@pytest.mark.xfail(
    strict=True,
    reason="held out, outside 2×: measured 1.12 s/it, estimated 0.43 s/it (measured/estimated 2.6); SDXL "
    "at batch 1 is slower per image than the batch-8 run the UNet share was fitted on",
)
def test_sdxl_lora_on_a_24gb_rtx3090ti_speed_held_out() -> None:
    est = run("sdxl", "RTX3090Ti", SDXL_827, SDXL_827_D)
    assert 1.12 / 2 < est.details["s_per_it"] < 1.12 * 2
