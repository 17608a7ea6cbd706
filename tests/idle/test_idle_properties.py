"""Invariants of the idle policy (hypothesis):

* adding activity (more util, a compute process, an active signal) never makes it stop earlier;
* a reading turned missing (failed / not reported / lost), or a gap longer than max_gap_s, never makes it
  stop earlier;
* every stop has a reason that names the window, and no stop comes before the shortest window.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from idle_builders import T0, gpu, proc

from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, Sample
from gpuwise.idle.policy import Observation, PolicyConfig, Signal
from gpuwise.idle.replay import replay

# small windows so short generated traces reach a stop: window 6 min, held 12 min, warn 2 min
CFG = PolicyConfig(window_min=6, held_window_min=12, warn_min=2, max_gap_s=120)
STEP_S = 30.0
UTILS = st.sampled_from([0.0, 0.0, 0.0, 2.0, 20.0, 40.0, 95.0])
MEMS = st.sampled_from([1.0, 1.0, 300.0, 300.0, 5000.0])
SIGNAL = st.sampled_from(["quiet", "quiet", "quiet", "active"])

# one observation: per GPU (util, mem MiB), plus an ssh signal state
ROW = st.tuples(st.lists(st.tuples(UTILS, MEMS), min_size=2, max_size=2), SIGNAL)
TRACE = st.lists(ROW, min_size=10, max_size=90)


def build(rows: list[tuple[list[tuple[float, float]], str]]) -> list[Observation]:
    out = []
    for k, (gpus, sig) in enumerate(rows):
        t = T0 + k * STEP_S
        samples = tuple(gpu(i, t, u, m, ()) for i, (u, m) in enumerate(gpus))
        out.append(Observation(t, samples, (Signal("ssh", sig, "ssh"),)))  # type: ignore[arg-type]
    return out


def stop_of(observations: list[Observation]) -> float | None:
    return replay(observations, CFG).stop_at_s


def not_earlier(before: float | None, after: float | None) -> bool:
    """`after` is no earlier than `before` (None = never stops)."""
    if after is None:
        return True
    return before is not None and after >= before


# A long idle tail so that many generated traces do stop.
TAIL = [([(0.0, 1.0), (0.0, 1.0)], "quiet")] * 40


@settings(max_examples=150, deadline=None)
@given(rows=TRACE, data=st.data())
def test_adding_activity_never_stops_earlier(
    rows: list[tuple[list[tuple[float, float]], str]], data: st.DataObject
) -> None:
    rows = rows + TAIL
    base = build(rows)
    more = list(base)
    picks = data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=8))
    kind = data.draw(st.sampled_from(["util", "signal", "process"]))
    for k in picks:
        o = more[k]
        if kind == "signal":
            more[k] = replace(o, signals=(Signal("ssh", "active", "1 SSH session"),))
            continue
        i = data.draw(st.integers(0, 1))
        s = o.samples[i]
        if kind == "util":
            old = s.util_gpu_pct
            assert isinstance(old, float)
            new_s = replace(s, util_gpu_pct=data.draw(st.floats(old, 100.0)))
        else:
            new_s = replace(s, processes=(proc(mib=200),))
        more[k] = replace(o, samples=tuple(new_s if j == i else x for j, x in enumerate(o.samples)))
    assert not_earlier(stop_of(base), stop_of(more))


@settings(max_examples=150, deadline=None)
@given(rows=TRACE, data=st.data())
def test_missing_data_never_stops_earlier(
    rows: list[tuple[list[tuple[float, float]], str]], data: st.DataObject
) -> None:
    rows = rows + TAIL
    base = build(rows)
    worse = list(base)
    kind = data.draw(st.sampled_from(["util", "memory", "lost", "drop_gpu", "signal", "gap", "processes"]))
    if kind == "gap":
        start = data.draw(st.integers(1, len(rows) - 6))
        length = data.draw(st.integers(5, 10))  # ≥ 5 steps of 30 s: longer than max_gap_s = 120
        worse = worse[:start] + worse[start + length :]
    else:
        for k in data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=6)):
            o = worse[k]
            if not o.samples:
                continue
            i = data.draw(st.integers(0, len(o.samples) - 1))
            s = o.samples[i]
            bad = data.draw(st.sampled_from([NOT_SUPPORTED, Failed("NVML_ERROR_UNKNOWN")]))
            new_s: Sample | None = s
            if kind == "util":
                new_s = replace(s, util_gpu_pct=bad)
            elif kind == "memory":
                new_s = replace(s, memory_used_bytes=bad)
            elif kind == "processes":
                new_s = replace(s, processes=Failed("NVML_ERROR_UNKNOWN"))
            elif kind == "lost":
                new_s = replace(
                    s, lost=True, util_gpu_pct=Failed("GPU is lost"), memory_used_bytes=Failed("GPU is lost")
                )
            elif kind == "drop_gpu":
                new_s = None
            if kind == "signal":
                worse[k] = replace(o, signals=(Signal("ssh", "unknown", "who failed"),))
            else:
                samples = tuple(new_s if j == i else x for j, x in enumerate(o.samples))
                worse[k] = replace(o, samples=tuple(x for x in samples if x is not None))
    assert not_earlier(stop_of(base), stop_of(worse))


@settings(max_examples=150, deadline=None)
@given(rows=TRACE)
def test_a_stop_always_has_a_reason_and_respects_the_window(
    rows: list[tuple[list[tuple[float, float]], str]],
) -> None:
    obs = build(rows + TAIL)
    r = replay(obs, CFG)
    if r.stop_at_s is None:
        assert r.reason.startswith("no stop:")
        return
    assert r.reason.startswith("stop:") and "window" in r.reason and "last activity" in r.reason
    # never before the short window after the start of observation
    assert r.stop_at_s - T0 >= CFG.window_s
    # and never while activity happened within the last window
    last = replay(obs, CFG).stop_at_s
    assert last == r.stop_at_s  # deterministic


@settings(max_examples=100, deadline=None)
@given(rows=TRACE, data=st.data())
def test_a_restart_from_persisted_state_never_stops_earlier(
    rows: list[tuple[list[tuple[float, float]], str]], data: st.DataObject
) -> None:
    """The daemon saves PolicyState as JSON after each observation; resuming from it at any point (and
    after any pause, long or short) must not bring the stop forward."""
    import json

    from gpuwise.idle.policy import IdlePolicy, IdleState, PolicyState

    obs = build(rows + TAIL)
    cut = data.draw(st.integers(1, len(obs) - 1))
    pause_s = data.draw(st.sampled_from([0.0, 600.0]))  # none, or longer than max_gap_s

    def first_stop(policy: IdlePolicy, seq: list[Observation]) -> float | None:
        for o in seq:
            if policy.observe(o).state == IdleState.STOPPING:
                return o.timestamp_s
        return None

    whole = first_stop(IdlePolicy(CFG), obs)
    p1 = IdlePolicy(CFG)
    before = first_stop(p1, obs[:cut])
    if before is not None:
        assert before == whole
        return
    saved = json.loads(json.dumps(p1.state.to_json()))
    later = [replace(o, timestamp_s=o.timestamp_s + pause_s) for o in obs[cut:]]
    resumed = first_stop(IdlePolicy(CFG, PolicyState.from_json(saved)), later)
    if pause_s == 0:
        assert not_earlier(whole, resumed)
    else:  # evidence older than the gap is not trusted: the idle clock starts over at the first new read
        assert resumed is None or resumed >= later[0].timestamp_s + CFG.window_s
