"""The estimate of training or fine-tuning a diffusion model from its architecture (`[model] preset` with a
`[diffusion]` section): memory per GPU and seconds per image at a resolution.

Memory = the trained denoiser's states (full: weights, gradients, optimizer, fp32 master; LoRA: the frozen
base in BF16, FP8 or 4/8-bit plus FP32 adapters with their gradients and states) + the frozen text encoders
and VAE unless their outputs are cached + activations by resolution, micro batch and checkpointing + the
runtime. Time = images × (training FLOPs per image ÷ the sustained share of peak), plus the optimizer step
and, on several GPUs, the gradient all-reduce.

Pure: data in, an `Estimate` out (core.py adds the range, host RAM and the fit verdict). Constants are in
diffusion_constants.py, each with its source and the measurements it was fitted on.

Must not import the CLI, the planner or the catalog loaders (only `catalog.models`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import diffusion_constants as D  # noqa: N812 - the diffusion constants table
from gpuwise.estimate import interconnect_constants as NET  # noqa: N812 - the interconnect constants table
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.hardware import (
    arch_efficiency,
    bandwidth,
    inter_node_bytes_per_s,
    intra_node_bytes_per_s,
    peak_flops,
)
from gpuwise.estimate.infeasible import impossible
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.estimate.notes import Notes
from gpuwise.locale import _
from gpuwise.units import GIB
from gpuwise.workload.diffusion import DiffusionSpec
from gpuwise.workload.diffusion_arch import (
    DiffusionArch,
    activation_elements,
    clip_activation_elements,
    clip_lora_width,
    clip_macs,
    denoiser_macs,
    diffusion_arch,
    layer_count,
    lora_width,
    text_encoder_macs,
    vae_encoder_macs,
)
from gpuwise.workload.spec import TrainSpec, Workload


@dataclass(frozen=True)
class _Job:
    arch: DiffusionArch
    t: TrainSpec
    d: DiffusionSpec
    width: int
    height: int
    trainable: float  # trained parameters (the denoiser, or its LoRA adapters)


def is_diffusion_workload(w: Workload) -> bool:
    """A training workload whose model is a bundled diffusion architecture (with its [diffusion] section)."""
    return w.train is not None and w.diffusion is not None and w.model is not None


def _job(w: Workload, notes: Notes) -> _Job:
    """The architecture, settings and trained parameters of `w`, named in the assumptions."""
    t, d = w.train, w.diffusion
    assert t is not None and d is not None and w.arch.preset is not None
    arch = diffusion_arch(w.arch.preset)
    assert arch is not None
    width, height = d.width_height
    trainable = arch.denoiser_params if t.method == "full" else t.lora_rank * lora_width(arch)
    if d.train_text_encoder:
        trainable += t.lora_rank * clip_lora_width(arch)
        notes.add("LoRA on the CLIP text encoders too (train_text_encoder): their backward runs every step")
    rank = (
        "" if t.method == "full" else _(" (LoRA rank {rank} on attention and MLP)").format(rank=t.lora_rank)
    )
    notes.add(
        _(
            "{name} {method} at {width}×{height} px, {tokens} text tokens: {trained}M trained parameters"
        ).format(
            name=arch.name,
            method=t.method,
            width=width,
            height=height,
            tokens=d.text_tokens,
            trained=f"{trainable / 1e6:,.1f}",
        )
        + rank
    )
    return _Job(arch, t, d, width, height, trainable)


def diffusion_estimate(
    w: Workload, gpu: GpuSpec, *, count: int, nodes: int, calibration: Calibration | None, notes: Notes
) -> Estimate:
    """Memory, images per second and hours of the diffusion training workload `w` on `count` × `gpu`."""
    job = _job(w, notes)
    arch, t, width, height, trainable = job.arch, job.t, job.width, job.height, job.trainable
    mem = _memory(job, dp=count, notes=notes)
    capacity = gpu.memory_gib * GIB
    dtype = "bf16" if t.precision == "fp8" else t.precision
    peak, used = peak_flops(gpu, dtype, notes)
    if peak is None:
        reason = (
            f"{gpu.name} has no published dense {dtype.upper()} (or fallback) peak to estimate speed from"
        )
        return impossible(
            gpu,
            count=count,
            nodes=nodes,
            capacity=capacity,
            unit="samples/s",
            reason=reason,
            notes=notes,
            mem=mem,
        )
    if t.precision == "fp8":
        notes.add(
            _("precision fp8: timed at the BF16 peak (FP8 matmuls in diffusion trainers are not modelled)")
        )
    eff = arch_efficiency(gpu, used, calibration, notes) * notes.const(D.FAMILY_SHARE[arch.family])
    model_flops, hw_flops = _flops_per_image(job, notes)
    image_s = hw_flops / (peak * eff)
    accum = max(1, math.ceil(t.global_batch / (t.micro_batch * count))) if t.global_batch else 1
    launch_s = layer_count(arch) * notes.const(D.LAYER_OVERHEAD_S)  # loading cached latents: not modelled
    micro_s = t.micro_batch * image_s + launch_s + _swap_seconds(job, notes)
    sync_s = _optimizer_seconds(job, gpu, notes) + _allreduce_seconds(job, gpu, count, nodes, notes)
    step_s = accum * micro_s + sync_s
    images_per_step = t.micro_batch * accum * count
    throughput_total = images_per_step / step_s
    total_images = (t.samples or 0.0) * t.epochs
    hours = total_images / throughput_total / 3600
    notes.add(
        _(
            "{micro} s per micro batch of {batch} image(s) per GPU (the trainer's s/it), "
            "{step} s per optimizer step of {per_step} image(s); {total} images in all"
        ).format(
            micro=f"{micro_s:.2f}",
            batch=t.micro_batch,
            step=f"{step_s:.2f}",
            per_step=images_per_step,
            total=f"{total_images:,.0f}",
        )
    )
    fits = mem.total <= capacity
    comm_share = sync_s / step_s
    return Estimate(
        gpu=gpu.name,
        count=count,
        nodes=nodes,
        fits=fits,
        memory=mem,
        memory_capacity_bytes=capacity,
        throughput_per_gpu=throughput_total / count,
        throughput_unit="samples/s",
        hours=hours,
        mfu=model_flops * throughput_total / count / peak,
        bottleneck="memory_capacity" if not fits else "communication" if comm_share > 0.25 else "compute",
        assumptions=tuple(notes.items),
        details={
            "step_s": step_s,
            "s_per_step": step_s,
            "s_per_it": micro_s,
            "s_per_image": micro_s / t.micro_batch,
            "efficiency": eff,
            "data_parallel": float(count),
            "grad_accumulation": float(accum),
            "width_px": float(width),
            "height_px": float(height),
            "trainable_params": trainable,
            "flops_per_image": hw_flops,
        },
    )


def _flops_per_image(job: _Job, notes: Notes) -> tuple[float, float]:
    """(model FLOPs per image: forward + backward of the denoiser, hardware FLOPs: with recomputation and
    the frozen encoders run per step)."""
    arch, t, d = job.arch, job.t, job.d
    linear, attention = denoiser_macs(arch, job.width, job.height, d.text_tokens or arch.text_tokens)
    forward = 2.0 * (linear + attention)
    # Backward = 2× forward with weight gradients, 1× (input gradients only) through a frozen base.
    model = forward * (3.0 if t.method == "full" else 2.0)
    hardware = model
    if t.activation_checkpointing == "full":
        hardware += forward
    elif t.activation_checkpointing == "selective":
        hardware += forward / 2
    how = (
        _("counted from the UNet config")
        if arch.family == "unet"
        else _("24·hidden²·blocks per token + attention")
    )
    notes.add(
        _("denoiser forward {tflops} TFLOPs per image ({how}); training {times}× forward").format(
            tflops=f"{forward / 1e12:.2f}", how=how, times="3" if t.method == "full" else "2"
        )
        + (_(" (frozen base: no weight-gradient matmuls)") if t.method != "full" else "")
        + ("" if t.activation_checkpointing == "none" else _(" + recomputation"))
    )
    if not d.cache_text_embeddings:
        hardware += 2.0 * text_encoder_macs(arch, d.text_tokens or arch.text_tokens)
    if d.train_text_encoder:
        hardware += 2.0 * clip_macs(arch)  # input gradients through the frozen CLIP weights
    if not d.cache_latents:
        hardware += 2.0 * vae_encoder_macs(job.width, job.height)
        notes.add("latents not cached: the VAE encodes every image every step")
    return model, hardware


def _memory(job: _Job, *, dp: int, notes: Notes) -> MemoryBreakdown:
    """Peak bytes per GPU by part; the frozen text encoders and VAE count as weights."""
    arch, t, d = job.arch, job.t, job.d
    weights, grads, optimizer = _model_states(job, dp=dp, notes=notes)
    frozen = 0.0
    if not d.cache_text_embeddings:
        frozen += arch.text_encoder_params * 2.0
        names = " + ".join(f"{n} {p / 1e9:.2f}B" for n, p in arch.text_encoders)
        notes.add(
            _("text encoders on the GPU in BF16 ({names}); cache_text_embeddings = true frees them").format(
                names=names
            )
        )
    if not d.cache_latents:
        frozen += arch.vae_params * 2.0
    per_image = _activations_per_image(job, notes)
    if d.train_text_encoder:
        per_image += 2.0 * clip_activation_elements(arch)
    acts = per_image * t.micro_batch
    allocated = weights + frozen + grads + optimizer + acts
    frag = notes.const(MEM.FRAGMENTATION)
    overhead = notes.const(MEM.CUDA_CONTEXT_GIB) * GIB + allocated * frag
    if dp > 1:
        overhead += notes.const(MEM.NCCL_BUFFERS_GIB) * GIB
    return MemoryBreakdown(weights + frozen, grads, optimizer, acts, 0.0, overhead)


def _model_states(job: _Job, *, dp: int, notes: Notes) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) of the denoiser, per GPU."""
    arch, t, d = job.arch, job.t, job.d
    opt_state = MEM.OPTIMIZER_STATE_BYTES[t.optimizer_kind]
    notes.const(MEM.OPTIMIZER_SOURCES[t.optimizer_kind])
    n = arch.denoiser_params
    if t.method == "full":
        mixed = t.precision not in ("fp32", "tf32") and not t.pure_low_precision
        weight_b = 4.0 if t.precision in ("fp32", "tf32") else 2.0
        if t.pure_low_precision and t.optimizer_kind in ("adamw", "sgd"):
            opt_state /= 2
        master = MEM.MASTER_WEIGHT_BYTES if mixed else 0.0
        weights, grads, optimizer = n * weight_b, n * weight_b, n * (opt_state + master)
        zero = t.zero_stage
        optimizer /= dp if zero >= 1 else 1
        grads /= dp if zero >= 2 else 1
        weights /= dp if zero >= 3 else 1
        notes.add(
            _(
                "full training: {weights} B weights + {weights} B gradients + {optimizer} B "
                "optimizer{master} per parameter"
            ).format(
                weights=f"{weight_b:g}",
                optimizer=f"{opt_state + master:g}",
                master=_(" and fp32 master") if mixed else "",
            )
            + (
                _(", sharded over {count} GPUs by {sharding}").format(count=dp, sharding=t.sharding)
                if zero and dp > 1
                else ""
            )
        )
        return weights, grads, optimizer
    if d.fp8_base:
        base_b, what = notes.const(D.FP8_BASE_BYTES), "FP8 (fp8_base)"
    else:
        base_b = MEM.BASE_BYTES_PER_PARAM.get(t.base_dtype, 2.0)
        what = t.base_dtype.upper()
    lora = job.trainable
    notes.add(
        _(
            "frozen {name} in {what}: {base} GiB; LoRA adapters, their gradients and "
            "{optimizer} states in FP32 ({lora} GiB)"
        ).format(
            name=arch.name,
            what=what,
            base=f"{n * base_b / GIB:.1f}",
            optimizer=t.optimizer,
            lora=f"{lora * (8 + opt_state) / GIB:.2f}",
        )
    )
    base = n * base_b
    swap = d.blocks_to_swap
    if swap:
        # the swapped blocks live in host RAM; one is on the GPU at a time (being copied in or run)
        resident = (arch.swap_units - swap + 1) / arch.swap_units
        notes.add(
            _(
                "blocks_to_swap = {swap} of {blocks} blocks in host RAM: {gib} GiB of the base on the GPU"
            ).format(swap=swap, blocks=arch.swap_units, gib=f"{base * resident / GIB:.1f}")
        )
        base *= resident
    return base + lora * 4.0, lora * 4.0, lora * opt_state


def _activations_per_image(job: _Job, notes: Notes) -> float:
    """Bytes one image keeps for the backward, by checkpointing mode."""
    arch, t, d = job.arch, job.t, job.d
    full, inputs, largest = activation_elements(
        arch, job.width, job.height, d.text_tokens or arch.text_tokens
    )
    notes.const(D.ACTIVATIONS_SOURCE)
    mode = t.activation_checkpointing
    if mode == "none":
        kept = full
    elif mode == "full":
        kept = inputs + largest  # every block's input, and one block's own set while it is recomputed
    else:  # every other block checkpointed (SimpleTuner's gradient_checkpointing_interval = 2)
        kept = full / 2 + inputs / 2 + largest
    notes.add(
        _("activations {kept} GiB per image ({mode} checkpointing; {full} GiB without)").format(
            kept=f"{2 * kept / GIB:.2f}", mode=mode, full=f"{2 * full / GIB:.1f}"
        )
    )
    return 2.0 * kept


def _swap_seconds(job: _Job, notes: Notes) -> float:
    """Copying the swapped blocks to the GPU for the forward, the recompute and the backward of every micro
    batch over PCIe, not overlapped with compute (as gpuwise's CPU offload; kohya copies on a side stream,
    so this is an upper bound)."""
    arch, t, d = job.arch, job.t, job.d
    if not d.blocks_to_swap:
        return 0.0
    base_b = D.FP8_BASE_BYTES.value if d.fp8_base else MEM.BASE_BYTES_PER_PARAM.get(t.base_dtype, 2.0)
    passes = 3 if t.activation_checkpointing == "full" else 2
    moved = arch.denoiser_params * base_b * d.blocks_to_swap / arch.swap_units * passes
    seconds = moved / (notes.const(NET.PCIE_HOST_GBS) * 1e9)
    notes.add(
        _(
            "block swapping: {moved} GB host→GPU per micro batch ({seconds} s), not overlapped "
            "with compute (an upper bound: kohya copies on a side stream)"
        ).format(moved=f"{moved / 1e9:.1f}", seconds=f"{seconds:.2f}")
    )
    return seconds


def _optimizer_seconds(job: _Job, gpu: GpuSpec, notes: Notes) -> float:
    """The optimizer reads and writes every trained parameter's states once per step (memory-bound)."""
    bw = bandwidth(gpu, notes)
    if not bw:
        return 0.0
    return job.trainable * notes.const(D.OPTIMIZER_BYTES_PER_PARAM) / bw


def _allreduce_seconds(job: _Job, gpu: GpuSpec, count: int, nodes: int, notes: Notes) -> float:
    """A ring all-reduce of the gradients once per optimizer step, not overlapped with compute (DDP's
    bucketed overlap is left out: an upper bound, stated)."""
    if count < 2:
        return 0.0
    grad_b = 2.0 if job.t.method == "full" else 4.0
    per_gpu = 2 * (count - 1) / count * job.trainable * grad_b
    link = (
        intra_node_bytes_per_s(gpu, notes)
        if nodes == 1
        else inter_node_bytes_per_s(gpu, math.ceil(count / nodes), notes) / math.ceil(count / nodes)
    )
    notes.add("gradient all-reduce once per optimizer step, not overlapped with compute (an upper bound)")
    return per_gpu / link


__all__ = ["diffusion_estimate", "is_diffusion_workload"]
