"""Hang detection (idle/hang.py): the constructed hang traces in tests/fixtures/idle_hang (what each must
give is in their manifest), the real GB10 recording, and the detector's rules on hand-built samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.gpu.sample import Failed, Reading, Sample, value_or_none
from gpuwise.gpu.smi_csv import read_query_csv
from gpuwise.idle.hang import HangConfig, HangDetector, last_user_activity
from gpuwise.idle.policy import MIB, Observation, Signal
from gpuwise.idle.replay import group_samples, replay_trace

HANG_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle_hang"
MANIFEST = json.loads((HANG_FIXTURES / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_constructed_hang_trace(name: str) -> None:
    spec = MANIFEST[name]
    warn_only = replay_trace(HANG_FIXTURES / name, hang=HangConfig())
    first = warn_only.first_s
    assert first is not None
    assert warn_only.stop_at_s is None  # stop_on_hang is off: a possible hang is only reported
    stopping = replay_trace(HANG_FIXTURES / name, hang=HangConfig(stop=True))
    if spec["hang_since_s"] is None:
        assert warn_only.hangs == () and stopping.stop_at_s is None, warn_only.hangs
        return
    (h,) = warn_only.hangs
    assert h.since_s - first == pytest.approx(spec["hang_since_s"], abs=1)
    assert 30 * 60 <= h.flagged_s - h.since_s <= 30 * 60 + 30  # the 30-min window, at the next sample
    assert "no progress is assumed" in h.reason
    assert stopping.stop_at_s is not None
    # the warning stands warn_min (10) before the stop
    assert 10 * 60 <= stopping.stop_at_s - h.flagged_s <= 10 * 60 + 30
    if "hang_stop_s" in spec:
        assert stopping.stop_at_s - first == pytest.approx(spec["hang_stop_s"], abs=31)
    assert stopping.reason.startswith("stop: possible hang")


def test_constructed_hang_fixtures_are_reproducible() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import generate_hang_traces
    finally:
        sys.path.pop(0)
    files = generate_hang_traces.build()
    assert set(files) == {p.name for p in HANG_FIXTURES.iterdir()}
    for name, text in files.items():
        assert (HANG_FIXTURES / name).read_text(encoding="utf-8") == text, name


def _observations(path: Path) -> list[Observation]:
    return group_samples(read_query_csv(path))


def _run(
    observations: list[Observation],
    cfg: HangConfig,
    progress: list[float] | None = None,
) -> list[tuple[float, str]]:
    """(offset, state) of every verdict that is not "none"; `progress`: offsets at which a watched
    file changed."""
    det = HangDetector(cfg, gap_s=120.0)
    first = observations[0].timestamp_s
    out: list[tuple[float, str]] = []
    for obs in observations:
        t = obs.timestamp_s - first
        changed = [first + p for p in progress or [] if p <= t]
        v = det.observe(obs, last_progress_s=max(changed) if changed else None)
        if v.state != "none":
            out.append((t, v.state))
    return out


def test_real_gb10_training_is_not_a_hang(trace_fixtures: Path) -> None:
    """The real GB10 run (recordings/traces/README.md) trains at 84–91 % and does not report memory: it
    is never a possible hang, even assuming no progress and with stop_on_hang."""
    obs = _observations(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv")
    assert _run(obs, HangConfig(stop=True)) == []
    assert _run(obs, HangConfig(util_pct=85, window_min=5, stop=True)) == []  # memory not reported


def test_a_real_live_job_has_flat_power_so_progress_must_decide(trace_fixtures: Path) -> None:
    """Why the GPU readings are only a precondition: in the same real run, 40 min of live training
    (+1,200 s to +3,600 s) kept its power within 5 % (28.4–28.9 W) — as flat as a spin."""
    obs = _observations(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv")
    first = obs[0].timestamp_s
    window = [s for o in obs if 1200 <= o.timestamp_s - first <= 3600 for s in o.samples]
    power = [value_or_none(s.power_draw_watts) or 0.0 for s in window]
    util = [value_or_none(s.util_gpu_pct) or 0.0 for s in window]
    assert len(power) > 150 and min(util) >= 84
    assert max(power) - min(power) <= 0.05 * max(power)


def test_progress_decides_on_a_job_that_looks_hung() -> None:
    """The capped training logged without memory utilization looks hung from its GPU readings; its log
    written every 5 min keeps it from ever being suspected."""
    obs = _observations(HANG_FIXTURES / "capped_training_no_memutil_1x_h100_30s.csv")
    assert _run(obs, HangConfig(stop=True))
    assert _run(obs, HangConfig(stop=True), progress=[300.0 * k for k in range(37)]) == []


def _gpu(
    t: float,
    i: int = 0,
    *,
    util: Reading[float] = 100.0,
    power: Reading[float] = 70.0,
    mem_mib: float = 70000,
    clock: Reading[float] = 1980.0,
    mem_util: Reading[float] = 0.0,
) -> Sample:
    """One GPU reading; the defaults are a spinning NCCL kernel (NVIDIA/nccl#968, #2079)."""
    return Sample(
        t,
        i,
        util_gpu_pct=util,
        power_draw_watts=power,
        memory_used_bytes=int(mem_mib * MIB),
        sm_clock_mhz=clock,
        util_memory_pct=mem_util,
    )


def _feed(
    det: HangDetector,
    rows: list[list[Sample]],
    *,
    progress: float | None = None,
    signals: tuple[Signal, ...] = (),
    error_at: int | None = None,
) -> list[str]:
    states: list[str] = []
    for k, row in enumerate(rows):
        errors = ("NVML failed",) if k == error_at else ()
        obs = Observation(row[0].timestamp_s, tuple(row), signals, errors)
        states.append(det.observe(obs, last_progress_s=progress, last_user_s=last_user_activity(obs)).state)
    return states


def _spin(minutes: float, start: float = 0.0) -> list[list[Sample]]:
    return [[_gpu(start + k * 30.0)] for k in range(int(minutes * 2) + 1)]


def test_spin_is_suspected_after_the_window_and_stopped_after_the_warning() -> None:
    det = HangDetector(HangConfig(window_min=30, stop=True), warn_s=600)
    states = _feed(det, _spin(45))
    assert states.index("suspected") == 60  # 30 min at 30 s
    assert states.index("stopping") == 80  # and 10 more
    warn_only = _feed(HangDetector(HangConfig(window_min=30), warn_s=600), _spin(45))
    assert "stopping" not in warn_only and warn_only[-1] == "suspected"


_BREAKS: list[tuple[str, Sample]] = [
    ("power moves by more than 5 %", _gpu(1230, power=90.0)),
    ("the SM clock moves", _gpu(1230, clock=1500.0)),
    ("memory used moves by 64 MiB", _gpu(1230, mem_mib=70064)),
    ("memory is busy", _gpu(1230, mem_util=30.0)),
    ("utilization under 95 %", _gpu(1230, util=90.0)),
    ("a power reading failed", _gpu(1230, power=Failed("GPU is lost"))),
    ("a utilization reading failed", _gpu(1230, util=Failed("Unknown Error"))),
]


@pytest.mark.parametrize(("what", "odd"), _BREAKS, ids=[w for w, _ in _BREAKS])
def test_anything_but_a_flat_spin_restarts_the_stretch(what: str, odd: Sample) -> None:
    rows = [*_spin(20), [odd], *_spin(25, start=1260)]
    states = _feed(HangDetector(HangConfig(window_min=30)), rows)
    assert "suspected" not in states, what  # 20 + 25 min, never 30 in one stretch
    assert "suspected" in _feed(HangDetector(HangConfig(window_min=30)), _spin(46))


def test_a_gap_an_error_or_a_missing_gpu_restarts_the_stretch() -> None:
    gap = _spin(20) + _spin(20, start=20 * 60 + 300)
    assert "suspected" not in _feed(HangDetector(HangConfig(window_min=30), gap_s=120), gap)
    two = [[_gpu(k * 30.0, 0), _gpu(k * 30.0, 1)] for k in range(41)]
    one = [[_gpu(1230.0 + k * 30.0, 0)] for k in range(41)]
    assert "suspected" not in _feed(HangDetector(HangConfig(window_min=30)), two + one)
    assert "suspected" not in _feed(HangDetector(HangConfig(window_min=30)), _spin(45), error_at=40)


def test_a_busy_gpu_rules_out_a_hang_an_idle_one_does_not() -> None:
    busy = [[_gpu(k * 30.0, 0), _gpu(k * 30.0, 1, util=80.0, power=300.0 + 50 * (k % 3))] for k in range(80)]
    assert "suspected" not in _feed(HangDetector(HangConfig(window_min=30)), busy)
    idle_rank = [[_gpu(k * 30.0, 0), _gpu(k * 30.0, 1, util=0.0, power=120.0)] for k in range(80)]
    assert "suspected" in _feed(HangDetector(HangConfig(window_min=30)), idle_rank)


def test_progress_and_a_user_push_the_verdict_back() -> None:
    rows = _spin(45)
    assert "suspected" not in _feed(HangDetector(HangConfig(window_min=30)), rows, progress=20 * 60)
    keep = Signal("keepalive", "quiet", "touched", last_active_s=20 * 60)
    states = _feed(HangDetector(HangConfig(window_min=30)), rows, signals=(keep,))
    assert "suspected" not in states  # 25 min since the keep-alive: not yet


def test_last_user_activity_counts_unknown_as_now_and_ignores_the_job_itself() -> None:
    sigs = (
        Signal("gpu_processes", "active", "pid 4 at 100% CPU"),  # a spinning job burns CPU too
        Signal("gpuwise_run", "active", "job alive"),
        Signal("ssh", "quiet", "1 session", last_active_s=50.0),
    )
    assert last_user_activity(Observation(100.0, (), sigs)) == 50.0
    failed = (*sigs, Signal("activity_url", "unknown", "no answer"))
    assert last_user_activity(Observation(100.0, (), failed)) == 100.0


def test_hang_config_rejects_impossible_values() -> None:
    from gpuwise.errors import ConfigError

    bad_values = (
        HangConfig(window_min=0),
        HangConfig(util_pct=0),
        HangConfig(flat_pct=-1),
        HangConfig(window_min=float("nan")),
    )
    for bad in bad_values:
        with pytest.raises(ConfigError):
            bad.validate()


def test_idle_replay_cli_reports_and_stops_for_a_hang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuwise.cli.main import main

    trace = str(HANG_FIXTURES / "nccl_deadlock_8x_h100_30s.csv")
    cfg = tmp_path / "config.toml"
    cfg.write_text('[idle]\nstop_on_hang = true\nwatch_paths = ["/srv/run/logs"]\n', encoding="utf-8")
    assert main(["idle", "replay", trace, "--json", "--config", str(cfg)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stop_at"] == "2026-06-02T02:20:30.007"  # +40 min hang, +30 window, +10 warning
    assert out["observations"] == 381 and out["last_sample"] == "2026-06-02T04:10:00.005"
    (hang,) = out["possible_hangs"]
    assert hang["since"] == "2026-06-02T01:40:00.007" and "no progress is assumed" in hang["reason"]
    cfg.write_text("[idle]\nstop_on_hang = true\n", encoding="utf-8")
    assert main(["idle", "replay", trace, "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "needs watch_paths" in err and "Traceback" not in err


def _restored(det: HangDetector) -> HangDetector:
    """A detector continuing from `det`'s saved clock, through the JSON the state file holds."""
    again = HangDetector(det.config, warn_s=det.warn_s)
    again.restore(json.loads(json.dumps(det.to_json())))
    return again


def test_a_restored_hang_clock_gives_the_verdicts_an_uninterrupted_one_gives() -> None:
    rows = _spin(45)
    whole = _feed(HangDetector(HangConfig(window_min=30, stop=True), warn_s=600), rows)
    first = HangDetector(HangConfig(window_min=30, stop=True), warn_s=600)
    head = _feed(first, rows[:40])  # 20 min into the flat stretch
    assert head + _feed(_restored(first), rows[40:]) == whole


def test_a_restored_hang_clock_about_other_gpus_starts_over() -> None:
    det = HangDetector(HangConfig(window_min=30))
    _feed(det, [[_gpu(k * 30.0, 0), _gpu(k * 30.0, 1)] for k in range(50)])  # 25 min, GPUs 0 and 1
    # an idle GPU more (an idle rank alone would not end a stretch): not the machine it was about
    more = [
        [_gpu(1500.0 + k * 30.0, 0), _gpu(1500.0 + k * 30.0, 1), _gpu(1500.0 + k * 30.0, 2, util=0.0)]
        for k in range(20)
    ]
    assert "suspected" not in _feed(_restored(det), more)
    same = [[_gpu(1500.0 + k * 30.0, i) for i in (0, 1)] for k in range(20)]
    assert "suspected" in _feed(_restored(det), same)


_DAMAGED: list[dict[str, object]] = [
    {"last_ts": "now"},
    {"last_ts": 10.0, "stretches": {"0": {"start_s": 20.0, "power": [70, 70], "mem": [1, 1]}}},
    {"last_ts": 10.0, "stretches": {"0": {"start_s": 5.0, "power": [70], "mem": [1, 1]}}},
    {"last_ts": 10.0, "stretches": {"0": {"start_s": 5.0, "power": [80, 70], "mem": [1, 1]}}},
    {"last_ts": 10.0, "stretches": {"x": {"start_s": 5.0, "power": [70, 70], "mem": [1, 1]}}},
    {"last_ts": 10.0, "machine_since": 5.0},  # a machine stretch without a GPU's
    {
        "last_ts": 10.0,
        "machine_since": 1.0,
        "stretches": {"0": {"start_s": 5.0, "power": [7, 7], "mem": [1, 1]}},
    },
    {"last_ts": 10.0, "known_gpus": [True]},
    {"last_ts": 10.0, "stretches": []},
]


@pytest.mark.parametrize("data", _DAMAGED)
def test_damaged_hang_evidence_is_refused(data: dict[str, object]) -> None:
    """A damaged state file must not date a hang earlier than anyone saw it: the daemon then starts the
    hang clock over (it logs a warning), which only delays a verdict."""
    with pytest.raises(ValueError, match=r"."):
        HangDetector().restore(data)
