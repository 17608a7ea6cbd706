"""The idle policy: a pure state machine that decides, observation by observation, when a GPU machine
may be stopped — and says why.

Input is a stream of `Observation`s (every GPU's `Sample` at one instant, plus the other signals the daemon
gathered: SSH sessions, Jupyter kernels, `gpuwise run` jobs, a keep-alive file, CPU/I/O of the GPU
processes). Output is one `Decision` per observation: `busy` → `idle_candidate` → `warning` → `stopping`.

The rules (each one errs towards *not* stopping):

* **Activity.** A GPU is active when its utilization is above `threshold_pct`, or its memory used moved by
  `mem_change_mib` or more since its previous sample (a job allocating, freeing, starting or exiting). A
  signal is active when it says so; a signal's `last_active_s` (a keep-alive file's mtime, a kernel's
  last_activity, a terminal's last input) counts as activity at that moment.
* **Missing data is activity.** A utilization or memory reading that failed or is not reported, a lost GPU,
  a GPU that vanished from the list, a probe error, a signal that could not be read, or a gap of more than
  `max_gap_s` between observations: all count as activity at that instant. So missing data can only delay a
  stop, never bring it forward.
* **Busy wins.** Several readings of one GPU at one instant (two `nvidia-smi -l` loggers writing one file)
  are each judged; if any of them is activity, the instant is busy.
* **Held memory → longer window.** A GPU holds memory when a compute process is listed on it, when its
  memory used is above `baseline_mem_mib` (what a driver or a desktop uses with no job), when it is
  more than `mem_change_mib` above the lowest reading this GPU has given so far (its own floor: 1–5 MiB on a
  headless data-centre card, ~300 MiB with a desktop), or when memory is not reported at all (GB10, `[N/A]`).
  Real evaluation phases sit at 0 % for 50–70 min with memory held, and a hung job or an idle notebook would
  otherwise keep a machine forever, so held memory does not block a stop, it asks for `held_window_min`
  (default 120) instead of `window_min` (default 60). The floor catches what the fixed baseline misses: a
  job that frees everything but its CUDA context (~300–500 MiB) for a CPU phase, or a small job (a 420-MiB
  job at 30 % on an 80 GB card). A missing memory reading drops the floor to 0, so missing data can only
  make memory count as held.
* **Any kernel time on a GPU that holds memory is work.** There, utilization above `held_threshold_pct`
  (default 0) is activity, not only above `threshold_pct` (5): a loader-starved job whose rare bursts read
  1–4 % is alive. An idle process holding memory (a hung job, a notebook with a model loaded) reads 0 %.
* **Display noise.** A desktop's compositor makes bursts of up to 31 % util at 300–330 MiB (the landct
  trace in tests/fixtures/recordings/traces). On a GPU that holds nothing (no compute process, memory at or
  below `baseline_mem_mib` (512) and within `mem_change_mib` of its own floor), utilization up to
  `noise_floor_pct` (default 35) is not activity. Without this a desktop machine never stops. The price,
  decided and tested: a job under 512 MiB in all, at most 35 % util, that was already running when the
  recording began (so its memory is the GPU's floor) and that the process list does not show (a CSV
  replay) looks idle. A CUDA context alone takes 300–500 MiB and PyTorch, JAX and TensorFlow jobs pass
  512 MiB within seconds, so such a job is rare; the daemon sees it through the process list. Set
  `noise_floor_pct` to 0 to turn the rule off.

Stop rule (monotone by construction, so adding activity or losing data never stops earlier):
stop at t when the last `warn_min` before t were all in the warning state, and either
(a) there was no activity in (t − window, t] and no held memory in (t − window, t], or
(b) there was no activity in (t − held_window, t].

Pure: no files, clock, environment or printing. Imports only the standard library and gpuwise's
sample model and errors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal

from gpuwise.errors import ConfigError
from gpuwise.gpu.sample import Failed, NotSupported, Sample, Snapshot
from gpuwise.idle.message import Msg, join
from gpuwise.idle.state import finite_or_none, whole
from gpuwise.locale import N_, _

MIB = 1024**2
MIN_GAP_S = 120.0
GAP_INTERVALS = 4.0

SignalStateName = Literal["active", "quiet", "unknown"]


class IdleState(StrEnum):
    BUSY = "busy"
    IDLE_CANDIDATE = "idle_candidate"
    WARNING = "warning"
    STOPPING = "stopping"


@dataclass(frozen=True)
class PolicyConfig:
    """Thresholds and windows. Defaults are the safe ones; `validate()` rejects impossible values."""

    threshold_pct: float = 5.0
    window_min: float = 60.0
    held_window_min: float = 120.0
    warn_min: float = 10.0
    mem_change_mib: float = 64.0
    baseline_mem_mib: float = 512.0  # a desktop uses ~300 MiB (landct trace); a CUDA process adds 300+
    noise_floor_pct: float = 35.0
    held_threshold_pct: float = 0.0  # on a GPU holding memory any kernel time is a job's work
    max_gap_s: float | None = None  # None: 4 sampling intervals, at least 2 min (see `resolve_gap`)

    @property
    def window_s(self) -> float:
        return self.window_min * 60.0

    @property
    def held_window_s(self) -> float:
        return max(self.held_window_min, self.window_min) * 60.0

    @property
    def gap_limit_s(self) -> float:
        return MIN_GAP_S if self.max_gap_s is None else self.max_gap_s

    def resolve_gap(self, interval_s: float) -> PolicyConfig:
        """Fix an automatic `max_gap_s` for a known sampling interval: a gap is more than
        `GAP_INTERVALS` missed samples, and never less than `MIN_GAP_S`."""
        if self.max_gap_s is not None:
            return self
        return replace(self, max_gap_s=max(MIN_GAP_S, GAP_INTERVALS * interval_s))

    @property
    def warn_s(self) -> float:
        return self.warn_min * 60.0

    def validate(self) -> PolicyConfig:
        def bad(name: str, value: float, want: str) -> ConfigError:
            return ConfigError(
                _("idle option {name} = {value} is not valid").format(name=name, value=value),
                why=_("it must be {want}").format(want=want),
                fix=_(
                    "set {name} in the idle section of config.toml or on the command line to {want}"
                ).format(name=name, want=want),
            )

        for name in ("threshold_pct", "noise_floor_pct", "held_threshold_pct"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and 0 <= value <= 100):
                raise bad(name, value, _("a percentage from 0 to 100"))
        for name in ("window_min", "held_window_min", "max_gap_s"):
            if getattr(self, name) is None:
                continue
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value > 0):
                raise bad(name, value, _("a positive number"))
        for name in ("warn_min", "mem_change_mib", "baseline_mem_mib"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value >= 0):
                raise bad(name, value, _("zero or a positive number"))
        if self.warn_min >= self.window_min:
            raise bad(
                "warn_min",
                self.warn_min,
                _("shorter than window_min ({window:g})").format(window=self.window_min),
            )
        return self

    def describe(self) -> Msg:
        """The options in one sentence (English as a str, for the log; `text()` for people)."""
        return Msg(
            N_(
                "util ≤ {util:g}% (≤ {held_util:g}% on GPUs holding memory, ≤ {noise:g}% display noise on "
                "GPUs without a job), memory steady within {mem:g} MiB; window {window:g} min, "
                "{held_window:g} min while GPU memory is held or unknown"
            ),
            util=self.threshold_pct,
            held_util=min(self.threshold_pct, self.held_threshold_pct),
            noise=self.noise_floor_pct,
            mem=self.mem_change_mib,
            window=self.window_min,
            held_window=self.held_window_min,
        )


@dataclass(frozen=True)
class Signal:
    """One non-GPU signal at one instant. `last_active_s`, when known, is the latest moment of activity
    (keep-alive mtime, Jupyter last_activity, a terminal's last input): activity at that moment."""

    name: str
    state: SignalStateName
    detail: str = ""
    last_active_s: float | None = None
    # the network moved data since the last reading (the host signal): a hung job moves none (idle/hang.py)
    moves_data: bool = False


@dataclass(frozen=True)
class Observation:
    timestamp_s: float
    samples: tuple[Sample, ...]
    signals: tuple[Signal, ...] = ()
    errors: tuple[str, ...] = ()  # probe errors (NVML failed, "No devices were found")

    @classmethod
    def from_snapshot(
        cls, timestamp_s: float, snapshot: Snapshot, signals: Sequence[Signal] = ()
    ) -> Observation:
        return cls(timestamp_s, tuple(snapshot.samples), tuple(signals), tuple(snapshot.errors))


@dataclass(frozen=True)
class Decision:
    timestamp_s: float
    state: IdleState
    reason: str
    idle_s: float  # since the last activity
    window_s: float  # the window that applies now (longer while memory is held)
    stop_due_s: float  # when the stop would happen if nothing changes
    activity: tuple[str, ...] = ()  # what was active in this observation


@dataclass
class PolicyState:
    """Everything the policy remembers between observations; JSON-friendly so the daemon can persist it."""

    last_activity_s: float | None = None
    last_activity_cause: str = Msg(N_("start of observation"))
    last_held_s: float | None = None
    last_held_cause: str = ""
    warn_since_s: float | None = None
    last_ts: float | None = None
    prev_mem_bytes: dict[int, int] = field(default_factory=dict)
    prev_mem_unknown: list[int] = field(default_factory=list)  # GPUs read last time without a memory value
    mem_floor_bytes: dict[int, int] = field(
        default_factory=dict
    )  # lowest memory seen per GPU (0 after a gap)
    known_gpus: list[int] = field(default_factory=list)
    observations: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "last_activity_s": self.last_activity_s,
            "last_activity_cause": self.last_activity_cause,
            "last_held_s": self.last_held_s,
            "last_held_cause": self.last_held_cause,
            "last_ts": self.last_ts,
            "prev_mem_bytes": {str(k): v for k, v in self.prev_mem_bytes.items()},
            "prev_mem_unknown": list(self.prev_mem_unknown),
            "mem_floor_bytes": {str(k): v for k, v in self.mem_floor_bytes.items()},
            "known_gpus": list(self.known_gpus),
            "observations": self.observations,
            # the causes as msgid and fields too, so `idle status` can show them in the reader's language
            **{
                f"{key}_msg": cause.to_json()
                for key, cause in (
                    ("last_activity_cause", self.last_activity_cause),
                    ("last_held_cause", self.last_held_cause),
                )
                if isinstance(cause, Msg)
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PolicyState:
        """Restore persisted evidence. The warning is not restored: after a restart users are warned anew.

        Raises ValueError for evidence of the wrong type or that contradicts itself; the caller then starts
        the idle clock over, which only delays a stop. Consistent evidence can only be as old as its last
        observation (`last_ts`): activity or held memory after it, or activity without it, would let a
        damaged file claim idle time nobody observed."""

        def int_map(key: str) -> dict[int, int]:
            value = data.get(key, {})
            if not isinstance(value, dict):
                raise ValueError(f"{key} is not an object")
            return {whole(k): whole(v) for k, v in value.items()}

        def int_list(key: str) -> list[int]:
            value = data.get(key, [])
            if not isinstance(value, list):
                raise ValueError(f"{key} is not a list")
            return [whole(i) for i in value]

        def cause(key: str, default: str) -> str:  # a damaged `_msg` only loses the translation
            return Msg.from_json(data.get(f"{key}_msg")) or str(data.get(key, default))[:500]

        state = cls(
            last_activity_s=finite_or_none(data.get("last_activity_s"), "last_activity_s"),
            last_activity_cause=cause("last_activity_cause", "restored state"),
            last_held_s=finite_or_none(data.get("last_held_s"), "last_held_s"),
            last_held_cause=cause("last_held_cause", ""),
            last_ts=finite_or_none(data.get("last_ts"), "last_ts"),
            prev_mem_bytes=int_map("prev_mem_bytes"),
            prev_mem_unknown=int_list("prev_mem_unknown"),
            mem_floor_bytes=int_map("mem_floor_bytes"),
            known_gpus=int_list("known_gpus"),
            observations=whole(data.get("observations", 0)),
        )
        last = state.last_ts
        for key, when in (("last_activity_s", state.last_activity_s), ("last_held_s", state.last_held_s)):
            if when is not None and (last is None or when > last):
                raise ValueError(f"{key} is not before the last observation")
        return state


def _reading(value: object) -> float | None:
    if isinstance(value, NotSupported | Failed) or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(float(value)) else None


def _compute_processes(sample: Sample) -> int | None:
    """Compute processes on the GPU; None when the process list is not known."""
    procs = sample.processes
    if isinstance(procs, NotSupported | Failed):
        return None
    return sum(1 for p in procs if p.kind != "graphics")


@dataclass(frozen=True)
class _GpuView:
    active: list[str]
    held: str | None  # why memory counts as held, or None


def _view_gpu(sample: Sample, prev: int | str, cfg: PolicyConfig, floor: int | None = None) -> _GpuView:
    """`prev` is the GPU's memory at the previous observation in bytes, or "unknown" (read without a memory
    value), "absent" (not in the previous read but seen before) or "new" (never seen). `floor` is the
    lowest memory this GPU has shown so far, this sample included (0 once a reading was missing)."""
    gpu = f"GPU {sample.index}"
    active: list[str] = []
    if sample.lost:
        return _GpuView(
            [Msg(N_("{gpu} lost (missing data counts as busy)"), gpu=gpu)], Msg(N_("{gpu} lost"), gpu=gpu)
        )
    util = _reading(sample.util_gpu_pct)
    mem = _reading(sample.memory_used_bytes)
    n_compute = _compute_processes(sample)
    if isinstance(sample.processes, Failed):
        active.append(
            Msg(
                N_("{gpu} process list failed: {why} (missing data counts as busy)"),
                gpu=gpu,
                why=sample.processes.why,
            )
        )
    held: str | None = None
    if n_compute:
        held = Msg(
            N_("{gpu}: {n} compute process holding memory")
            if n_compute == 1
            else N_("{gpu}: {n} compute processes holding memory"),
            gpu=gpu,
            n=n_compute,
        )
    elif mem is None:
        held = Msg(N_("{gpu}: memory used not reported"), gpu=gpu)
    elif mem > cfg.baseline_mem_mib * MIB:
        held = Msg(
            N_("{gpu}: {mem:.0f} MiB used (above the {baseline:g} MiB baseline)"),
            gpu=gpu,
            mem=mem / MIB,
            baseline=cfg.baseline_mem_mib,
        )
    elif floor is not None and mem > floor + cfg.mem_change_mib * MIB:
        held = Msg(
            N_("{gpu}: {mem:.0f} MiB used, {above:.0f} MiB above its lowest reading"),
            gpu=gpu,
            mem=mem / MIB,
            above=(mem - floor) / MIB,
        )
    threshold = min(cfg.threshold_pct, cfg.held_threshold_pct) if held else cfg.threshold_pct
    if util is None:
        why = sample.util_gpu_pct if isinstance(sample.util_gpu_pct, Failed | NotSupported) else "?"
        active.append(Msg(N_("{gpu} utilization {why} (missing data counts as busy)"), gpu=gpu, why=str(why)))
    # display noise: only on a GPU that holds nothing beyond its own lowest reading (and the baseline)
    elif util > threshold and (held or util > cfg.noise_floor_pct):
        active.append(
            join(
                "",
                [
                    Msg(N_("{gpu} at {util:.0f}% util"), gpu=gpu, util=util),
                    Msg(N_(" with memory held")) if held and util <= cfg.threshold_pct else "",
                ],
            )
        )
    if isinstance(sample.memory_used_bytes, Failed):
        active.append(
            Msg(
                N_("{gpu} memory reading {reading} (missing data counts as busy)"),
                gpu=gpu,
                reading=str(sample.memory_used_bytes),
            )
        )
    if prev == "absent":
        active.append(Msg(N_("{gpu} is back after missing a read"), gpu=gpu))
    elif prev == "new":
        active.append(Msg(N_("{gpu} appeared"), gpu=gpu))
    elif prev == "unknown" and mem is not None:
        active.append(Msg(N_("{gpu} memory reported again ({mem:.0f} MiB)"), gpu=gpu, mem=mem / MIB))
    elif isinstance(prev, int) and mem is None:
        active.append(Msg(N_("{gpu} memory no longer reported (missing data counts as busy)"), gpu=gpu))
    elif isinstance(prev, int) and mem is not None and abs(mem - prev) >= cfg.mem_change_mib * MIB:
        active.append(
            Msg(
                N_("{gpu} memory {before:.0f} → {after:.0f} MiB"), gpu=gpu, before=prev / MIB, after=mem / MIB
            )
        )
    return _GpuView(active, held)


def fmt_min(seconds: float) -> str:
    """A measured duration, in whole minutes (whole seconds under one)."""
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def fmt_window(seconds: float) -> str:
    """A window the user set, as set: `window_min = 1.5` is "1.5 min" and 0.02 is "1.2 s", where fmt_min's
    rounding said "2 min" and "1 s" (and a stop "window 2 min reached" after 1.5 min looked early)."""
    value, unit = (seconds / 60, "min") if seconds >= 60 else (seconds, "s")
    return f"{value:.2f}".rstrip("0").rstrip(".") + f" {unit}"


def _missing_text(missing: list[int]) -> str:
    gpus = ", ".join(str(i) for i in missing)
    return Msg(N_("GPU {gpus} missing from this read (counts as busy)"), gpus=gpus)


def _signal_unknown_text(name: str, detail: str | None) -> str:
    return Msg(
        N_("{name} unknown: {detail} (counts as busy)"),
        name=name,
        detail=detail or Msg(N_("could not be read")),
    )


class IdlePolicy:
    """Feed observations in time order with `observe()`; each returns a `Decision`."""

    def __init__(self, config: PolicyConfig | None = None, state: PolicyState | None = None) -> None:
        self.config = (config or PolicyConfig()).validate()
        self.state = state or PolicyState()
        self.last_decision: Decision | None = None

    def observe(self, obs: Observation) -> Decision:
        cfg, st = self.config, self.state
        t = obs.timestamp_s
        activity: list[str] = []
        held: list[str] = []
        if st.last_ts is not None and t < st.last_ts:
            activity.append(Msg(N_("clock went backwards (counts as busy)")))
        elif st.last_ts is not None and t - st.last_ts > cfg.gap_limit_s:
            activity.append(
                Msg(
                    N_("no data for {gap} (gap > {limit:g} s counts as busy)"),
                    gap=fmt_min(t - st.last_ts),
                    limit=cfg.gap_limit_s,
                )
            )
        elif st.last_ts is None and st.last_activity_s is None:
            activity.append(Msg(N_("start of observation")))
        activity.extend(Msg(N_("probe error: {error} (counts as busy)"), error=e) for e in obs.errors)
        seen: set[int] = set()
        new_mem: dict[int, int] = {}
        for sample in obs.samples:
            seen.add(sample.index)
            prev: int | str
            if sample.index in st.prev_mem_bytes:
                prev = st.prev_mem_bytes[sample.index]
            elif sample.index in st.prev_mem_unknown:
                prev = "unknown"
            elif sample.index in st.known_gpus:
                prev = "absent"
            else:
                prev = "new" if st.observations else "first"
            mem = _reading(sample.memory_used_bytes)
            old_floor = st.mem_floor_bytes.get(sample.index)
            # a missing memory reading could have been lower than anything seen: the floor drops to 0, so
            # missing data can only make later memory count as held, never as free
            floor = 0 if mem is None else int(mem) if old_floor is None else min(old_floor, int(mem))
            st.mem_floor_bytes[sample.index] = floor
            view = _view_gpu(sample, prev, cfg, None if sample.lost else floor)
            activity.extend(view.active)
            if view.held:
                held.append(view.held)
            if mem is not None:
                # several readings of one GPU at one instant (two loggers writing one file): each was
                # judged above, so any busy one made this instant busy; the next instant is compared
                # with the largest, so any reading that differs from it counts as a change
                new_mem[sample.index] = max(int(mem), new_mem.get(sample.index, 0))
        missing = sorted(set(st.known_gpus) - seen)
        for i in missing:
            st.mem_floor_bytes[i] = 0  # as for a missing memory reading
        if missing:
            activity.append(_missing_text(missing))
            held.append(Msg(N_("a GPU is missing")))
        if not obs.samples and not obs.errors:
            activity.append(Msg(N_("no GPUs in this read (counts as busy)")))
        signal_marks: list[tuple[float, str]] = []
        for sig in obs.signals:
            if sig.state == "active":
                activity.append(join(": ", [sig.name, sig.detail or "active"]))  # a bare state word: as it is
            elif sig.state == "unknown":
                activity.append(_signal_unknown_text(sig.name, sig.detail))
            if sig.last_active_s is not None and math.isfinite(sig.last_active_s):
                signal_marks.append(
                    (min(sig.last_active_s, t), join(": ", [sig.name, sig.detail or Msg(N_("activity"))]))
                )

        # -- update evidence
        if activity:
            st.last_activity_s, st.last_activity_cause = t, activity[0]
        for when, cause in signal_marks:
            if st.last_activity_s is None or when > st.last_activity_s:
                st.last_activity_s, st.last_activity_cause = when, cause
        if held:
            st.last_held_s, st.last_held_cause = t, held[0]
        st.last_ts = t
        st.prev_mem_bytes = new_mem
        st.prev_mem_unknown = sorted(seen - set(new_mem))
        st.known_gpus = sorted(set(st.known_gpus) | seen)
        st.observations += 1
        decision = self._decide(t, obs, tuple(activity), held)
        self.last_decision = decision
        return decision

    def mark_activity(self, t: float, cause: str) -> None:
        """Count an event outside the observations (a dry-run stop, a restart) as activity at `t`."""
        if self.state.last_activity_s is None or t >= self.state.last_activity_s:
            self.state.last_activity_s, self.state.last_activity_cause = t, cause
        self.state.warn_since_s = None

    def stop_due_s(self) -> float:
        """When the stop condition (without the warning period) first holds if nothing changes."""
        cfg, st = self.config, self.state
        a = st.last_activity_s if st.last_activity_s is not None else -math.inf
        h = st.last_held_s if st.last_held_s is not None else -math.inf
        if st.last_ts is not None and st.last_held_s == st.last_ts:
            # memory is held now: only rule (b) can fire
            return a + cfg.held_window_s
        return min(max(a, h) + cfg.window_s, a + cfg.held_window_s)

    def _decide(self, t: float, obs: Observation, activity: tuple[str, ...], held: list[str]) -> Decision:
        cfg, st = self.config, self.state
        a = st.last_activity_s if st.last_activity_s is not None else t
        idle_s = max(0.0, t - a)
        due = self.stop_due_s()
        window = cfg.held_window_s if (held or due - a > cfg.window_s) else cfg.window_s
        in_warning = due - t <= cfg.warn_s
        if not in_warning:
            st.warn_since_s = None
        elif st.warn_since_s is None:
            st.warn_since_s = t
        if activity and idle_s == 0:
            state = IdleState.BUSY
        elif st.warn_since_s is not None and t >= due and t - st.warn_since_s >= cfg.warn_s:
            state = IdleState.STOPPING
        elif in_warning:
            state = IdleState.WARNING
        else:
            state = IdleState.IDLE_CANDIDATE
        reason = self._reason(state, t, obs, activity, held, idle_s, window, due)
        stop_due = due if st.warn_since_s is None else max(due, st.warn_since_s + cfg.warn_s)
        return Decision(t, state, reason, idle_s, window, stop_due, activity)

    def _reason(  # noqa: PLR0917 - private helper fed straight from _decide
        self,
        state: IdleState,
        t: float,
        obs: Observation,
        activity: tuple[str, ...],
        held: list[str],
        idle_s: float,
        window_s: float,
        due: float,
    ) -> str:
        cfg, st = self.config, self.state
        n = len({s.index for s in obs.samples})  # a GPU read twice at one instant is still one GPU
        gpus = Msg(N_("all {n} GPUs"), n=n) if n != 1 else Msg(N_("the GPU"))
        if state == IdleState.BUSY:
            more = Msg(N_(" (+{n} more)"), n=len(activity) - 3) if len(activity) > 3 else ""
            return Msg(N_("busy: {activity}{more}"), activity=join("; ", activity[:3]), more=more)
        quiet = [s for s in obs.signals if s.state == "quiet"]
        quiet_txt = join(
            "", [x for s in quiet for x in (", ", s.detail or Msg(N_("no {name}"), name=s.name))]
        )
        held_txt = Msg(N_("GPU memory held ({why})"), why=held[0]) if held else Msg(N_("no GPU memory held"))
        if held and len(held) > 1:
            held_txt = Msg(N_("GPU memory held on {n} GPUs ({why}, …)"), n=len(held), why=held[0])
        base = Msg(
            N_("{gpus} idle (util ≤ {util:g}%) for {idle}, {held}{quiet}; last activity: {cause}"),
            gpus=gpus,
            util=cfg.threshold_pct,
            idle=fmt_min(idle_s),
            held=held_txt,
            quiet=quiet_txt,
            cause=st.last_activity_cause,
        )
        if state == IdleState.STOPPING:
            return Msg(N_("stop: {base}; window {window} reached"), base=base, window=fmt_window(window_s))
        if state == IdleState.WARNING:
            return Msg(
                N_("warning: {base}; stop in {left} unless activity resumes"),
                base=base,
                left=fmt_min(max(0.0, due - t)),
            )
        return Msg(N_("idle candidate: {base}; window {window}"), base=base, window=fmt_window(window_s))
