"""The estimator's entry point: memory per GPU, throughput and time for a workload on one GPU configuration.

Pure: data in (Workload, GpuSpec, count, nodes, Calibration), an `Estimate` out; no files, clock or
printing. Fast (a few hundred calls per plan): plain arithmetic, no allocation-heavy structures.
Every constant comes from the cited tables (constants.py, memory_constants.py, interconnect_constants.py,
stacks.py) and is named in the estimate's assumptions.

`estimate` checks its inputs and hands the work to train.py or inference.py; `_finish` adds what every
estimate carries (the time range, the load-time peak, host RAM and the fit verdict).

Must not import the CLI, the planner or the catalog loaders (only `catalog.models`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpuwise.catalog.models import GpuSpec
from gpuwise.errors import ConfigError
from gpuwise.estimate import interconnect_constants as NET  # noqa: N812 - the links table
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.calibration_report import apply_hours_ratio
from gpuwise.estimate.diffusion import diffusion_estimate, is_diffusion_workload
from gpuwise.estimate.encdec import encdec_inference_estimate
from gpuwise.estimate.inference import inference_estimate
from gpuwise.estimate.measured import measured_estimate
from gpuwise.estimate.models import Estimate
from gpuwise.estimate.notes import Notes
from gpuwise.estimate.stacks import (
    HOURS_RANGE,
    HOURS_RANGE_POOLED,
    RANGE_MIN_HALF_WIDTH,
    RANGE_SOURCE,
    STACKS,
)
from gpuwise.estimate.train import train_estimate
from gpuwise.locale import _, ngettext
from gpuwise.units import GIB
from gpuwise.workload.spec import InferenceSpec, Workload, default_framework


def default_nodes(count: int) -> int:
    """The fewest nodes of 8 GPUs that hold `count` GPUs (docs/json.md)."""
    return max(1, math.ceil(count / NET.GPUS_PER_NODE))


def estimate(  # noqa: PLR0917 - the positional (workload, gpu, count, nodes, calibration) is public API
    workload: Workload,
    gpu: GpuSpec,
    count: int = 1,
    nodes: int | None = None,
    calibration: Calibration | None = None,
    network_gbps: float | None = None,
) -> Estimate:
    """Memory per GPU, throughput and time for `workload` on `count` × `gpu` over `nodes` nodes.

    `network_gbps`: the inter-node bandwidth of one node (Gb/s, all NICs), when the instance is known or the
    user gives it; otherwise InfiniBand/EFA for HPC GPUs and a conservative Ethernet default for the rest.
    Uneven layouts (10 GPUs on 4 nodes) are allowed when `nodes` is given.
    """
    if count < 1:
        raise ConfigError(
            _("GPU count must be at least 1, got {count}").format(count=count),
            fix=_("pass --count 1 or more"),
        )
    n_nodes = default_nodes(count) if nodes is None else nodes
    if n_nodes < 1 or n_nodes > count:
        raise ConfigError(
            ngettext(
                "{count} GPU cannot be spread over {nodes} nodes",
                "{count} GPUs cannot be spread over {nodes} nodes",
                count,
            ).format(count=count, nodes=n_nodes),
            fix=_("give at most one node per GPU (e.g. --count 16 --nodes 2)"),
        )
    if network_gbps is not None and not (math.isfinite(network_gbps) and network_gbps > 0):
        raise ConfigError(
            _("network bandwidth must be a positive number of Gb/s, got {value}").format(value=network_gbps),
            fix=_("pass e.g. --network-gbps 100 for 100 Gigabit Ethernet"),
        )
    notes = Notes()
    if workload.task == "measured":
        if calibration is not None and calibration.kind == "bench":
            notes.add(
                _("calibration {source}: not used for a measured task (its speed is measured)").format(
                    source=calibration.source
                )
            )
        est = measured_estimate(workload, gpu, count=count, nodes=n_nodes, notes=notes)
        return apply_hours_ratio(est, calibration, workload.task)
    if workload.arch.source:
        model = workload.arch.preset or _("from config.json")
        notes.add(_("model {model}: {source}").format(model=model, source=workload.arch.source))
    if is_diffusion_workload(workload):
        est = diffusion_estimate(
            workload, gpu, count=count, nodes=n_nodes, calibration=calibration, notes=notes
        )
        stack = "tuned"  # default_framework for every non-transformer; diffusion workloads take no framework
    elif workload.train is not None:
        est = train_estimate(
            workload,
            gpu,
            count=count,
            nodes=n_nodes,
            calibration=calibration,
            notes=notes,
            network_gbps=network_gbps,
        )
        stack = default_framework(workload.task, workload.train, workload.arch.kind)
    elif workload.arch.encoder_layers is not None:  # T5- and Whisper-style models: per stack
        est = encdec_inference_estimate(
            workload, gpu, count=count, nodes=n_nodes, calibration=calibration, notes=notes
        )
        stack = "inference"
    else:
        est = inference_estimate(
            workload, gpu, count=count, nodes=n_nodes, calibration=calibration, notes=notes
        )
        stack = "inference"
    return apply_hours_ratio(_finish(est, workload, stack, notes), calibration, workload.task)


def _finish(est: Estimate, w: Workload, stack_name: str, notes: Notes) -> Estimate:
    """Add what every estimate carries: the time range, the load-time peak, host RAM and the fit verdict."""
    load_peak, host_ram = _load_peak_and_host_ram(est, w, stack_name, notes)
    verdict = _fit_verdict(est, max(est.memory.total, load_peak), notes)
    fits = verdict == "fits"
    bottleneck = est.bottleneck
    if not fits and bottleneck != "memory_capacity" and est.infeasible_reason is None:
        bottleneck = "memory_capacity"
    hours_low, hours_high, src = _hours_range(est.hours, stack_name, notes)
    if est.meets_target is not None and w.inference is not None:
        est = replace(
            est,
            throughput_range=(
                est.throughput_total * est.hours / hours_high,
                est.throughput_total * est.hours / hours_low,
            ),
        )
        hours_low, hours_high = _service_range(est, w.inference, hours_low, hours_high)
    return replace(
        est,
        fits=fits,
        fit_verdict=verdict,
        bottleneck=bottleneck,
        load_peak_bytes=load_peak,
        host_ram_bytes=host_ram,
        hours_low=hours_low,
        hours_high=hours_high,
        stack=stack_name,
        range_source=src,
        assumptions=tuple(notes.items),
    )


def _load_peak_and_host_ram(est: Estimate, w: Workload, stack_name: str, notes: Notes) -> tuple[float, float]:
    """(GPU bytes while loading, host RAM bytes per node) of a training job; (0, 0) for inference.

    FSDP/ZeRO-3 without low_cpu_mem_usage loads the full model on every GPU before sharding; host RAM holds
    one copy of the weights (meta-device / rank-0 loading) or one per rank, plus each rank's runtime and
    what CPU offload keeps there.
    """
    t = w.train
    if t is None:
        return 0.0, 0.0
    load_peak = 0.0
    stack = STACKS[stack_name]
    meta = t.low_cpu_mem_usage if t.low_cpu_mem_usage is not None else stack.meta_init
    weights_b = w.arch.n_params * MEM.BASE_BYTES_PER_PARAM.get(t.base_dtype, 2.0)
    gpn = math.ceil(est.count / est.nodes)
    if t.zero_stage >= 3 and t.low_cpu_mem_usage is False:
        load_peak = weights_b / (t.tensor_parallel * t.pipeline_parallel) + MEM.CUDA_CONTEXT_GIB.value * GIB
        notes.add(
            _(
                "low_cpu_mem_usage = false with FSDP/ZeRO-3: every rank holds the full model on its GPU "
                "before sharding ({gib} GiB peak while loading); meta-device init or "
                "low_cpu_mem_usage = true avoids it"
            ).format(gib=f"{load_peak / GIB:.1f}")
        )
    copies = 1 if meta else gpn
    host_ram = copies * weights_b + gpn * notes.const(MEM.HOST_RAM_PER_RANK_GIB) * GIB
    host_ram += gpn * est.details.get("offloaded_bytes_per_gpu", 0.0)
    notes.add(
        _(
            "host RAM per node ≈ {gib} GiB: {copies} full copy of the weights while loading {how} "
            "+ {rank} GiB per rank"
        ).format(
            gib=f"{host_ram / GIB:.0f}",
            copies=copies,
            how=_("(meta-device / rank-0 loading)")
            if meta
            else _("(every one of the {count} ranks loads its own)").format(count=gpn),
            rank=f"{MEM.HOST_RAM_PER_RANK_GIB.value:g}",
        )
    )
    return load_peak, host_ram


def _fit_verdict(est: Estimate, need: float, notes: Notes) -> str:
    """fits, tight (within the margin fragmentation decides), does_not_fit, or unknown (no capacity or no
    memory figure)."""
    capacity = est.memory_capacity_bytes
    margin = notes.const(MEM.TIGHT_MARGIN)
    if capacity <= 0 or (est.infeasible_reason is not None and est.memory.total <= 0):
        return "unknown"
    if need > capacity:
        return "does_not_fit"
    if need > capacity * (1 - margin):
        notes.add(
            _(
                "need {need} GiB is within {margin} of the {capacity} GiB capacity: "
                "fragmentation decides, expect an out-of-memory error (lower micro_batch or seq_len)"
            ).format(need=f"{need / GIB:.1f}", margin=f"{margin:.0%}", capacity=f"{capacity / GIB:.1f}")
        )
        return "tight"
    return "fits"


def _hours_range(hours: float, stack_name: str, notes: Notes) -> tuple[float, float, str]:
    """(low, high, whose spread): the estimate scaled by the residual spread of the stack's real jobs, or
    the pooled spread where the stack has too few; never narrower than ±RANGE_MIN_HALF_WIDTH."""
    low_mult, high_mult = HOURS_RANGE.get(stack_name, HOURS_RANGE_POOLED)
    src = "its own" if stack_name in HOURS_RANGE else "the pooled"
    notes.const(RANGE_SOURCE)
    spread = _("its own") if stack_name in HOURS_RANGE else _("the pooled")
    notes.add(
        _("range {low}-{high}× the estimate from {whose} residual spread ({stack})").format(
            low=f"{low_mult:.2f}", high=f"{high_mult:.2f}", whose=spread, stack=stack_name
        )
    )
    hours_low = hours * min(1.0 - RANGE_MIN_HALF_WIDTH, low_mult)
    hours_high = hours * max(1.0 + RANGE_MIN_HALF_WIDTH, high_mult)
    return hours_low, hours_high, src


def _service_range(est: Estimate, inf: InferenceSpec, low: float, high: float) -> tuple[float, float]:
    """The range of a rate served for `duration_hours`: the machines are rented for the whole duration
    however fast they are (the low end was shorter than the service, e.g. 25 of its 30 days), and longer
    only where the slow end of the throughput range misses the target (the hours stretched to the total)."""
    duration = inf.duration_hours or 0.0
    target = inf.target_output_tokens_per_s or 0.0
    if not (duration > 0 and target > 0 and est.throughput_total > 0 and est.hours > 0):
        return low, high
    unfloored = duration * target / est.throughput_total  # hours the traffic alone would take
    return max(duration, unfloored * low / est.hours), max(duration, unfloored * high / est.hours)


__all__ = ["default_nodes", "estimate"]
