"""The changes a diffusion workload (a bundled architecture with its `[diffusion]` section) can take when it
does not fit: what the trainers users run offer to shrink memory at the same images.

- the caption embeddings and the VAE latents computed once before training (kohya --cache_text_encoder_outputs
  and --cache_latents, SimpleTuner's defaults): the frozen text encoders (T5-XXL: 9.5 GB in BF16) and the VAE
  leave the GPU;
- the frozen base of a LoRA in FP8 (kohya --fp8_base, ai-toolkit/SimpleTuner quantisation) or in NF4
  (the Hugging Face flux-qlora recipe);
- the fewest DiT blocks swapped to host RAM that fit (kohya --blocks_to_swap: slower by the PCIe copies);
- as the last resort, the largest resolution that fits (the images' side, as `seq_len` is a text's length).

CPU offload and ZeRO sharding of a LoRA's frozen base are not offered: the diffusion estimator does not
model them (a `[diffusion]` workload rejects `train.offload`), so such a remedy could not be written.

Pure; run by estimate/remedies_train.py on its `Search`.
"""

from __future__ import annotations

from gpuwise.estimate.remedies import Search, Updates, bisect_values
from gpuwise.workload.diffusion_arch import diffusion_arch
from gpuwise.workload.spec import TrainSpec, Workload

# Resolutions tried are multiples of this (kohya's and SimpleTuner's bucket step) from the smallest
# bucket trainers use; a DiT's 16-px patch divides it.
RESOLUTION_STEP = 64
SMALLEST_SIDE = 256
_FOUR_BIT = ("nf4", "gptq-4bit", "awq-4bit")


def is_diffusion(w: Workload) -> bool:
    return w.diffusion is not None


def can_shard(w: Workload, t: TrainSpec) -> bool:
    """Whether ZeRO/FSDP sharding lowers the memory per GPU as the estimator models it: not for a diffusion
    LoRA (its frozen base is replicated on every GPU; sharding it is not modelled)."""
    return not is_diffusion(w) or t.method == "full"


def single_changes(w: Workload, t: TrainSpec) -> list[Updates]:
    """Each change alone, lightest first: caching, then a lighter frozen base (LoRA only)."""
    d = w.diffusion
    assert d is not None
    out: list[Updates] = []
    if not d.cache_text_embeddings and not d.train_text_encoder:
        out.append({"diffusion.cache_text_embeddings": True})
    if not d.cache_latents:
        out.append({"diffusion.cache_latents": True})
    out.extend(_base_changes(w, t))
    return out


def stack_steps(w: Workload, t: TrainSpec) -> list[Updates]:
    """The changes to stack after checkpointing and micro_batch 1: both caches, then the lightest base."""
    steps = single_changes(w, t)
    bases = _base_changes(w, t)
    return [s for s in steps if s not in bases] + bases[-1:]


def _base_changes(w: Workload, t: TrainSpec) -> list[Updates]:
    """FP8 then NF4 for a 16-bit LoRA base; NF4 for an FP8 one (fp8_base off: the two set one storage)."""
    d = w.diffusion
    assert d is not None
    if t.method == "full" or t.base_dtype in _FOUR_BIT:
        return []
    nf4: Updates = {"train.base_precision": "nf4"}
    if d.fp8_base:
        return [{**nf4, "diffusion.fp8_base": False}]
    if t.base_precision is not None:  # an explicit base and fp8_base cannot both be set
        return [nf4]
    return [{"diffusion.fp8_base": True}, nf4]


def resolution_values(w: Workload) -> list[int]:
    """Square sides below the current resolution, in RESOLUTION_STEP steps from SMALLEST_SIDE; [] for a
    [width, height] resolution (which side to shrink is the user's choice) or a model without an
    architecture."""
    d = w.diffusion
    assert d is not None
    arch = diffusion_arch(w.arch.preset or "")
    if arch is None or not isinstance(d.resolution, int):
        return []
    step = max(RESOLUTION_STEP, arch.pixel_multiple)
    return list(range(SMALLEST_SIDE, d.resolution, step))


def swap_values(w: Workload, t: TrainSpec) -> list[int]:
    """More blocks to swap than now, up to the architecture's limit; [] for a UNet or full training."""
    d = w.diffusion
    assert d is not None
    arch = diffusion_arch(w.arch.preset or "")
    if arch is None or t.method == "full":
        return []
    return list(range(d.blocks_to_swap + 1, arch.max_blocks_to_swap + 1))


def fewest_blocks_to_swap(s: Search, extra: Updates | None = None) -> bool:
    """Keep the fewest blocks to swap that fit with `extra` (each one more costs its copies)."""
    t = s.w.train
    assert t is not None
    values = swap_values(s.w, t)
    found = bisect_values(
        values, lambda n: s.run({**(extra or {}), "diffusion.blocks_to_swap": n}), s.ok, largest=False
    )
    if found is None:
        return False
    n, est = found
    s.keep({**(extra or {}), "diffusion.blocks_to_swap": n}, est)
    return True


def largest_resolution(s: Search, extra: Updates | None = None) -> bool:
    """Keep the largest square resolution that fits with `extra`."""
    return s.largest("diffusion.resolution", resolution_values(s.w), extra)


__all__ = [
    "RESOLUTION_STEP",
    "SMALLEST_SIDE",
    "can_shard",
    "fewest_blocks_to_swap",
    "is_diffusion",
    "largest_resolution",
    "resolution_values",
    "single_changes",
    "stack_steps",
    "swap_values",
]
