"""Bottleneck hints: pure functions over a window of snapshots (and host stats) -> `Hint`s.

No clock, files or printing here; the thresholds are in `HintThresholds` so callers and tests can
change them. A reading that is not supported or failed never counts as 0: the rule that needs it is
simply not evaluated for that GPU.

Hint ids (stable): `input_bound`, `throttled`, `memory_nearly_full`, `pcie_below_max`,
`gpu_idle_while_peers_busy`, `encoder_bound`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from gpuwise.gpu import throttle
from gpuwise.gpu.sample import Sample, Snapshot, value_or_none
from gpuwise.locale import _
from gpuwise.monitor.host import HostStats
from gpuwise.monitor.rollup import IDLE_UTIL_PCT

# Throttle reasons that mean "slower than it could be" (gpu_idle, app/display clock settings are
# not bottlenecks). Thermal and hardware slowdowns are worse than a power cap under full load.
_THROTTLE_SEVERITY = {r.id: r.severity for r in throttle.REASONS if r.severity != "none"}


@dataclass(frozen=True)
class Hint:
    id: str
    gpu: int | None
    severity: str  # "info" | "warn"
    message: str
    evidence: str


@dataclass(frozen=True)
class HintThresholds:
    low_util_pct: float = 40.0  # below this mean util a GPU with work on it is starving
    busy_util_pct: float = 50.0  # at or above this a GPU counts as "working"
    idle_util_pct: float = IDLE_UTIL_PCT  # at or below this a GPU counts as idle (the rollups use the same)
    high_cpu_pct: float = 85.0
    high_iowait_pct: float = 20.0
    memory_full_fraction: float = 0.95
    encoder_busy_pct: float = 50.0  # the L40S capture encodes at 59-67 % NVENC
    min_samples: int = 3  # fewer samples than this in the window: no rate-based hint yet
    throttle_fraction: float = 0.5  # a reason must be active in this share of the window


def _per_gpu(window: Sequence[Snapshot]) -> dict[int, list[Sample]]:
    by_gpu: dict[int, list[Sample]] = {}
    for snap in window:
        for s in snap.samples:
            if not s.lost:
                by_gpu.setdefault(s.index, []).append(s)
    return by_gpu


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return fmean(known) if known else None


def mean_util(samples: Sequence[Sample]) -> float | None:
    return _mean([value_or_none(s.util_gpu_pct) for s in samples])


def _holds_memory(sample: Sample) -> bool:
    procs = value_or_none(sample.processes)
    if procs:
        return True
    used = value_or_none(sample.memory_used_bytes)
    total = value_or_none(sample.memory_total_bytes)
    # Without a process list, a large share of memory in use still says "a job holds this GPU".
    return used is not None and total is not None and total > 0 and used / total >= 0.10


def compute_hints(
    window: Sequence[Snapshot],
    host: Sequence[HostStats] = (),
    thresholds: HintThresholds | None = None,
) -> list[Hint]:
    """Every hint the window supports, sorted by GPU then id."""
    th = thresholds or HintThresholds()
    hints: list[Hint] = []
    by_gpu = _per_gpu(window)
    cpu = _mean([h.cpu_pct for h in host])
    iowait = _mean([h.iowait_pct for h in host])
    utils = {i: mean_util(samples) for i, samples in by_gpu.items()}
    for index, samples in sorted(by_gpu.items()):
        util = utils[index]
        hints += _input_bound(index, samples, util, cpu=cpu, iowait=iowait, th=th)
        hints += _throttled(index, samples, th)
        hints += _memory_nearly_full(index, samples[-1], th)
        hints += _pcie_below_max(index, samples[-1], th)
        hints += _encoder_bound(index, samples, util, th)
    hints += _idle_while_peers_busy(by_gpu, utils, th)
    hints.sort(key=lambda h: (-1 if h.gpu is None else h.gpu, h.id))
    return hints


def _input_bound(
    index: int,
    samples: Sequence[Sample],
    util: float | None,
    *,
    cpu: float | None,
    iowait: float | None,
    th: HintThresholds,
) -> list[Hint]:
    """The job holds the GPU but the GPU waits, while the host is saturated."""
    # `not (x < y)` rather than `x >= y`: a NaN reading must not fire a rule, as before the split
    if len(samples) < th.min_samples or util is None or not util < th.low_util_pct:
        return []
    if not _holds_memory(samples[-1]):
        return []
    host_busy = cpu is not None and cpu >= th.high_cpu_pct
    io_busy = iowait is not None and iowait >= th.high_iowait_pct
    if not (host_busy or io_busy):
        return []
    why = []
    if host_busy:
        why.append(_("host CPU {pct:.0f}%").format(pct=cpu))
    if io_busy:
        why.append(_("I/O wait {pct:.0f}%").format(pct=iowait))
    return [
        Hint(
            "input_bound",
            index,
            "warn",
            _(
                "GPU {gpu} looks input-bound: it holds a job but is busy only {util:.0f}% "
                "of the time while the host is saturated (data loading, decoding or I/O). "
                "Try more data-loader workers, pinned memory, or faster storage."
            ).format(gpu=index, util=util),
            _("mean GPU util {util:.0f}% over {n} samples; {why}").format(
                util=util, n=len(samples), why=", ".join(why)
            ),
        )
    ]


def _throttled(index: int, samples: Sequence[Sample], th: HintThresholds) -> list[Hint]:
    """One hint per slowing throttle reason active in most of the window."""
    counts: dict[str, int] = {}
    seen = 0
    for s in samples:
        reasons = value_or_none(s.throttle_reasons)
        if reasons is None:
            continue
        seen += 1
        for r in reasons:
            if r in _THROTTLE_SEVERITY:
                counts[r] = counts.get(r, 0) + 1
    enough = len(samples) >= th.min_samples
    last = samples[-1]
    return [
        Hint(
            "throttled",
            index,
            _THROTTLE_SEVERITY[reason],
            _("GPU {gpu} is throttled ({reason}): its clocks are held below their maximum.").format(
                gpu=index, reason=reason.replace("_", " ")
            ),
            _("{reason} active in {n} of {seen} samples").format(reason=reason, n=n, seen=seen)
            + _fmt(_(" ; temperature "), value_or_none(last.temperature_c), " C")
            + _fmt(_(" ; power "), value_or_none(last.power_draw_watts), " W"),
        )
        for reason, n in sorted(counts.items())
        if seen and n / seen >= th.throttle_fraction and (reason != "sw_power_cap" or enough)
    ]


def _memory_nearly_full(index: int, last: Sample, th: HintThresholds) -> list[Hint]:
    used = value_or_none(last.memory_used_bytes)
    total = value_or_none(last.memory_total_bytes)
    if used is None or not total or not used / total >= th.memory_full_fraction:
        return []
    return [
        Hint(
            "memory_nearly_full",
            index,
            "warn",
            _(
                "GPU {gpu} memory is {pct:.0f}% full: the next allocation may fail "
                "(out of memory). Lower the batch size or enable activation checkpointing."
            ).format(gpu=index, pct=100 * used / total),
            _("{used:.1f} of {total:.1f} GiB used").format(used=used / 2**30, total=total / 2**30),
        )
    ]


def _pcie_below_max(index: int, last: Sample, th: HintThresholds) -> list[Hint]:
    gen, gen_max = value_or_none(last.pcie_gen_current), value_or_none(last.pcie_gen_max)
    width, width_max = value_or_none(last.pcie_width_current), value_or_none(last.pcie_width_max)
    last_util = value_or_none(last.util_gpu_pct)
    # Generation drops at idle are power saving; only a loaded GPU's link counts.
    if last_util is None or not last_util >= th.busy_util_pct:
        return []
    slow = (gen is not None and gen_max is not None and gen < gen_max) or (
        width is not None and width_max is not None and width < width_max
    )
    if not slow:
        return []
    return [
        Hint(
            "pcie_below_max",
            index,
            "warn",
            _(
                "GPU {gpu}'s PCIe link runs below its maximum under load; host-device copies "
                "will be slower. Reseat the card or check the slot and BIOS settings."
            ).format(gpu=index),
            _("gen {gen} of {gen_max}, x{width} of x{width_max} at {util:.0f}% util").format(
                gen=gen, gen_max=gen_max, width=width, width_max=width_max, util=last_util
            ),
        )
    ]


def _encoder_bound(
    index: int, samples: Sequence[Sample], util: float | None, th: HintThresholds
) -> list[Hint]:
    enc = _mean([value_or_none(s.util_encoder_pct) for s in samples])
    dec = _mean([value_or_none(s.util_decoder_pct) for s in samples])
    video = max((v for v in (enc, dec) if v is not None), default=None)
    if video is None or not video >= th.encoder_busy_pct:
        return []
    which = _("encoder") if enc is not None and enc == video else _("decoder")
    return [
        Hint(
            "encoder_bound",
            index,
            "info",
            _(
                "GPU {gpu} is busy with video work: its {which} (NVENC/NVDEC) is {video:.0f}% busy "
                "while the GPU utilization reads {util}. GPU utilization understates this load; "
                "the video engine is the bottleneck."
            ).format(
                gpu=index, which=which, video=video, util=_("nothing") if util is None else f"{util:.0f}%"
            ),
            _("mean {which} util {video:.0f}%, mean GPU util {util}").format(
                which=which, video=video, util=_("unknown") if util is None else f"{util:.0f}%"
            ),
        )
    ]


def _idle_while_peers_busy(
    by_gpu: dict[int, list[Sample]], utils: dict[int, float | None], th: HintThresholds
) -> list[Hint]:
    """One GPU idle while its peers work (a stuck rank, a wrong CUDA_VISIBLE_DEVICES)."""
    known = {i: u for i, u in utils.items() if u is not None and len(by_gpu[i]) >= th.min_samples}
    if len(known) < 2:
        return []
    busy = [i for i, u in known.items() if u >= th.busy_util_pct]
    if not busy:
        return []
    return [
        Hint(
            "gpu_idle_while_peers_busy",
            index,
            "warn",
            _(
                "GPU {gpu} is idle while GPU(s) {busy} work: a rank may "
                "be stuck, or the job was started on fewer GPUs than the machine has "
                "(check CUDA_VISIBLE_DEVICES and the launcher's --nproc_per_node)."
            ).format(gpu=index, busy=", ".join(map(str, busy))),
            _("mean util GPU {gpu} {util:.0f}%; peers {peers}").format(
                gpu=index, util=u, peers=", ".join(f"GPU {i} {known[i]:.0f}%" for i in busy)
            ),
        )
        for index, u in sorted(known.items())
        if u <= th.idle_util_pct
    ]


def _fmt(prefix: str, value: float | None, unit: str) -> str:
    return "" if value is None else f"{prefix}{value:.0f}{unit}"
