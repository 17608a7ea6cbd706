"""The inference estimate: memory per GPU (weights, KV cache, activations), prefill and decode time per
replica, and what the whole deployment serves against its request count or target rate.

Pure: decode streams the local weights and KV cache at the bandwidth efficiency; prefill runs at a GEMM
efficiency; every constant is cited in constants.py or memory_constants.py and named in the notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.hardware import bandwidth, inter_node_bytes_per_s, intra_node_bytes_per_s, peak_flops
from gpuwise.estimate.infeasible import impossible
from gpuwise.estimate.model_math import matmul_params
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.estimate.notes import Notes
from gpuwise.estimate.serving import QUEUE_MODEL, Latency, ReplicaTimes, largest, latency, latency_note, meets
from gpuwise.locale import _
from gpuwise.units import GIB
from gpuwise.workload.spec import InferenceSpec, Workload


@dataclass(frozen=True)
class _Serving:
    """One deployment: the workload, its GPUs and replicas, and the hardware figures the time model reads."""

    w: Workload
    inf: InferenceSpec
    gpu: GpuSpec
    count: int
    nodes: int
    replicas: int
    capacity: float
    unit: str
    mem: MemoryBreakdown
    peak: float  # dense FLOP/s of the compute dtype
    bw: float  # memory bandwidth, bytes/s
    notes: Notes


def inference_estimate(
    w: Workload, gpu: GpuSpec, *, count: int, nodes: int, calibration: Calibration | None, notes: Notes
) -> Estimate:
    """Memory, throughput and hours of the inference workload `w` on `count` × `gpu` over `nodes` nodes."""
    inf = w.inference
    assert inf is not None
    m = w.arch
    tp = inf.tensor_parallel
    capacity = gpu.memory_gib * GIB
    transformer = m.kind == "transformer"
    unit = "output tokens/s" if transformer else "samples/s"
    if tp > count:
        reason = _("tensor_parallel = {tp} needs {tp} GPUs, got {count}").format(tp=tp, count=count)
        return impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes
        )
    replicas = count // tp
    if replicas * tp != count:
        notes.add(
            _("{idle} of {count} GPUs idle: count is not a multiple of tensor_parallel").format(
                idle=count - replicas * tp, count=count
            )
        )
    mem, weights, kv_per_token = _memory(w, inf, notes)

    dtype = {"int8": "int8", "fp8": "fp8", "int4": "int4"}.get(inf.weights_precision, inf.weights_precision)
    peak, used = peak_flops(gpu, dtype, notes)
    bw = bandwidth(gpu, notes)
    if peak is None or bw is None:
        reason = (
            _("{gpu} lacks a published peak figure")
            if peak is None
            else _("{gpu} lacks a published memory bandwidth figure")
        ).format(gpu=gpu.name)
        return impossible(
            gpu, count=count, nodes=nodes, capacity=capacity, unit=unit, reason=reason, notes=notes, mem=mem
        )
    prefill_eff, bw_eff = _efficiencies(gpu, used, calibration, notes)
    s = _Serving(w, inf, gpu, count, nodes, replicas, capacity, unit, mem, peak, bw, notes)
    if not transformer:
        return _per_sample(s, used=used, weights=weights, bw_eff=bw_eff)
    return _prefill_and_decode(
        s, weights=weights, kv_per_token=kv_per_token, prefill_eff=prefill_eff, bw_eff=bw_eff
    )


def _weights_bytes_per_param(precision: str, notes: Notes) -> float:
    if precision == "int4":
        return notes.const(MEM.INT4_BYTES_PER_PARAM)
    return K.BYTES[precision]


def _memory(w: Workload, inf: InferenceSpec, notes: Notes) -> tuple[MemoryBreakdown, float, float]:
    """(memory per GPU, weight bytes per GPU, KV-cache bytes per token per GPU) of one replica at its
    concurrency, every sequence at its full context."""
    m = w.arch
    tp = inf.tensor_parallel
    layers = m.layers or 0
    c = inf.concurrency
    transformer = m.kind == "transformer"
    wb = _weights_bytes_per_param(inf.weights_precision, notes)
    weights = m.n_params * wb / tp
    kv_heads_local = max(m.n_kv_heads / tp, 1.0)
    kv_b = _weights_bytes_per_param(inf.kv_dtype, notes) if inf.kv_dtype != "int4" else 0.5
    kv_per_token = 2 * layers * kv_heads_local * m.n_head_dim * kv_b if transformer else 0.0
    ctx_max = inf.prompt_tokens + inf.output_tokens
    kv = kv_per_token * ctx_max * c
    if transformer:
        notes.add(
            _(
                "KV cache: 2·L·kv_heads·head_dim·{bytes} B per token ({heads} KV heads, {dtype}), "
                "{count} sequences × {tokens} tokens per replica"
            ).format(bytes=f"{kv_b:g}", heads=m.n_kv_heads, dtype=inf.kv_dtype, count=c, tokens=ctx_max)
        )
        chunk = min(c * max(inf.prompt_tokens, 1), 8192)
        acts = chunk * ((m.hidden or 0) * 8 + m.n_ffn * 6) / tp + c * (m.vocab or 0) * 4
    else:
        # Inference keeps one layer's activations at a time: a third of the training figure is generous.
        acts = (m.flops_per_sample or 0) * MEM.ACT_BYTES_PER_FLOP_BY_KIND[m.kind] / 3 * c
    allocated = weights + kv + acts
    overhead = notes.const(MEM.CUDA_CONTEXT_GIB) * GIB + allocated * notes.const(MEM.FRAGMENTATION)
    if tp > 1:
        overhead += notes.const(MEM.NCCL_BUFFERS_GIB) * GIB
    return MemoryBreakdown(weights, 0.0, 0.0, acts, kv, overhead), weights, kv_per_token


def _efficiencies(
    gpu: GpuSpec, used: str, calibration: Calibration | None, notes: Notes
) -> tuple[float, float]:
    """(prefill share of dense peak, decode share of memory bandwidth): defaults, or from a calibration
    measured on this GPU or another of its generation."""
    prefill_eff = notes.const(K.PREFILL_EFFICIENCY)
    ref = calibration.reference if calibration is not None else None
    if calibration is None or not (
        calibration.applies_to(gpu.name) or (calibration.same_generation(gpu) and ref is not None)
    ):
        return prefill_eff, notes.const(K.DECODE_BANDWIDTH_EFFICIENCY)
    # Both defaults are the same for every GPU, so on another GPU of the measured generation the measured
    # ratio to the default gives the measured figure itself; only the label differs.
    where = (
        _(" on {gpu} (same {arch} generation, ratio applied)").format(gpu=ref.name, arch=ref.architecture)
        if ref is not None and not calibration.applies_to(gpu.name)
        else ""
    )
    frac = calibration.gemm_fraction.get(used) or calibration.gemm_fraction.get("bf16")
    if frac:
        prefill_eff = frac * K.TRAIN_EFF_PER_GEMM_FRACTION.value / 0.67 * 0.8
    if not calibration.memory_bandwidth_fraction:
        return prefill_eff, notes.const(K.DECODE_BANDWIDTH_EFFICIENCY)
    bw_eff = calibration.memory_bandwidth_fraction * notes.const(K.DECODE_EFF_PER_BANDWIDTH_FRACTION)
    notes.add(
        _("calibration {source}: measured memory bandwidth{where} replaces the default").format(
            source=calibration.source, where=where
        )
    )
    return prefill_eff, bw_eff


def _per_sample(s: _Serving, *, used: str, weights: float, bw_eff: float) -> Estimate:
    """A model without decode steps (CNN, diffusion, generic): a batch of `concurrency` samples per step,
    bound by compute or by reading the weights."""
    m, inf, notes = s.w.arch, s.inf, s.notes
    tp = inf.tensor_parallel
    c = inf.concurrency
    # Same efficiency as training for this kind (convolutions, norms and data movement, not big GEMMs).
    notes.const(K.KIND_EFFICIENCY_SOURCE)
    arch = K.ARCH_EFFICIENCY.get(s.gpu.architecture.lower(), K.ARCH_EFFICIENCY_DEFAULT)
    kind_eff = K.KIND_EFFICIENCY[m.kind] * arch / K.ARCH_EFFICIENCY["ampere"]
    if used == "fp32":
        kind_eff = notes.const(K.FP32_SIMT_EFFICIENCY)
    flops = (m.flops_per_sample or 0) * c
    step = max(flops / (s.peak * kind_eff * tp), weights / (s.bw * bw_eff))
    thr_replica = c / step
    total = _units_to_serve(inf, per_request=1)
    return _inference_result(
        s,
        thr_total=thr_replica * s.replicas,
        total_units=total,
        mfu=flops / c * thr_replica * s.replicas / s.count / s.peak,
        bottleneck="compute",
        details={},
    )


def _prefill_and_decode(
    s: _Serving, *, weights: float, kv_per_token: float, prefill_eff: float, bw_eff: float
) -> Estimate:
    """A transformer replica serves cohorts of `concurrency` requests: every prompt prefilled, then
    output_tokens decode steps, each bound by streaming weights + KV cache or by compute, plus overhead."""
    m, inf, notes = s.w.arch, s.inf, s.notes
    c = inf.concurrency
    n_act = matmul_params(m)
    p = inf.prompt_tokens
    step = _DecodeStep(s, weights=weights, kv_per_token=kv_per_token, prefill_eff=prefill_eff, bw_eff=bw_eff)
    # Prefill: 2N per prompt token + causal attention.
    prefill_s = step.prefill_flops() / (inf.tensor_parallel * s.peak * prefill_eff)
    mem_s, comp_s, step_s = step.parts(c)
    cohort_s = c * prefill_s + inf.output_tokens * step_s
    thr_replica = c * inf.output_tokens / cohort_s
    bottleneck = "memory_bandwidth" if mem_s >= comp_s else "compute"
    thr_total = thr_replica * s.replicas
    total_out = _units_to_serve(inf, per_request=inf.output_tokens)
    model_flops_per_out = (2 * n_act * (p + inf.output_tokens)) / inf.output_tokens
    mfu = model_flops_per_out * thr_total / s.count / s.peak
    notes.add(
        _(
            "decode step = max(weights + KV read at the bandwidth efficiency, 2·N·concurrency FLOPs) "
            "+ overhead"
        )
    )
    # A prompt prefilled by itself still reads every local weight once (short prompts are memory-bound).
    alone_s = max(prefill_s, weights / (s.bw * bw_eff)) + step.overhead(1)
    times = ReplicaTimes(prefill_s, alone_s, step.seconds, inf.output_tokens)
    lat = _with_limits(s, latency(times, concurrency=c, batching=inf.batching), times)
    if inf.batching == "continuous" and c > 1:
        notes.const(QUEUE_MODEL)
    notes.add(latency_note(lat))
    details = {
        "prefill_s": prefill_s,
        "decode_step_s": step_s,
        "decode_memory_s": mem_s,
        "decode_compute_s": comp_s,
        "replicas": float(s.replicas),
    }
    est = _inference_result(
        s, thr_total=thr_total, total_units=total_out, mfu=mfu, bottleneck=bottleneck, details=details
    )
    return replace(est, latency=lat)


def _with_limits(s: _Serving, lat: Latency, times: ReplicaTimes) -> Latency:
    """`lat` with the most requests in flight per replica that fit in memory (outside the allocator's
    margin, as the fit verdict reads it) and, when the workload sets latency targets, that also meet them."""
    margin = MEM.TIGHT_MARGIN.value

    def fits(n: int) -> bool:
        mem, _, _ = _memory(s.w, s.inf.model_copy(update={"concurrency": n}), Notes())
        return mem.total <= s.capacity * (1 - margin)

    in_memory = largest(fits)
    targets = s.w.constraints
    if targets.max_latency_s is None and targets.max_ttft_s is None:
        return replace(lat, max_concurrency_in_memory=in_memory)
    batching = s.inf.batching
    within = largest(
        lambda n: (
            n <= in_memory
            and meets(
                latency(times, concurrency=n, batching=batching), targets.max_latency_s, targets.max_ttft_s
            )
        )
    )
    return replace(lat, max_concurrency_in_memory=in_memory, max_concurrency_within_targets=within)


class _DecodeStep:
    """One replica's decode step at n sequences: streaming the local weights and the KV cache of every
    sequence, or computing n tokens, whichever is slower, plus the per-step and tensor-parallel overhead."""

    def __init__(
        self, s: _Serving, *, weights: float, kv_per_token: float, prefill_eff: float, bw_eff: float
    ) -> None:
        m, inf, gpu, notes = s.w.arch, s.inf, s.gpu, s.notes
        self.s, self.weights, self.kv_per_token = s, weights, kv_per_token
        self.prefill_eff, self.bw_eff = prefill_eff, bw_eff
        self.layers = m.layers or 0
        self.n_act = matmul_params(m)
        self.qd = (m.heads or 1) * m.n_head_dim
        self.ctx_avg = inf.prompt_tokens + inf.output_tokens / 2
        self.overhead_s = notes.const(K.DECODE_STEP_OVERHEAD_S)
        self.link = self.lat = 0.0
        tp = inf.tensor_parallel
        if tp > 1:
            gpn = math.ceil(s.count / s.nodes)
            self.lat = notes.const(K.TP_LAYER_LATENCY_S)
            self.link = (
                intra_node_bytes_per_s(gpu, notes)
                if tp <= gpn
                else inter_node_bytes_per_s(gpu, gpn, notes) / gpn
            )

    def prefill_flops(self) -> float:
        p = self.s.inf.prompt_tokens
        return 2 * self.n_act * p + 2 * self.layers * self.qd * p * p

    def parts(self, c: int) -> tuple[float, float, float]:
        """(memory-bound time, compute-bound time, step time) with c sequences."""
        s, tp = self.s, self.s.inf.tensor_parallel
        mem_s = (self.weights + self.kv_per_token * self.ctx_avg * c) / (s.bw * self.bw_eff)
        step_flops = (2 * self.n_act * c + 4 * self.layers * self.qd * self.ctx_avg * c) / tp
        comp_s = step_flops / (s.peak * self.prefill_eff)
        return mem_s, comp_s, max(mem_s, comp_s) + self.overhead(c)

    def overhead(self, c: int) -> float:
        """Per-step time beyond the kernels: scheduling and sampling, and the tensor-parallel all-reduces
        (two per layer, latency plus c tokens' activations over the link)."""
        tp = self.s.inf.tensor_parallel
        if tp == 1:
            return self.overhead_s
        hidden = self.s.w.arch.hidden or 0
        return self.overhead_s + 2 * self.layers * (self.lat + 2 * (tp - 1) / tp * c * hidden * 2 / self.link)

    def seconds(self, c: int) -> float:
        return self.parts(c)[2]


def _units_to_serve(inf: InferenceSpec, *, per_request: float) -> float:
    """What the whole workload serves: every request's units, or the target rate for its duration."""
    if inf.requests is not None:
        return inf.requests * per_request
    return (inf.target_output_tokens_per_s or 0) * (inf.duration_hours or 0) * 3600


def _inference_result(
    s: _Serving,
    *,
    thr_total: float,
    total_units: float,
    mfu: float,
    bottleneck: str,
    details: dict[str, float],
) -> Estimate:
    """Hours to serve the requests, or whether the deployment meets its target rate (stretched if not)."""
    inf, notes = s.inf, s.notes
    meets: bool | None = None
    if inf.requests is not None:
        hours = total_units / thr_total / 3600
    else:
        target = inf.target_output_tokens_per_s or 0
        duration = inf.duration_hours or 0
        meets = thr_total >= target
        hours = duration if meets else duration * target / thr_total
        if not meets:
            notes.add(
                _("serves {served} of the {target} {unit} target: hours stretched to the total").format(
                    served=f"{thr_total:,.0f}", target=f"{target:,.0f}", unit=s.unit
                )
            )
    fits = s.mem.total <= s.capacity
    if not fits:
        bottleneck = "memory_capacity"
    return Estimate(
        gpu=s.gpu.name,
        count=s.count,
        nodes=s.nodes,
        fits=fits,
        memory=s.mem,
        memory_capacity_bytes=s.capacity,
        throughput_per_gpu=thr_total / s.count,
        throughput_unit=s.unit,
        hours=hours,
        mfu=mfu,
        bottleneck=bottleneck,
        assumptions=tuple(notes.items),
        meets_target=meets,
        details=details,
    )
