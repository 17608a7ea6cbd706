"""The done-when line of issue 13 item 5, as a property over the bundled examples and presets.

For every workload below on one of every GPU in the bundled spec table where it does not fit, `remedies`
is non-empty and applying the first remedy's change (re-validated as a whole workload, independently of the
search's own code path) makes `estimate` say it fits.

The workloads: every examples/*.toml as written, and every preset as
- a transformer: a LoRA fine-tune (bf16, 16-bit base, seq_len 2048, micro_batch 4, 1e8 tokens) and bf16
  inference (1,000 prompt + 300 output tokens, concurrency 16, 10,000 requests);
- a speech model (one with `audio_window_s`, Whisper): the LoRA fine-tune above at seq_len 448 (its
  decoder's positions) and transcription of 10 audio hours (4 forced + 150 output tokens per window,
  concurrency 16);
- a diffusion architecture (sd15, sdxl, sd3, flux: its own `[diffusion]` section): a LoRA fine-tune at
  1024 px, micro_batch 1, 1,000 images, nothing cached (image generation from these presets is not
  modelled, so no inference workload);
- any other kind: full training (bf16, micro_batch 64, 1e6 samples) and bf16 inference (concurrency 16).

Every case must have a first remedy that fits: none is excluded (the legacy `sdxl-unet` preset on 8-16 GB
cards and FLUX.1 on 8 GB cards were, until the UNet got its block count and its counted activations, and
diffusion LoRAs got caching, FP8/NF4 bases, block swapping and the resolution as remedies).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from gpuwise.catalog.specs import load_gpu_specs
from gpuwise.errors import GpuwiseError
from gpuwise.estimate import estimate
from gpuwise.estimate.remedies import remedies
from gpuwise.workload import Workload, load_workload, parse_workload
from gpuwise.workload.diffusion_arch import diffusion_preset_rows
from gpuwise.workload.presets import get_preset, preset_rows

REPO = Path(__file__).resolve().parents[2]
DIFFUSION_ARCHS = {row["name"] for row in diffusion_preset_rows()}
GPUS = sorted(load_gpu_specs().values(), key=lambda g: g.name)


def _preset_workloads(name: str, kind: str) -> list[Workload]:
    model = {"preset": name}
    if name in DIFFUSION_ARCHS:
        lora = {"method": "lora", "precision": "bf16", "samples": 1000, "micro_batch": 1}
        data = {"task": "finetune", "model": model, "train": lora, "diffusion": {"resolution": 1024}}
        return [parse_workload(data, f"{name}-lora.toml")]
    if kind == "transformer":
        train: dict[str, Any] = {
            "method": "lora",
            "precision": "bf16",
            "tokens": 1e8,
            "seq_len": 2048,
            "micro_batch": 4,
        }
        inference: dict[str, Any] = {"prompt_tokens": 1000, "output_tokens": 300, "concurrency": 16}
        if "audio_window_s" in get_preset(name):  # speech: one window decodes at most 448 tokens
            train["seq_len"] = 448
            inference = {"prompt_tokens": 4, "output_tokens": 150, "concurrency": 16, "audio_hours": 10}
    else:
        train = {"method": "full", "precision": "bf16", "samples": 1e6, "micro_batch": 64}
        inference = {"prompt_tokens": 0, "output_tokens": 1, "concurrency": 16}
    if "audio_hours" not in inference:
        inference["requests"] = 1e4
    task = "finetune" if kind == "transformer" else "train"
    return [
        parse_workload({"task": task, "model": model, "train": train}, f"{name}-train.toml"),
        parse_workload(
            {"task": "inference", "model": model, "inference": inference},
            f"{name}-inference.toml",
        ),
    ]


def _workloads() -> list[tuple[str, Workload]]:
    out = [(p.name, load_workload(p)) for p in sorted((REPO / "examples").glob("*.toml"))]
    for row in preset_rows():
        try:
            works = _preset_workloads(row["name"], row["kind"])
        except GpuwiseError as exc:  # a kind whose workload needs keys the standard one lacks: say which
            pytest.fail(f"preset {row['name']} ({row['kind']}): no standard workload here: {exc}")
        for w in works:
            out.append((f"{row['name']}/{w.task}", w))
    return out


WORKLOADS = _workloads()


def _applied(w: Workload, updates: dict[str, Any], count: int) -> tuple[Workload, int]:
    """The workload with the remedy's keys set, validated whole (the workload's own rules included)."""
    data = w.model_dump()
    for key, value in updates.items():
        if key == "count":
            count = value
            continue
        section, name = key.split(".")
        data[section][name] = value
    return Workload.model_validate(data), count


# Each workload on one GPU of every kind; the examples also on a node of 8 (their "Try" lines' size).
CASES = [(label, w, 1) for label, w in WORKLOADS] + [
    (label, w, 8) for label, w in WORKLOADS if label.endswith(".toml")
]


@pytest.mark.parametrize(("label", "work", "count"), CASES, ids=[f"{c[0]}-x{c[2]}" for c in CASES])
def test_first_remedy_fits(label: str, work: Workload, count: int) -> None:
    assert len(WORKLOADS) > 2 * len(preset_rows())
    checked = 0
    for gpu in GPUS:
        base = estimate(work, gpu, count)
        if base.fits:
            continue
        checked += 1
        found = remedies(work, gpu, base, count=count)
        assert found, f"{label} on {gpu.name}: does not fit and no remedy"
        first = found[0]
        # No case is excluded: one where nothing gpuwise can change fits fails here, named.
        assert first.fits, f"{label} on {count}× {gpu.name}: no remedy fits; the closest: {found[-1].change}"
        w2, n = _applied(work, first.updates, count)
        after = estimate(w2, gpu, n)
        assert after.fits, f"{label} on {gpu.name}: {first.change} gives {after.fit_verdict}"
        assert after.memory.total == pytest.approx(first.memory_per_gpu_bytes)
        if math.isfinite(base.hours):
            assert math.isfinite(after.hours), f"{label} on {gpu.name}: {first.change} cannot run"
    if label == "llama-3.1-405b/finetune" and count == 1:
        assert checked == len(GPUS)  # the sweep is not vacuous: a 405B model fits on no single GPU
