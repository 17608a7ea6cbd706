"""Replaying a recorded series through the idle policy: when would it have stopped the machine, and why.

`group_samples` turns a recording's rows into one observation per poll; `replay` feeds them to an
`IdlePolicy` and stops at its first `stopping` decision, recording every idle stretch on the way. Used by
`gpuwise idle replay` (through `replay_trace`, which reads the file) and by the tests on real and generated
traces.

Pure but for `replay_trace`: no clock, environment or printing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise.gpu.sample import Sample
from gpuwise.gpu.smi_csv import format_trace_time, iter_snapshot_groups, read_query_csv
from gpuwise.idle.hang import HangConfig, HangDetector, last_user_activity
from gpuwise.idle.message import Msg, join, text
from gpuwise.idle.policy import (
    Decision,
    IdlePolicy,
    IdleState,
    Observation,
    PolicyConfig,
    fmt_min,
    fmt_window,
)
from gpuwise.locale import N_

# a recording shows no files, so a replay assumes none changed: hang verdicts are the worst case
# (English; what is shown goes through _no_progress_note())
NO_PROGRESS_NOTE = "a recording shows no files, so no progress is assumed"


@dataclass(frozen=True)
class HangStretch:
    """A possible hang found in a recording: flat since `since_s`, reported at `flagged_s`, over at
    `end_s` (activity, or the end of the trace)."""

    since_s: float
    flagged_s: float
    end_s: float
    reason: str


@dataclass(frozen=True)
class IdleStretch:
    """A stretch without activity: from the last activity to the next one (or the end of the trace)."""

    start_s: float
    end_s: float
    peak_state: IdleState  # the furthest state reached: idle_candidate, warning or stopping
    window_s: float
    ended_by: str  # the activity that ended it, "end of trace" or "stop"

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class ReplayResult:
    stop_at_s: float | None
    reason: str
    samples: int
    observations: int
    first_s: float | None
    last_s: float | None
    max_idle_s: float
    stretches: tuple[IdleStretch, ...]  # idle stretches of at least `min_stretch_s`, in time order
    config: PolicyConfig
    gpus: tuple[int, ...] = ()  # the GPU indexes the series holds
    hangs: tuple[HangStretch, ...] = ()  # possible hangs (only when replayed with a HangConfig)

    def to_json(self) -> dict[str, Any]:
        """The `gpuwise idle replay --json` object; times in the trace's own clock."""

        def at(ts: float | None) -> str | None:
            return None if ts is None else format_trace_time(ts)

        cfg = self.config
        return {
            "stop_at": at(self.stop_at_s),
            "reason": text(self.reason),  # sentences in the reader's language
            "samples": self.samples,
            "observations": self.observations,
            "gpus": list(self.gpus),
            "first_sample": at(self.first_s),
            "last_sample": at(self.last_s),
            "stop_after_s": (
                None if self.stop_at_s is None or self.first_s is None else self.stop_at_s - self.first_s
            ),
            "max_idle_min": round(self.max_idle_s / 60, 2),
            "options": {
                "threshold_pct": cfg.threshold_pct,
                "window_min": cfg.window_min,
                "held_window_min": cfg.held_window_min,
                "warn_min": cfg.warn_min,
                "mem_change_mib": cfg.mem_change_mib,
                "baseline_mem_mib": cfg.baseline_mem_mib,
                "noise_floor_pct": cfg.noise_floor_pct,
                "held_threshold_pct": cfg.held_threshold_pct,
                "max_gap_s": cfg.gap_limit_s,
            },
            "idle_stretches": [
                {
                    "start": at(s.start_s),
                    "end": at(s.end_s),
                    "minutes": round(s.duration_s / 60, 2),
                    "window_min": round(s.window_s / 60, 2),
                    "reached": s.peak_state.value,
                    "ended_by": s.ended_by,
                }
                for s in self.stretches
            ],
            "possible_hangs": [
                {
                    "since": at(h.since_s),
                    "flagged": at(h.flagged_s),
                    "end": at(h.end_s),
                    "reason": text(h.reason),
                }
                for h in self.hangs
            ],
        }


_RANK = {IdleState.BUSY: 0, IdleState.IDLE_CANDIDATE: 1, IdleState.WARNING: 2, IdleState.STOPPING: 3}


def median_interval_s(timestamps: Sequence[float]) -> float | None:
    """Median of the positive steps between sorted timestamps (None with fewer than two)."""
    steps = sorted(b - a for a, b in itertools.pairwise(sorted(timestamps)) if b > a)
    return steps[len(steps) // 2] if steps else None


def group_samples(samples: Iterable[Sample]) -> list[Observation]:
    """Time-ordered samples → one observation per poll. nvidia-smi stamps each GPU's row separately and a
    poll of 8 GPUs can take a good fraction of a second, so a poll ends when a GPU index repeats, or when
    the clock moves on by more than half of one GPU's own sampling interval. Several rows of one GPU at
    one stamp (two loggers writing one file) all go into that observation: the policy judges each, so a
    busy one is never hidden by an idle one."""
    # GPUs of a CSV without an index column were numbered by the reader (`number_unindexed_gpus`); doing it
    # again here would turn two loggers' rows of GPU 0 at one stamp into two GPUs
    ordered = sorted(samples, key=lambda x: (x.timestamp_s, x.index))
    by_gpu: dict[int, list[float]] = {}
    for s in ordered:
        by_gpu.setdefault(s.index, []).append(s.timestamp_s)
    steps = [m for ts in by_gpu.values() if (m := median_interval_s(ts)) is not None]
    max_skew_s = 0.5 * min(steps) if steps else 0.5
    groups = iter_snapshot_groups(ordered, max_skew_s=max_skew_s)
    return [Observation(g[0].timestamp_s, tuple(g)) for g in groups]


def replay(
    observations: Sequence[Observation],
    config: PolicyConfig | None = None,
    *,
    samples: int | None = None,
    min_stretch_s: float = 300.0,
    hang: HangConfig | None = None,
) -> ReplayResult:
    """Run the policy over a recorded series; stop at the first `stopping` decision. An automatic
    `max_gap_s` is fixed from the series' own median sampling interval. With `hang`, possible hangs are
    found too (no progress assumed) and, with `hang.stop`, a hang's stop ends the replay if it comes first."""
    cfg = config or PolicyConfig()
    step = median_interval_s([o.timestamp_s for o in observations])
    policy = IdlePolicy(cfg.resolve_gap(step) if step is not None else cfg)
    hangs, hang_stop = find_hangs(observations, hang, policy.config) if hang else ((), None)
    until = hang_stop[0] if hang_stop is not None else None
    stretches: list[IdleStretch] = []
    open_start: float | None = None
    peak = IdleState.IDLE_CANDIDATE
    window = policy.config.window_s
    last: Decision | None = None
    max_idle = 0.0

    def close(end_s: float, ended_by: str) -> None:
        if open_start is not None and (end_s - open_start >= min_stretch_s or ended_by == "stop"):
            stretches.append(IdleStretch(open_start, end_s, peak, window, ended_by))

    for obs in observations:
        if until is not None and obs.timestamp_s > until:
            break  # the hang's stop came first
        d = policy.observe(obs)
        max_idle = max(max_idle, d.idle_s)
        if d.state == IdleState.BUSY:
            close(d.timestamp_s, d.activity[0] if d.activity else "activity")
            open_start = None
        else:
            if open_start is None or d.timestamp_s - d.idle_s > open_start:
                if open_start is not None:  # a signal's last activity moved the start
                    close(d.timestamp_s - d.idle_s, policy.state.last_activity_cause)
                open_start, peak = d.timestamp_s - d.idle_s, IdleState.IDLE_CANDIDATE
            if _RANK[d.state] > _RANK[peak]:
                peak = d.state
            window = d.window_s
        last = d
        if d.state == IdleState.STOPPING:
            break
    n_samples = samples if samples is not None else sum(len(o.samples) for o in observations)
    gpus = tuple(sorted({s.index for o in observations for s in o.samples}))
    first = observations[0].timestamp_s if observations else None
    end = observations[-1].timestamp_s if observations else None
    stopped = last is not None and (last.state == IdleState.STOPPING or hang_stop is not None)
    if last is not None:
        close(last.timestamp_s, "stop" if stopped else "end of trace")  # ids in the JSON: shown translated
    stop_at: float | None = None
    reason: str
    if last is None:
        reason = Msg(N_("no stop: the trace holds no samples"))
    elif last.state == IdleState.STOPPING:
        stop_at, reason = last.timestamp_s, last.reason
    elif hang_stop is not None:
        stop_at, reason = hang_stop
    else:
        reason = _no_stop_reason(policy, last, max_idle)
    return ReplayResult(
        stop_at,
        reason,
        n_samples,
        len(observations),
        first,
        end,
        max_idle,
        tuple(stretches),
        policy.config,
        gpus,
        hangs,
    )


def _no_stop_reason(policy: IdlePolicy, last: Decision, max_idle: float) -> str:
    held = (
        Msg(N_(" that applies while GPU memory is held or not reported"))
        if last.window_s > policy.config.window_s
        else ""
    )
    return Msg(
        N_(
            "no stop: the longest idle stretch was {longest}; "
            "at the end of the trace the machine had been idle {idle} "
            "(last activity: {cause}), "
            "short of the {window} window{held}"
        ),
        longest=fmt_min(max_idle),
        idle=fmt_min(last.idle_s),
        cause=policy.state.last_activity_cause,
        window=fmt_window(last.window_s),
        held=held,
    )


def _no_progress_note() -> str:
    return Msg(N_("a recording shows no files, so no progress is assumed"))


def find_hangs(
    observations: Sequence[Observation], hang: HangConfig, policy: PolicyConfig
) -> tuple[tuple[HangStretch, ...], tuple[float, str] | None]:
    """Possible hangs in a recording (no progress assumed: it shows no files), and the first hang stop
    (time, reason) when `hang.stop` is on."""
    detector = HangDetector(
        hang, policy.threshold_pct, policy.mem_change_mib, policy.gap_limit_s, policy.warn_s
    )
    found: list[HangStretch] = []
    flagged: tuple[float, float, str] | None = None  # since, flagged at, reason

    def close(end_s: float) -> None:
        if flagged is not None:
            found.append(
                HangStretch(flagged[0], flagged[1], end_s, join("; ", [flagged[2], _no_progress_note()]))
            )

    for obs in observations:
        v = detector.observe(obs, last_progress_s=None, last_user_s=last_user_activity(obs))
        if v.state == "none":
            close(obs.timestamp_s)
            flagged = None
            continue
        if flagged is None:
            flagged = (v.since_s if v.since_s is not None else obs.timestamp_s, obs.timestamp_s, v.reason)
        if v.state == "stopping":
            close(obs.timestamp_s)
            return tuple(found), (obs.timestamp_s, join("; ", [v.reason, _no_progress_note()]))
    if observations:
        close(observations[-1].timestamp_s)
    return tuple(found), None


def replay_trace(
    path: Path, config: PolicyConfig | None = None, hang: HangConfig | None = None
) -> ReplayResult:
    """Replay a recorded trace file (nvidia-smi --query-gpu CSV, or a Weights & Biases GPU export).
    Raises ReplayError for a file that is not a GPU trace."""
    samples = read_query_csv(path)
    return replay(group_samples(samples), config, samples=len(samples), hang=hang)
