"""Projecting a measurement (`task = "measured"`) from the GPU it was taken on to another GPU.

The rule, stated in every estimate's assumptions:
- compute-bound: time scales with the ratio of datasheet dense TFLOPS in the task's precision family
  (`[measured] precision`; when not given, the more conservative of the fp32 and bf16 ratios);
- memory-bound: with the ratio of datasheet memory bandwidth;
- unknown: the more conservative (smaller) of the two ratios.
A task is never purely one kind, so the range runs from the rule's ratio (for unknown: the larger ratio) to
the smaller of the two, and is never narrower than ±RANGE_MIN_HALF_WIDTH (run-to-run spread, clocks).
More GPUs than were measured scale linearly from the measured machine's GPU count (said: optimistic for a
task that does not split its work). A GPU whose memory is below the measured peak does not fit.

Pure apart from the GPU spec table (`catalog.specs`, package data): Workload + GpuSpec in, Estimate out.
Must not import the CLI or the planner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuwise.catalog.models import GpuSpec
from gpuwise.errors import ConfigError, GpuwiseError
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.estimate.notes import Notes
from gpuwise.estimate.stacks import RANGE_MIN_HALF_WIDTH
from gpuwise.locale import _
from gpuwise.units import GIB
from gpuwise.workload.measured import Measurement
from gpuwise.workload.spec import Workload

# Families compared when the workload does not say its precision: CUDA-core fp32 (rendering, simulation)
# and tensor-core bf16 (most deep learning); the smaller ratio is used.
_UNSAID_FAMILIES = ("fp32", "bf16")


@dataclass(frozen=True)
class _Ratios:
    compute: float | None  # target / reference dense TFLOPS of the family
    bandwidth: float | None  # target / reference memory bandwidth
    family: str  # the precision family the compute ratio is of, as said in the assumptions


def reference_gpu(m: Measurement) -> GpuSpec:
    """The spec of the GPU the measurement ran on; ConfigError (exit 2) naming the file when unknown."""
    from gpuwise.catalog.specs import canonical_gpu_name_from_driver, resolve_gpu

    try:  # a result file may name the GPU as its driver does: "NVIDIA A100-SXM4-80GB", "Tesla T4"
        return resolve_gpu(canonical_gpu_name_from_driver(m.gpu) or m.gpu)
    except GpuwiseError as exc:
        raise ConfigError(
            f"Measurement file {m.source}: GPU {m.gpu!r} is not in gpuwise's GPU spec table, so there is "
            "no datasheet figure to scale from",
            fix="measure on a GPU that `gpuwise catalog gpus` lists, or correct 'machine.gpu' to its name",
        ) from exc


def _ratio(target: float | None, reference: float | None) -> float | None:
    if not target or not reference or target <= 0 or reference <= 0:
        return None
    return target / reference


def _ratios(ref: GpuSpec, gpu: GpuSpec, precision: str | None) -> _Ratios:
    bandwidth = _ratio(gpu.memory_bandwidth_gbs.value, ref.memory_bandwidth_gbs.value)
    if precision is not None:
        return _Ratios(_ratio(gpu.peak_tflops(precision), ref.peak_tflops(precision)), bandwidth, precision)
    found = {f: r for f in _UNSAID_FAMILIES if (r := _ratio(gpu.peak_tflops(f), ref.peak_tflops(f)))}
    if not found:
        return _Ratios(None, bandwidth, _("fp32 or bf16"))
    family = min(found, key=lambda f: found[f])
    said = ", ".join(f"{f} {r:.2f}×" for f, r in found.items())
    return _Ratios(
        found[family],
        bandwidth,
        _("{family} (precision not given: the smaller of {said})").format(family=family, said=said),
    )


def _rule(bound: str, r: _Ratios) -> tuple[float | None, float | None, str]:
    """(ratio for the point estimate, ratio for the fast end of the range, the rule in words)."""
    known = [x for x in (r.compute, r.bandwidth) if x is not None]
    if bound == "compute":
        return r.compute, r.compute, _("compute-bound: dense {family} TFLOPS ratio").format(family=r.family)
    if bound == "memory_bandwidth":
        return r.bandwidth, r.bandwidth, _("memory-bound: memory bandwidth ratio")
    if not known:
        return None, None, _("bound unknown and no datasheet ratio")
    return (
        min(known),
        max(known),
        _(
            "bound unknown: the more conservative of the dense {family} TFLOPS and memory bandwidth ratios"
        ).format(family=r.family),
    )


def _projection_note(ref: GpuSpec, gpu: GpuSpec, rule: str, point: float) -> str:
    return _("projected from {ref} to {gpu} by the rule for {rule}: {ratio}× the measured speed").format(
        ref=ref.name, gpu=gpu.name, rule=rule, ratio=f"{point:.2f}"
    ) + (
        ""
        if ref.vendor == gpu.vendor
        else _(" (a {ref} → {gpu} ratio ignores the software)").format(ref=ref.vendor, gpu=gpu.vendor)
    )


def _scaling_note(count: int, measured_gpus: int, nodes: int) -> str:
    return (
        _(
            "{count} GPUs vs the {measured} measured: speed scaled linearly (optimistic for a task "
            "that does not split its work across GPUs or over {nodes} nodes)"
        )
        if nodes > 1
        else _(
            "{count} GPUs vs the {measured} measured: speed scaled linearly (optimistic for a task "
            "that does not split its work across GPUs)"
        )
    ).format(count=count, measured=measured_gpus, nodes=nodes)


def measured_estimate(w: Workload, gpu: GpuSpec, *, count: int, nodes: int, notes: Notes) -> Estimate:
    """The measured task's time and fit on `count` × `gpu`, projected from the measurement by the rule."""
    spec = w.measured
    if spec is None or spec.measurement is None:
        raise ConfigError(
            f'workload {w.name!r}: task = "measured" without a loaded measurement',
            fix="load the workload with gpuwise.workload.load_workload (it reads [measured] result)",
        )
    m = spec.measurement
    ref = reference_gpu(m)
    ratios = _ratios(ref, gpu, spec.precision)
    point, fast, rule = _rule(m.bound, ratios)
    notes.add(m.describe() + (_("; command: {command}").format(command=m.command) if m.command else ""))
    if spec.gpus is None and m.gpus > 1:
        notes.add(
            _(
                "the measured machine had {count} GPUs: the time per unit is taken as all {count} working "
                "together (write [measured] gpus = 1 if the task used one)"
            ).format(count=m.gpus)
        )
    unit = spec.unit or m.unit or "unit"
    measured_gpus = spec.gpus or m.gpus
    scale = count / measured_gpus
    verdict = _fit(m, gpu, notes)
    base = Estimate(
        gpu=gpu.name,
        count=count,
        nodes=nodes,
        fits=verdict == "fits",
        fit_verdict=verdict,
        memory=MemoryBreakdown(0.0, 0.0, 0.0, 0.0, 0.0, (m.peak_memory_gib or 0.0) * GIB),
        memory_capacity_bytes=gpu.memory_gib * GIB,
        throughput_per_gpu=0.0,
        throughput_unit=f"{unit}/s",
        hours=math.inf,
        mfu=math.nan,  # not measured: the task's FLOPs are unknown
        bottleneck=m.bound if verdict != "does_not_fit" else "memory_capacity",
        stack="measured",
        range_source="datasheet ratios",
    )
    if point is None or fast is None:
        reason = _("{gpu} vs {ref}: no published figure for the rule ({rule})").format(
            gpu=gpu.name, ref=ref.name, rule=rule
        )
        notes.add(reason)
        return replace(base, infeasible_reason=reason, assumptions=tuple(notes.items))
    notes.add(_projection_note(ref, gpu, rule, point))
    if scale != 1:
        notes.add(_scaling_note(count, measured_gpus, nodes))
    seconds_per_unit = m.seconds_per_unit / (point * scale)
    hours = spec.units * seconds_per_unit / 3600.0
    slow = min(point, fast, *(x for x in (ratios.compute, ratios.bandwidth) if x is not None))
    hours_low = min(hours * (1 - RANGE_MIN_HALF_WIDTH), hours * point / fast)
    hours_high = max(hours * (1 + RANGE_MIN_HALF_WIDTH), hours * point / slow)
    notes.add(
        _(
            "range: from the {start} to the smaller of the compute and bandwidth ratios (a task is never "
            "purely one), at least ±{share}"
        ).format(
            start=_("larger ratio") if m.bound == "unknown" else _("rule"),
            share=f"{RANGE_MIN_HALF_WIDTH:.0%}",
        )
    )
    details = {
        "measured_seconds_per_unit": m.seconds_per_unit,
        "ratio_used": point,
        **({"compute_ratio": ratios.compute} if ratios.compute is not None else {}),
        **({"bandwidth_ratio": ratios.bandwidth} if ratios.bandwidth is not None else {}),
        **({"measured_peak_gib": m.peak_memory_gib} if m.peak_memory_gib is not None else {}),
    }
    return replace(
        base,
        throughput_per_gpu=1.0 / seconds_per_unit / count,
        hours=hours,
        hours_low=hours_low,
        hours_high=hours_high,
        details=details,
        assumptions=tuple(notes.items),
    )


def _fit(m: Measurement, gpu: GpuSpec, notes: Notes) -> str:
    """fits / tight / does_not_fit against the measured peak; unknown when the peak was not measured."""
    peak, capacity = m.peak_memory_gib, gpu.memory_gib
    if peak is None:
        notes.add(_("peak GPU memory was not measured: whether the task fits is unknown"))
        return "unknown"
    notes.add(
        _(
            "memory: the measured peak {peak} GiB per GPU (a caching allocator may hold more than the task "
            "needs where memory is free, so this errs high)"
        ).format(peak=f"{peak:.1f}")
    )
    if peak > capacity:
        notes.add(
            _("{gpu} has {capacity} GiB, below the measured peak {peak} GiB: does not fit").format(
                gpu=gpu.name, capacity=f"{capacity:.1f}", peak=f"{peak:.1f}"
            )
        )
        return "does_not_fit"
    margin = notes.const(MEM.TIGHT_MARGIN)
    if peak > capacity * (1 - margin):
        return "tight"
    return "fits"
