"""The idle policy on constructed observations: each test names the mistake it guards against."""

from __future__ import annotations

from pathlib import Path

import pytest
from idle_builders import MIB, T0, gpu, proc, series

from gpuwise.errors import ConfigError
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed
from gpuwise.idle.policy import (
    IdlePolicy,
    IdleState,
    Observation,
    PolicyConfig,
    PolicyState,
    Signal,
)
from gpuwise.idle.replay import replay

MIN = 60.0


def _stop_offset(observations: list[Observation], cfg: PolicyConfig | None = None) -> float | None:
    r = replay(observations, cfg)
    return None if r.stop_at_s is None else r.stop_at_s - T0


def test_empty_gpu_stops_after_window_with_a_reason() -> None:
    obs = series([0.0] * 200, mem_mib=1)  # 100 min at 30 s
    r = replay(obs)
    assert r.stop_at_s is not None
    assert r.stop_at_s - T0 == pytest.approx(60 * MIN)
    assert "for 60 min" in r.reason and "no GPU memory held" in r.reason


def test_states_go_busy_candidate_warning_stopping() -> None:
    policy = IdlePolicy()
    states = [policy.observe(o).state for o in series([90.0] + [0.0] * 130)]
    assert states[0] == IdleState.BUSY
    assert states[1] == IdleState.IDLE_CANDIDATE
    first_warning = states.index(IdleState.WARNING)
    # warning starts warn_min (10) before the 60-min window: at 50 min = observation 100
    assert first_warning == 100
    assert states.index(IdleState.STOPPING) == 120
    assert states[100:120] == [IdleState.WARNING] * 20


def test_activity_during_warning_cancels_the_stop() -> None:
    utils = [0.0] * 110 + [50.0] + [0.0] * 200
    assert _stop_offset(series(utils)) == pytest.approx((110 + 120) * 30)


def test_memory_held_needs_the_longer_window() -> None:
    """Eval phases sit at 0 % for 50-70 min with memory held: 60 min must not be enough."""
    obs = series([0.0] * 300, mem_mib=40000)
    assert _stop_offset(obs) == pytest.approx(120 * MIN)


def test_memory_not_reported_counts_as_held() -> None:
    obs = series([0.0] * 300, mem_mib=None)
    assert _stop_offset(obs) == pytest.approx(120 * MIN)


def test_compute_process_counts_as_held_even_at_low_memory() -> None:
    obs = [Observation(T0 + k * 30, (gpu(0, T0 + k * 30, 0.0, 300, [proc(mib=290)]),)) for k in range(300)]
    assert _stop_offset(obs) == pytest.approx(120 * MIN)


def test_graphics_process_is_not_a_job() -> None:
    obs = [
        Observation(T0 + k * 30, (gpu(0, T0 + k * 30, 20.0, 300, [proc(mib=290, kind="graphics")]),))
        for k in range(300)
    ]
    assert _stop_offset(obs) == pytest.approx(60 * MIN)


def test_display_noise_is_not_a_job_but_the_same_util_with_a_job_is() -> None:
    noise = series([25.0, 0.0, 3.0] * 100, mem_mib=310)
    assert _stop_offset(noise) == pytest.approx(60 * MIN)
    with_job = series([25.0, 0.0, 3.0] * 100, mem_mib=8000)
    assert _stop_offset(with_job) is None
    proc_obs = [
        Observation(T0 + k * 30, (gpu(0, T0 + k * 30, 25.0, 400, [proc(mib=390)]),)) for k in range(300)
    ]
    assert _stop_offset(proc_obs) is None


def _mems(mems: list[float], util: float = 0.0) -> list[Observation]:
    return [Observation(T0 + k * 30, (gpu(0, T0 + k * 30, util, m),)) for k, m in enumerate(mems)]


def test_a_small_job_above_the_gpus_own_floor_is_not_display_noise() -> None:
    """A 420-MiB job at 30 % on a card that read 1 MiB before it: below the 512 MiB baseline and the 35 %
    noise floor, but far above what the card uses empty — a job, held, and its util counts."""
    obs = _mems([1.0] * 10 + [420.0] * 400, util=30.0)
    assert _stop_offset(obs) is None
    # the same at the card's floor from the start (no evidence of a job) is still treated as noise
    assert _stop_offset(_mems([420.0] * 410, util=30.0)) == pytest.approx(60 * MIN)


def test_memory_above_the_floor_is_held_and_needs_the_longer_window() -> None:
    """A job that frees all but its CUDA context (430 MiB) and works on CPU at 0 %: 120 min, not 60."""
    obs = _mems([8000.0] * 10 + [430.0] * 400)  # the floor so far is 430 at first, …
    assert _stop_offset(obs) == pytest.approx((10 + 120) * 30)  # … so it looks empty (60 min window)
    obs = _mems([3.0] * 5 + [8000.0] * 10 + [430.0] * 400)  # the card read 3 MiB before the job
    r = replay(obs)
    assert r.stop_at_s is not None and r.stop_at_s - T0 == pytest.approx((15 + 240) * 30)
    assert "above its lowest reading" in r.reason


def test_any_util_on_a_gpu_holding_memory_is_activity() -> None:
    """A starved job whose bursts read 1–4 %: below the 5 % threshold, but a kernel ran."""
    utils = ([0.0] * 19 + [2.0]) * 30
    assert _stop_offset(series(utils, mem_mib=6000)) is None
    # the old behaviour stays one option away
    cfg = PolicyConfig(held_threshold_pct=5)
    assert _stop_offset(series(utils, mem_mib=6000), cfg) == pytest.approx(120 * MIN)
    # and on an empty GPU 2 % is not activity
    assert _stop_offset(series(utils, mem_mib=1)) == pytest.approx(60 * MIN)


def test_a_missing_memory_reading_drops_the_floor_so_later_memory_counts_as_held() -> None:
    policy = IdlePolicy()
    t = T0
    for m in [420.0, None, 420.0]:
        policy.observe(Observation(t, (gpu(0, t, 0.0, m),)))
        t += 30
    assert policy.state.mem_floor_bytes[0] == 0
    assert policy.state.last_held_s == t - 30  # 420 MiB is now above the (unknown) floor
    restored = PolicyState.from_json(policy.state.to_json())
    assert restored.mem_floor_bytes == {0: 0}


def test_noise_floor_zero_turns_the_noise_rule_off() -> None:
    noise = series([25.0, 0.0, 3.0] * 100, mem_mib=310)
    assert _stop_offset(noise, PolicyConfig(noise_floor_pct=0)) is None


def test_memory_change_is_activity() -> None:
    mems = [1.0] * 100 + [5000.0] + [1.0] * 200  # a job allocates and exits without util
    obs = [Observation(T0 + k * 30, (gpu(0, T0 + k * 30, 0.0, m),)) for k, m in enumerate(mems)]
    # the free at k=101 is the last activity; then 60 min empty
    assert _stop_offset(obs) == pytest.approx((101 + 120) * 30)


@pytest.mark.parametrize(
    "bad_util",
    [NOT_SUPPORTED, Failed("NVML_ERROR_UNKNOWN")],
    ids=["not-supported", "failed"],
)
def test_missing_util_counts_as_busy(bad_util: object) -> None:
    obs = series([0.0] * 300)
    k = 100
    t = obs[k].timestamp_s
    obs[k] = Observation(t, (gpu(0, t, bad_util),))  # type: ignore[arg-type]
    assert _stop_offset(obs) == pytest.approx((k + 120) * 30)


def test_gap_in_samples_counts_as_busy() -> None:
    """A daemon asleep for 50 min must not find 50 idle minutes on waking."""
    obs = series([0.0] * 300)
    obs = obs[:50] + obs[150:]  # 50-min hole
    assert _stop_offset(obs) == pytest.approx((150 + 120) * 30)


def test_probe_error_and_lost_gpu_count_as_busy() -> None:
    obs = series([0.0] * 300)
    obs[60] = Observation(obs[60].timestamp_s, (), errors=("NVML: Driver/library version mismatch",))
    assert _stop_offset(obs) == pytest.approx((61 + 120) * 30)  # the GPU coming back is activity too


def test_a_vanished_gpu_counts_as_busy_and_never_hides_the_others() -> None:
    obs = []
    for k in range(400):
        t = T0 + k * 30
        gpus = [gpu(i, t, 0.0) for i in range(8) if not (k == 100 and i == 5)]
        obs.append(Observation(t, tuple(gpus)))
    assert _stop_offset(obs) == pytest.approx((101 + 120) * 30)  # its return counts too
    policy = IdlePolicy()
    decisions = [policy.observe(o) for o in obs[:101]]
    assert decisions[100].state == IdleState.BUSY
    assert "GPU 5 missing" in decisions[100].reason
    # without the missing GPU the stop comes at 60 min
    whole = [Observation(o.timestamp_s, tuple(gpu(i, o.timestamp_s, 0.0) for i in range(8))) for o in obs]
    assert _stop_offset(whole) == pytest.approx(60 * MIN)


def test_one_busy_gpu_of_eight_keeps_the_machine() -> None:
    obs = [
        Observation(T0 + k * 30, tuple(gpu(i, T0 + k * 30, 95.0 if i == 3 else 0.0) for i in range(8)))
        for k in range(400)
    ]
    assert _stop_offset(obs) is None


def test_signals_active_unknown_and_last_active() -> None:
    quiet = [Signal("ssh", "quiet", "no SSH sessions")]
    sigs = [quiet] * 300
    sigs[100] = [Signal("ssh", "active", "1 SSH session (alice)")]
    assert _stop_offset(series([0.0] * 300, signals=sigs)) == pytest.approx((100 + 120) * 30)
    sigs = [quiet] * 300
    sigs[40] = [Signal("jupyter", "unknown", "connection refused")]
    assert _stop_offset(series([0.0] * 300, signals=sigs)) == pytest.approx((40 + 120) * 30)
    # a keep-alive touched at 30 min (reported later as its mtime) moves the idle clock
    touched = T0 + 30 * MIN
    sigs = [[Signal("keepalive", "quiet", "keep-alive file", last_active_s=touched)]] * 300
    assert _stop_offset(series([0.0] * 300, signals=sigs)) == pytest.approx(90 * MIN)


def test_stop_reason_names_gpus_and_quiet_signals() -> None:
    obs = []
    for k in range(200):
        t = T0 + k * 30
        obs.append(
            Observation(
                t,
                tuple(gpu(i, t, 0.0) for i in range(8)),
                (
                    Signal("ssh", "quiet", "no SSH sessions"),
                    Signal("gpu_processes", "quiet", "no GPU processes"),
                ),
            )
        )
    r = replay(obs)
    assert r.stop_at_s is not None
    assert "all 8 GPUs idle" in r.reason and "no SSH sessions" in r.reason and "no GPU processes" in r.reason


def test_state_round_trips_through_json_and_a_restart_never_shortens_the_clock() -> None:
    policy = IdlePolicy()
    obs = series([90.0] + [0.0] * 80)
    for o in obs[:60]:
        policy.observe(o)
    saved = policy.state.to_json()
    restored = IdlePolicy(state=PolicyState.from_json(saved))
    # restart within max_gap: continues from evidence
    d = restored.observe(obs[60])
    assert d.idle_s == pytest.approx(policy.observe(obs[60]).idle_s)
    # restart after a long absence: the clock starts again
    late = IdlePolicy(state=PolicyState.from_json(saved))
    t = obs[60].timestamp_s + 3600
    d = late.observe(Observation(t, (gpu(0, t, 0.0),)))
    assert d.state == IdleState.BUSY and d.idle_s == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold_pct": 150},
        {"window_min": 0},
        {"warn_min": 60},
        {"max_gap_s": -1},
        {"noise_floor_pct": float("nan")},
        {"held_threshold_pct": -1},
    ],
)
def test_impossible_options_are_config_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        PolicyConfig(**kwargs).validate()


def test_mib_constant() -> None:
    assert MIB == 1024 * 1024


def test_gap_limit_follows_the_sampling_interval() -> None:
    """A trace logged every 5 min is not 'missing data' between its samples; a hole of 30 min in it is."""
    obs = series([90.0] * 10 + [0.0] * 40, step_s=300)  # 4 h: 50 min busy, then 3h20 idle
    r = replay(obs)
    assert r.config.gap_limit_s == 1200
    assert r.stop_at_s is not None and r.stop_at_s - T0 == pytest.approx((9 + 12) * 300)
    assert replay(obs, PolicyConfig(max_gap_s=120)).stop_at_s is None  # every step is a gap
    holed = obs[:20] + obs[27:]  # a 40-min hole
    r = replay(holed)
    assert r.stop_at_s is not None and r.stop_at_s - T0 == pytest.approx((27 + 12) * 300)


def test_group_samples_keeps_a_slow_poll_together() -> None:
    """nvidia-smi stamps each GPU's row; a poll of 8 GPUs may spread over ~0.7 s."""
    from gpuwise.idle.replay import group_samples

    samples = [gpu(i, T0 + k * 30 + 0.1 * i, 0.0) for k in range(20) for i in range(8)]
    groups = group_samples(samples)
    assert len(groups) == 20 and all(len(g.samples) == 8 for g in groups)
    # a poll missing GPU 5 is still one observation, and the policy sees GPU 5 missing
    samples = [s for s in samples if not (s.index == 5 and s.timestamp_s < T0 + 31)]
    groups = group_samples(samples)
    assert len(groups) == 20 and len(groups[1].samples) == 7


def test_csv_without_index_column_tells_gpus_apart() -> None:
    """NVIDIA's documented query (timestamp,name,pci.bus_id,…) has no index: every row says GPU 0."""
    from dataclasses import replace as dc_replace

    from gpuwise.gpu.smi_csv import number_unindexed_gpus
    from gpuwise.idle.replay import group_samples

    rows = []
    for k in range(400):
        for i in range(4):
            s = gpu(0, T0 + k * 30 + 0.004 * i, 95.0 if (i == 0 and k < 100) else 0.0, 40000 if i == 0 else 1)
            rows.append(s)
    by_position = group_samples(number_unindexed_gpus(rows))
    assert len(by_position) == 400 and {x.index for x in by_position[0].samples} == {0, 1, 2, 3}
    with_bus = [dc_replace(s, bus_id=f"00000000:{0x18 + (n % 4):02X}:00.0") for n, s in enumerate(rows)]
    assert {x.index for x in group_samples(number_unindexed_gpus(with_bus))[5].samples} == {0, 1, 2, 3}
    # the job on the first GPU keeps its 40 GB; it stops only after the held-memory window
    r = replay(by_position)
    assert r.stop_at_s is not None and r.stop_at_s - T0 == pytest.approx((99 + 240) * 30, abs=1)


def test_csv_without_index_mixing_shared_and_separate_stamps_tells_gpus_apart(tmp_path: Path) -> None:
    """A real 5-GPU log without an index column: the first poll's rows are stamped a millisecond apart,
    later polls' rows share one stamp (the reader numbers those 0–4): each poll is one observation."""
    from gpuwise.gpu.smi_csv import read_query_csv
    from gpuwise.idle.replay import group_samples

    lines = ["timestamp, utilization.gpu [%], memory.used [MiB]"]
    lines += [f"2025/01/26 23:23:13.21{i}, 0 %, 1 MiB" for i in range(5)]
    for minute in (24, 25, 26):
        lines.append(f"2025/01/26 23:{minute}:13.216, 11 %, 1527 MiB")
        lines += [f"2025/01/26 23:{minute}:13.216, 0 %, 4 MiB"] * 4
    path = tmp_path / "five.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    obs = group_samples(read_query_csv(path))
    assert [len(o.samples) for o in obs] == [5, 5, 5, 5]
    assert all({s.index for s in o.samples} == {0, 1, 2, 3, 4} for o in obs)
