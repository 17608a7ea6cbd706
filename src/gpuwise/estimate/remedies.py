"""What would fit, when a configuration does not: the search behind `estimate`'s `remedies`.

Each candidate is a change to the workload (a "section.key" update, validated by the section's own model)
or to the GPU count, re-estimated with `estimate` itself, so a remedy's memory and hours are the
estimator's, never a rule of thumb. First every change alone: the largest `micro_batch`, `seq_len` or
`concurrency` that fits at the current settings (bisection: memory grows with each), then each change of
method (activation checkpointing, fused kernels, 8-bit AdamW, a 4-bit base, CPU offload, lower-precision
weights or KV cache), then the fewest GPUs that fit (as set, with ZeRO-3/FSDP, or with more tensor
parallelism for inference). Only when no single change fits (a shorter training seq_len, which truncates
the samples, does not count) does it stack them, lightest first, until one does; and when only more GPUs
fit, the stack on the GPUs asked is searched too. A change the workload cannot take (a key its section
lacks, a combination its model rejects, LoRA on a CNN) is skipped, so new workload kinds get what applies
to them and "more GPUs" otherwise.

A fitting change spread over nodes whose pace the assumed (unknown) network sets says what a cluster
network would make of it. Fitting changes come first, cheapest in GPU-hours (what renting costs), then
wall-clock hours; an entry with `fits` false says what will not help ("more GPUs will not help: every GPU
holds the whole base").

Pure (estimates only); a few dozen estimates per configuration, so callers compute it where it is shown.
Must not import the CLI, the planner or the catalog loaders.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ValidationError

from gpuwise.catalog.models import GpuSpec
from gpuwise.errors import GpuwiseError
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.core import estimate
from gpuwise.estimate.interconnect_constants import GPUS_PER_NODE, INTERNODE_GBPS_PER_GPU
from gpuwise.estimate.models import Estimate, Remedy
from gpuwise.estimate.remedies_text import describe
from gpuwise.locale import _
from gpuwise.units import GIB, format_hours
from gpuwise.workload.spec import Workload

Updates = dict[str, str | int | bool]

# GPU counts tried for "more GPUs": whole nodes of 8 past one node, up to 128 nodes.
COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# Tensor-parallel degrees tried for inference (powers of two, as attention heads split).
TENSOR_PARALLEL = (2, 4, 8, 16, 32, 64)
# The network a remedy spread over nodes is re-estimated on when the estimate's own (unknown network) sets
# its pace: one 400 Gb/s InfiniBand/EFA link per GPU, 8 per node, as the estimator assumes for H100 clusters
# (estimate/interconnect_constants.py: AWS p5, Azure ND H100 v5, GCP A3 Mega).
CLUSTER_GBPS = INTERNODE_GBPS_PER_GPU["H100"] * GPUS_PER_NODE
# seq_len remedies are multiples of this (a round number users can type; the bisection runs on them).
SEQ_STEP = 128


@dataclass
class Search:
    """One configuration and the estimates tried for it."""

    w: Workload
    gpu: GpuSpec
    count: int
    nodes: int | None
    calibration: Calibration | None
    network_gbps: float | None
    base: Estimate
    found: list[Remedy] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    # The change with the least memory per GPU tried, for "nothing fits; the closest needs …".
    closest: tuple[Updates, Estimate] | None = None

    def run(self, updates: Updates) -> Estimate | None:
        """The estimate with `updates` applied; None when the workload cannot take them."""
        applied = apply_updates(self.w, self.count, updates)
        if applied is None:
            return None
        work, count = applied
        nodes = self.nodes if count == self.count else None
        try:
            est = estimate(work, self.gpu, count, nodes, self.calibration, network_gbps=self.network_gbps)
        except GpuwiseError:  # e.g. a layout the estimator rejects: not a remedy
            return None
        if est.memory.total > 0 and (self.closest is None or _closer(est, self.closest[1])):
            self.closest = (dict(updates), est)
        return est

    def ok(self, est: Estimate | None) -> bool:
        """Fits, and runs wherever the original ran (a remedy with no speed figure is no remedy)."""
        if est is None or not est.fits:
            return False
        return math.isfinite(est.hours) or not math.isfinite(self.base.hours)

    def keep(
        self, updates: Updates, est: Estimate, *, fits: bool = True, why: str = "", largest: str = ""
    ) -> None:
        key = repr(sorted(updates.items()))
        if key in self.seen:
            return
        self.seen.add(key)
        text = why or describe(updates, self.w, self.count, largest=largest)
        if fits:
            text += self.network_note(updates, est)
        ratio = est.hours / self.base.hours if 0 < self.base.hours < math.inf else math.nan
        self.found.append(
            Remedy(
                change=text,
                updates=dict(updates),
                memory_per_gpu_bytes=est.memory.total,
                hours=est.hours,
                count=est.count,
                fits=fits,
                time_ratio=ratio if math.isfinite(est.hours) else math.nan,
            )
        )

    def network_note(self, updates: Updates, est: Estimate) -> str:
        """When the network between nodes sets the pace of a multi-node remedy only because its speed is
        unknown (no --network-gbps): what a cluster's network would make of it. Without this, "FSDP on 32
        GPUs: 16 d" read as a slower job on four times the GPUs, with nothing to say why."""
        if self.network_gbps is not None or est.bottleneck != "communication" or est.nodes < 2:
            return ""
        applied = apply_updates(self.w, self.count, updates)
        if applied is None:
            return ""
        work, count = applied
        nodes = self.nodes if count == self.count else None
        try:
            fast = estimate(work, self.gpu, count, nodes, self.calibration, network_gbps=CLUSTER_GBPS)
        except GpuwiseError:
            return ""
        if not fast.hours < est.hours * 0.8:  # the network is not what holds it back
            return ""
        return _(
            "; the network between nodes sets its pace at the speed assumed: on a cluster network "
            "(--network-gbps {gbps}) it takes {hours}"
        ).format(gbps=f"{CLUSTER_GBPS:g}", hours=format_hours(fast.hours))

    def wont_help(self, updates: Updates, at_most: Estimate, why: str) -> None:
        """Say that more GPUs will not help, and why, with the memory at the most GPUs tried."""
        gib = at_most.memory.total / GIB
        self.keep(
            updates,
            at_most,
            fits=False,
            why=_("{why}: {gib} GiB per GPU even on {count} GPUs").format(
                why=why, gib=f"{gib:,.1f}", count=at_most.count
            ),
        )

    def try_one(self, updates: Updates) -> bool:
        est = self.run(updates)
        if self.ok(est):
            assert est is not None
            self.keep(updates, est)
            return True
        return False

    def largest(self, key: str, values: Sequence[int], extra: Updates | None = None) -> bool:
        """Keep the largest of `values` (ascending; memory grows with them) for `key` that fits."""
        found = bisect_values(values, lambda v: self.run({**(extra or {}), key: v}), self.ok, largest=True)
        if found is None:
            return False
        value, est = found
        self.keep({**(extra or {}), key: value}, est, largest=key)
        return True

    def fewest_gpus(self, updates: Updates, counts: Sequence[int] | None = None) -> bool | Estimate:
        """Keep the fewest GPUs (above the current count) that fit with `updates`; the estimate at the
        most GPUs tried when none does (for "will not help"), False when the change cannot apply."""
        ladder = [c for c in (counts or COUNTS) if c > self.count]
        if not ladder:
            return False
        at_most = self.run({**updates, "count": ladder[-1]})
        if at_most is None:
            return False
        if not self.ok(at_most):
            return at_most
        found = bisect_values(ladder, lambda c: self.run({**updates, "count": c}), self.ok, largest=False)
        assert found is not None  # the last rung fits, and memory per GPU falls with the count
        count, est = found
        self.keep({**updates, "count": count}, est)
        return True


def remedies(
    w: Workload,
    gpu: GpuSpec,
    base: Estimate,
    *,
    count: int = 1,
    nodes: int | None = None,
    calibration: Calibration | None = None,
    network_gbps: float | None = None,
) -> tuple[Remedy, ...]:
    """Changes that make `w` fit on `count` × `gpu` (`base` is its estimate there); () when it fits or
    nothing gpuwise can change applies (a measured task: its memory is the measurement)."""
    if base.fits or w.task == "measured" or w.model is None or gpu.memory_gib <= 0:
        return ()  # a measured peak is what it is; a GPU without a capacity figure has no verdict
    s = Search(w, gpu, count, nodes, calibration, network_gbps, base)
    if w.train is not None:
        from gpuwise.estimate.remedies_train import train_remedies

        train_remedies(s)
    elif w.inference is not None:
        from gpuwise.estimate.remedies_infer import inference_remedies

        inference_remedies(s)
    else:  # a kind this search does not know: only the count can change
        s.fewest_gpus({})
    fitting = sorted((r for r in s.found if r.fits), key=_cost)
    if not fitting and s.closest is not None:
        updates, est = _fewest_as_close(s, *s.closest)
        need, have = est.memory.total / GIB, gpu.memory_gib
        why = _(
            "nothing gpuwise can change fits on a {have} GiB {gpu}: the lightest it tried, "
            "{change}, needs {need} GiB per GPU (a GPU with more memory)"
        ).format(have=f"{have:g}", gpu=gpu.name, change=describe(updates, w, count), need=f"{need:,.1f}")
        s.keep(updates, est, fits=False, why=why)
    return (*fitting, *(r for r in s.found if not r.fits))


def first_remedy_text(w: Workload, gpu: GpuSpec, count: int) -> str | None:
    """One sentence for `plan`'s "nothing qualifies" answer: the first remedy on `count` × `gpu` (the count
    asked), saying plainly when it takes more GPUs than that; None when it fits already or nothing fits (no
    calibration: the sentence names memory, not time)."""
    base = estimate(w, gpu, count)
    found = [r for r in remedies(w, gpu, base, count=count) if r.fits]
    if not found:
        return None
    # the question asked first: a change on the GPUs asked for, then one that keeps the samples whole; min
    # keeps the cheapest (the remedies' own order) among equals
    first = min(found, key=lambda r: (r.count > count, "train.seq_len" in r.updates))
    fields = {
        "count": count,
        "gpu": gpu.name,
        "need": f"{base.memory.total / GIB:,.1f}",
        "have": f"{gpu.memory_gib:g}",
        "change": first.change,
        "gib": f"{first.memory_per_gpu_bytes / GIB:,.1f}",
    }
    if first.count > count:
        return _(
            "or, no change gpuwise tried fits on {count}× {gpu} (it needs {need} of {have} GiB per GPU; "
            "`gpuwise estimate WORKLOAD --gpu {gpu}:{count}` lists what it tried); it takes more GPUs than "
            "that, at {gib} GiB per GPU: {change}"
        ).format(**fields)
    return _(
        "or, on {count}× {gpu} (it needs {need} of {have} GiB per GPU), {change} would fit ({gib} GiB per "
        "GPU; `gpuwise estimate WORKLOAD --gpu {gpu}:{count}` lists every change that would)"
    ).format(**fields)


def _fewest_as_close(s: Search, updates: Updates, est: Estimate) -> tuple[Updates, Estimate]:
    """The closest change on the fewest GPUs of the ladder that need about as little (the search tries
    the most GPUs first, so the closest is often on far more GPUs than it takes)."""
    for n in COUNTS:
        if s.count < n < est.count and "count" in updates:
            fewer = s.run({**updates, "count": n})
            if fewer is not None and 0 < fewer.memory.total <= est.memory.total * 1.05:
                return {**updates, "count": n}, fewer
    return updates, est


def _closer(est: Estimate, than: Estimate) -> bool:
    """Clearly less memory per GPU (5 %), or about as little on fewer GPUs: a sliver less on 64× the GPUs
    is not closer."""
    mem, other = est.memory.total, than.memory.total
    return mem < other * 0.95 or (mem <= other * 1.05 and est.count < than.count)


def _cost(r: Remedy) -> tuple[float, float, float]:
    gpu_hours = r.hours * r.count if math.isfinite(r.hours) else math.inf
    return gpu_hours, r.hours, r.memory_per_gpu_bytes


def apply_updates(w: Workload, count: int, updates: Updates) -> tuple[Workload, int] | None:
    """`w` and `count` with `updates` applied ("section.key" or "count"); None when a key is not one of the
    section's or the section's model rejects the combination (each changed section is validated whole)."""
    by_section: dict[str, dict[str, object]] = {}
    new_count = count
    for key, value in updates.items():
        if key == "count":
            new_count = int(value)
            continue
        section, _, name = key.partition(".")
        by_section.setdefault(section, {})[name] = value
    changed: dict[str, BaseModel] = {}
    for section, fields in by_section.items():
        current = getattr(w, section, None)
        if not isinstance(current, BaseModel) or any(k not in type(current).model_fields for k in fields):
            return None
        try:
            changed[section] = type(current).model_validate({**current.model_dump(), **fields})
        except ValidationError:
            return None
    return w.model_copy(update=changed), new_count


def bisect_values(
    values: Sequence[int],
    run: Callable[[int], Estimate | None],
    ok: Callable[[Estimate | None], bool],
    *,
    largest: bool,
) -> tuple[int, Estimate] | None:
    """The largest (or smallest) of the ascending `values` whose estimate is ok, for a monotone ok: true
    below some point (largest) or above it (smallest). None when no value is ok."""
    if not values:
        return None
    first = 0 if largest else len(values) - 1
    est = run(values[first])
    if not ok(est):
        return None
    assert est is not None
    best = (values[first], est)
    lo, hi = (first, len(values) - 1) if largest else (0, first)
    while lo < hi:
        mid = (lo + hi + 1) // 2 if largest else (lo + hi) // 2
        e = run(values[mid])
        good = ok(e)
        if good:
            assert e is not None
            best = (values[mid], e)
        if largest:
            lo, hi = (mid, hi) if good else (lo, mid - 1)
        else:
            lo, hi = (lo, mid) if good else (mid + 1, hi)
    return best


__all__ = [
    "COUNTS",
    "SEQ_STEP",
    "TENSOR_PARALLEL",
    "Search",
    "Updates",
    "apply_updates",
    "bisect_values",
    "remedies",
]
