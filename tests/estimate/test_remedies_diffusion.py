"""The remedies of a diffusion workload (estimate/remedies_diffusion.py): what kohya, SimpleTuner and
ai-toolkit users change when a LoRA does not fit (caching, an FP8 or NF4 base, then the resolution), and
nothing the diffusion estimator does not model (CPU offload, sharding a LoRA's frozen base)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import Estimate, estimate
from gpuwise.estimate.models import Remedy
from gpuwise.estimate.remedies import apply_updates, remedies
from gpuwise.estimate.remedies_diffusion import RESOLUTION_STEP
from gpuwise.units import GIB
from gpuwise.workload import Workload, load_workload, parse_workload

REPO = Path(__file__).resolve().parents[2]
FLUX = REPO / "examples" / "flux-dev-lora.toml"


def search(w: Workload, gpu: str, count: int = 1) -> tuple[Estimate, tuple[Remedy, ...]]:
    spec = resolve_gpu(gpu)
    base = estimate(w, spec, count)
    return base, remedies(w, spec, base, count=count)


def fits(w: Workload, gpu: str, updates: dict[str, Any]) -> bool:
    applied = apply_updates(w, 1, updates)
    assert applied is not None
    return estimate(applied[0], resolve_gpu(gpu), applied[1]).fits


def with_diffusion_line(tmp_path: Path, line: str, train_line: str = "") -> Workload:
    """examples/flux-dev-lora.toml with a line added to [diffusion] (and one to [train]), loaded as a user
    would load it: the file's own cross-checks (merge_diffusion) run."""
    text = FLUX.read_text(encoding="utf-8").replace("[diffusion]\n", f"[diffusion]\n{line}\n")
    if train_line:
        text = text.replace("[train]\n", f"[train]\n{train_line}\n")
    path = tmp_path / "flux.toml"
    path.write_text(text, encoding="utf-8")
    return load_workload(path)


def test_flux_lora_on_a_24_gb_card_gets_an_fp8_or_nf4_base_never_offload(tmp_path: Path) -> None:
    """kohya's FLUX.1 LoRA on 24 GB: --fp8_base (sd-scripts README); before, the search offered only CPU
    offload and sharding, which the diffusion estimator ignores, and found nothing that fits."""
    w = load_workload(FLUX)
    base, found = search(w, "RTX4090")
    assert not base.fits
    sets = [r.updates for r in found if r.fits]
    assert {"diffusion.fp8_base": True} in sets and {"train.base_precision": "nf4"} in sets
    keys = {k for r in found for k in r.updates}
    assert not keys & {"train.offload", "train.sharding"}
    fp8 = next(r for r in found if r.updates == {"diffusion.fp8_base": True})
    assert fp8.change.startswith("FP8 frozen base")
    # the change as the user writes it: the file loads and fits
    assert estimate(with_diffusion_line(tmp_path, "fp8_base = true"), resolve_gpu("RTX4090")).fits
    wont = [r for r in found if not r.fits]
    assert len(wont) == 1 and "every GPU the whole frozen base" in wont[0].change


def test_an_fp8_base_is_replaced_by_nf4_not_stacked_with_it(tmp_path: Path) -> None:
    w = with_diffusion_line(tmp_path, "fp8_base = true")
    base, found = search(w, "RTX3060")
    assert not base.fits
    first = found[0]
    assert first.fits and first.updates == {"train.base_precision": "nf4", "diffusion.fp8_base": False}
    assert "nf4 frozen base" in first.change
    # fp8_base and base_precision together are a file error: the remedy turns fp8_base off
    nf4 = with_diffusion_line(tmp_path, "fp8_base = false", train_line='base_precision = "nf4"')
    assert estimate(nf4, resolve_gpu("RTX3060")).fits


def test_caching_is_stacked_when_no_change_fits_alone() -> None:
    data: dict[str, Any] = {
        "task": "finetune",
        "model": {"preset": "sdxl"},
        "train": {"method": "lora", "precision": "bf16", "samples": 1000, "micro_batch": 1},
        "diffusion": {"resolution": 1024},
    }
    w = parse_workload(data, "sdxl.toml")
    base, found = search(w, "RTX3070")
    assert not base.fits
    first = found[0]
    assert first.fits and first.updates.get("diffusion.cache_text_embeddings") is True
    assert "text encoders leave the GPU" in first.change


def test_the_resolution_is_the_last_resort_and_the_largest_that_fits() -> None:
    """SDXL (a UNet: no block swapping) at 4096 px on an 8 GB card: every other change stacked does not fit,
    a smaller image does; FLUX.1 on a 24 GB card never has its resolution touched."""
    data: dict[str, Any] = {
        "task": "finetune",
        "model": {"preset": "sdxl"},
        "train": {"method": "lora", "precision": "bf16", "samples": 1000, "micro_batch": 1},
        "diffusion": {"resolution": 4096},
    }
    w = parse_workload(data, "sdxl-4k.toml")
    base, found = search(w, "RTX3070")
    assert not base.fits
    first = found[0]
    assert first.fits
    side = first.updates["diffusion.resolution"]
    assert isinstance(side, int) and side % RESOLUTION_STEP == 0 and side < 4096
    rest = {k: v for k, v in first.updates.items() if k != "diffusion.resolution"}
    assert rest.get("diffusion.cache_latents") is True and rest.get("train.base_precision") == "nf4"
    assert not fits(w, "RTX3070", {**rest, "diffusion.resolution": side + RESOLUTION_STEP})
    assert "resolution" in first.change and "largest that fits" in first.change
    assert first.memory_per_gpu_bytes <= resolve_gpu("RTX3070").memory_gib * GIB
    _, on_4090 = search(load_workload(FLUX), "RTX4090")
    assert all("diffusion.resolution" not in r.updates for r in on_4090)


def test_image_generation_fits_an_8_gb_card_without_a_kv_cache_change() -> None:
    """The sdxl-unet preset (flops-based) generating 16 images at a time on an 8 GB card: a smaller batch
    and lighter weights, never an FP8 KV cache (a UNet has none)."""
    inference = {"prompt_tokens": 0, "output_tokens": 1, "concurrency": 16, "requests": 1e4}
    w = parse_workload(
        {"task": "inference", "model": {"preset": "sdxl-unet"}, "inference": inference}, "gen.toml"
    )
    base, found = search(w, "RTX3070")
    assert not base.fits
    assert found[0].fits
    assert all("inference.kv_precision" not in r.updates for r in found)


def test_on_8_gpus_of_8_gb_the_fewest_blocks_to_swap_fit(tmp_path: Path) -> None:
    """FLUX.1-dev on 8 × 8 GB (NCCL's buffers on top): nothing but block swapping fits at 1024 px; the
    fewest blocks that do (kohya's 8 GB setting swaps 28 with an FP8 base; this BF16 base needs more)."""
    w = load_workload(FLUX)
    spec = resolve_gpu("RTX3070")
    base = estimate(w, spec, 8)
    found = remedies(w, spec, base, count=8)
    first = found[0]
    assert first.fits and set(first.updates) == {"diffusion.blocks_to_swap"}
    n = first.updates["diffusion.blocks_to_swap"]
    assert isinstance(n, int) and 28 <= n <= 35
    applied = apply_updates(w, 8, {"diffusion.blocks_to_swap": n - 1})
    assert applied is not None and not estimate(applied[0], spec, 8).fits
    assert "blocks swapped to host RAM" in first.change and first.time_ratio > 1
    swapped = with_diffusion_line(tmp_path, f"blocks_to_swap = {n}")
    assert estimate(swapped, spec, 8).fits
