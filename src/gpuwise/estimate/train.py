"""The training estimate: the job's layout and work per step, its memory (train_memory.py), and the time of
one optimizer step from compute (train_compute.py), fixed costs (train_fixed.py) and communication
(train_comm.py), turned into throughput, hours, MFU and a bottleneck.

Pure: data in, an `Estimate` out (before core.py adds the range, host RAM and the fit verdict).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate import interconnect_constants as NET  # noqa: N812 - the links table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.hardware import peak_flops
from gpuwise.estimate.infeasible import impossible
from gpuwise.estimate.lengths import NO_SEQUENCE, Lengths, lengths
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.estimate.notes import Notes
from gpuwise.estimate.stacks import STACKS, Stack
from gpuwise.estimate.train_comm import data_parallel_seconds, tensor_parallel_seconds
from gpuwise.estimate.train_compute import Flops, compute_seconds, efficiency, flops_per_unit, fp8_speed
from gpuwise.estimate.train_fixed import offload_seconds, optimizer_step_seconds
from gpuwise.estimate.train_memory import train_memory
from gpuwise.locale import _
from gpuwise.units import GIB
from gpuwise.workload.spec import TrainSpec, Workload, default_framework


@dataclass(frozen=True)
class _Job:
    """A training job laid out on its GPUs: what the phases of the step time read."""

    w: Workload
    t: TrainSpec
    gpu: GpuSpec
    stack: Stack
    count: int
    nodes: int
    dp: int  # data-parallel replicas
    gpn: int  # GPUs on the fullest node
    accum: int  # micro batches per optimizer step
    network_gbps: float | None
    notes: Notes


@dataclass(frozen=True)
class _Step:
    """Seconds of one optimizer step, by part, and the whole step (`step_s`: compute and data-parallel
    traffic overlap by the stack's share; tensor-parallel traffic and fixed costs add)."""

    compute_s: float
    fixed_s: float  # per-step overhead of the stack + optimizer step + CPU offload
    optimizer_s: float
    offload_s: float
    tp_s: float
    dp_s: float
    step_s: float


def train_estimate(
    w: Workload,
    gpu: GpuSpec,
    *,
    count: int,
    nodes: int,
    calibration: Calibration | None,
    notes: Notes,
    network_gbps: float | None = None,
) -> Estimate:
    """Memory, throughput and hours of the training workload `w` on `count` × `gpu` over `nodes` nodes."""
    t = w.train
    assert t is not None
    m = w.arch
    stack = _announce_stack(w, t, notes)
    tp, pp = t.tensor_parallel, t.pipeline_parallel
    capacity = gpu.memory_gib * GIB
    transformer = m.kind == "transformer"
    unit = "tokens/s" if transformer else "samples/s"
    if tp * pp > count:
        reason = f"tensor_parallel × pipeline_parallel = {tp * pp} needs at least {tp * pp} GPUs, got {count}"
        return impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes
        )
    dp, gpn = _layout(t, count=count, nodes=nodes, notes=notes)
    lens = lengths(t, notes) if transformer else NO_SEQUENCE
    mem, offloaded = train_memory(
        w, t, dp=dp, tp=tp, pp=pp, count=count, stack=stack, seq_mem=lens.peak_len, notes=notes
    )
    # Work per step (computed tokens: padded when unpacked).
    seq = lens.batch_len if transformer else 1
    units_per_micro = t.micro_batch * (seq if transformer else 1)  # tokens or samples per micro batch
    accum = _accumulation(t, dp=dp, notes=notes)
    flops = flops_per_unit(m, t, lens, notes)
    job = _Job(w, t, gpu, stack, count, nodes, dp, gpn, accum, network_gbps, notes)

    dtype = t.precision
    peak, used_dtype = peak_flops(gpu, "bf16" if dtype == "fp8" else dtype, notes)
    if peak is None:
        reason = (
            f"{gpu.name} has no published dense {dtype.upper()} (or fallback) peak to estimate speed from"
        )
        return impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes, mem=mem
        )
    eff, compute_s = _compute(
        job,
        flops=flops,
        peak=peak,
        used_dtype=used_dtype,
        units_per_micro=units_per_micro,
        calibration=calibration,
    )
    step = _step_seconds(job, compute_s=compute_s, seq=seq)
    # Throughput in real tokens (padding is work, not progress).
    units_per_step = units_per_micro * accum * dp / lens.pad_factor
    throughput_total = units_per_step / step.step_s
    return _train_result(
        job,
        mem=mem,
        capacity=capacity,
        unit=unit,
        lens=lens,
        throughput_total=throughput_total,
        step=step,
        model_flops=flops.model,
        peak=peak,
        eff=eff,
        offloaded=offloaded,
    )


def _announce_stack(w: Workload, t: TrainSpec, notes: Notes) -> Stack:
    """The training stack the job runs on, named in the notes with the defaults it implies."""
    m = w.arch
    stack_name = default_framework(w.task, t, m.kind)
    stack = STACKS[stack_name]
    if t.framework is None:
        what = (_("{method} fine-tune") if w.task == "finetune" else _("{method} training")).format(
            method=t.method
        )
        notes.add(
            _(
                "no framework given: assuming {stack}, the common stack for a {what} (set [train] "
                'framework, e.g. "unsloth" or "tuned", to change)'
            ).format(stack=stack_name, what=what)
        )
    elif t.framework == "generic":
        notes.add(_('framework "generic" is the old name of "tuned"'))
    notes.add(stack.describe())
    if m.kind == "transformer" and t.method != "full" and t.base_precision is None and t.method == "lora":
        notes.add(
            _(
                'no base_precision: the frozen base is kept in {dtype} (set base_precision = "nf4" '
                'or "int8" for a quantized base)'
            ).format(dtype=t.base_dtype)
        )
    return stack


def _layout(t: TrainSpec, *, count: int, nodes: int, notes: Notes) -> tuple[int, int]:
    """(data-parallel replicas, GPUs on the fullest node), saying which GPUs idle and how uneven it is."""
    tp, pp = t.tensor_parallel, t.pipeline_parallel
    dp = count // (tp * pp)
    if dp * tp * pp != count:
        notes.add(
            _("{idle} of {count} GPUs idle: count is not a multiple of tp × pp = {group}").format(
                idle=count - dp * tp * pp, count=count, group=tp * pp
            )
        )
    gpn = math.ceil(count / nodes)
    if count % nodes:
        notes.add(
            _(
                "uneven layout: {count} GPUs on {nodes} nodes, up to {per_node} per node (the fullest node's "
                "network share paces the step)"
            ).format(count=count, nodes=nodes, per_node=gpn)
        )
    return dp, gpn


def _accumulation(t: TrainSpec, *, dp: int, notes: Notes) -> int:
    """Micro batches per GPU per optimizer step: from global_batch, else one."""
    if t.global_batch is not None:
        return max(1, math.ceil(t.global_batch / (t.micro_batch * dp)))
    notes.add(_("no global_batch: one micro batch per GPU per optimizer step (no gradient accumulation)"))
    return 1


def _compute(
    job: _Job,
    *,
    flops: Flops,
    peak: float,
    used_dtype: str,
    units_per_micro: float,
    calibration: Calibration | None,
) -> tuple[float, float]:
    """(share of the dense peak reached, compute seconds per optimizer step of one replica)."""
    w, t, gpu, stack, notes = job.w, job.t, job.gpu, job.stack, job.notes
    eff = efficiency(
        gpu,
        w.arch,
        t,
        stack,
        used_dtype=used_dtype,
        units_per_micro=units_per_micro,
        calibration=calibration,
        notes=notes,
    )
    speed = peak * eff
    if t.precision == "fp8":
        speed = fp8_speed(speed, gpu, flops, notes)
    compute_s = compute_seconds(
        w,
        t,
        gpu,
        stack,
        flops=flops,
        speed=speed,
        units_per_step=units_per_micro * job.accum,
        accum=job.accum,
        notes=notes,
    )
    return eff, compute_s


def _step_seconds(job: _Job, *, compute_s: float, seq: float) -> _Step:
    """The step's fixed and communication costs around its compute, and the whole step."""
    w, t, gpu, stack, notes = job.w, job.t, job.gpu, job.stack, job.notes
    opt_s = optimizer_step_seconds(w, t, gpu, stack, dp=job.dp, notes=notes)
    offload_s = (
        offload_seconds(w, t, stack, dp=job.dp, accum=job.accum, gpn=job.gpn, notes=notes)
        if t.offload != "none"
        else 0.0
    )
    if offload_s:
        opt_s = 0.0  # the step runs on the CPU, inside offload_s
    fixed_s = stack.step_overhead_s + opt_s + offload_s
    tp_s = tensor_parallel_seconds(
        w, t, gpu, seq=seq, accum=job.accum, gpn=job.gpn, notes=notes, network_gbps=job.network_gbps
    )
    dp_s = data_parallel_seconds(
        w,
        t,
        gpu,
        dp=job.dp,
        nodes=job.nodes,
        gpn=job.gpn,
        accum=job.accum,
        notes=notes,
        network_gbps=job.network_gbps,
    )
    overlap = 0.0
    if job.dp > 1:
        overlap = stack.comm_overlap
        if stack.name == "tuned":
            notes.const(NET.COMM_OVERLAP)
    step_s = max(compute_s, dp_s) + (1 - overlap) * min(compute_s, dp_s) + tp_s + fixed_s
    return _Step(compute_s, fixed_s, opt_s, offload_s, tp_s, dp_s, step_s)


def _total_units(t: TrainSpec, *, transformer: bool, lens: Lengths) -> float:
    """Real tokens (transformer) or samples the whole job trains on."""
    if transformer:
        if t.tokens is not None:
            return t.tokens * t.epochs
        return (t.samples or 0) * t.epochs * lens.real_per_sample
    return (t.samples if t.samples is not None else (t.tokens or 0)) * t.epochs


def _train_result(
    job: _Job,
    *,
    mem: MemoryBreakdown,
    capacity: float,
    unit: str,
    lens: Lengths,
    throughput_total: float,
    step: _Step,
    model_flops: float,
    peak: float,
    eff: float,
    offloaded: float,
) -> Estimate:
    """Hours (compute, or reading the data set when slower), MFU and the bottleneck of the step."""
    w, t, gpu, count, notes = job.w, job.t, job.gpu, job.count, job.notes
    throughput_per_gpu = throughput_total / count
    total_units = _total_units(t, transformer=w.arch.kind == "transformer", lens=lens)
    goodput = 1.0
    if count > 1:
        goodput = 1 - notes.const(K.MAX_GOODPUT_LOSS) * min(1.0, math.log(count) / math.log(16384))
    compute_hours = total_units / throughput_total / 3600 / goodput
    hours = compute_hours
    bottleneck = "compute"
    comm_exposed = step.step_s - step.compute_s - step.fixed_s
    if comm_exposed > 0.25 * step.step_s:
        bottleneck = "communication"
    io_hours = 0.0
    if w.data.dataset_gb > 0:
        rate = notes.const(K.STORAGE_READ_GBS_PER_NODE) * job.nodes
        io_hours = w.data.dataset_gb * t.epochs / rate / 3600
        if io_hours > compute_hours:
            hours = io_hours
            bottleneck = "io"
    fits = mem.total <= capacity
    if not fits:
        bottleneck = "memory_capacity"
    fp8 = t.precision == "fp8" and gpu.peak_tflops("fp8")
    mfu = model_flops * throughput_per_gpu / (peak * (2 if fp8 else 1))
    return Estimate(
        gpu=gpu.name,
        count=count,
        nodes=job.nodes,
        fits=fits,
        memory=mem,
        memory_capacity_bytes=capacity,
        throughput_per_gpu=throughput_per_gpu,
        throughput_unit=unit,
        hours=hours,
        mfu=mfu,
        bottleneck=bottleneck,
        assumptions=tuple(notes.items),
        details={
            "step_s": step.step_s,
            "compute_s": step.compute_s,
            "data_parallel_comm_s": step.dp_s,
            "tensor_parallel_comm_s": step.tp_s,
            "efficiency": eff,
            "data_parallel": float(job.dp),
            "grad_accumulation": float(job.accum),
            "io_hours": io_hours,
            "goodput": goodput,
            "s_per_step": step.step_s / goodput,
            "optimizer_step_s": step.optimizer_s,
            "offload_s": step.offload_s,
            "offloaded_bytes_per_gpu": offloaded,
            "padding_factor": lens.pad_factor,
        },
    )
