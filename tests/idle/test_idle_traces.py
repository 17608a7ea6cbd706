"""Real traces (tests/fixtures/recordings/traces, ground truth in its README) and the constructed traces in
tests/fixtures/idle (manifest.json says what a safe policy must do) replayed with default options."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpuwise.gpu.smi_csv import read_query_csv
from gpuwise.idle.policy import PolicyConfig
from gpuwise.idle.replay import group_samples, replay

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))


def _replay(path: Path, cfg: PolicyConfig | None = None) -> tuple[float | None, float, str]:
    samples = read_query_csv(path)
    r = replay(group_samples(samples), cfg)
    assert r.first_s is not None
    return (None if r.stop_at_s is None else r.stop_at_s - r.first_s), r.first_s, r.reason


def test_landct_desktop_is_not_stopped(trace_fixtures: Path) -> None:
    """README: the job ends at +215 s and the trace 223 s later — far shorter than any safe window."""
    stop, _, reason = _replay(trace_fixtures / "landct_desktop_bursts_1s.csv")
    assert stop is None
    assert "no stop" in reason


def test_landct_display_noise_after_the_job_does_not_reset_the_clock(trace_fixtures: Path) -> None:
    """With a 3-min window the idle clock must run from the job's exit (+215 s) through the display noise
    (bursts to 31 % at ~310 MiB from +342 s), not restart at each burst."""
    cfg = PolicyConfig(window_min=3, held_window_min=3, warn_min=1)
    stop, _, reason = _replay(trace_fixtures / "landct_desktop_bursts_1s.csv", cfg)
    assert stop is not None
    assert 215 + 180 <= stop <= 215 + 180 + 3
    assert "2612 → 311 MiB" in reason  # the job's exit is the last activity


def test_landct_never_stops_during_the_job(trace_fixtures: Path) -> None:
    """Even a 1-min window must not stop before the job's exit at +215 s (memory held, util bursts)."""
    cfg = PolicyConfig(window_min=1, held_window_min=1, warn_min=0)
    stop, _, _ = _replay(trace_fixtures / "landct_desktop_bursts_1s.csv", cfg)
    assert stop is not None and stop >= 215


@pytest.mark.parametrize(
    "name", ["wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv", "wandb_gb10_sweep_cpu_tail_15s.csv"]
)
def test_wandb_gb10_tail_is_not_stopped_before_gpu_work_ends(trace_fixtures: Path, name: str) -> None:
    """README: GPU work ends at +4,770 s; either answer is acceptable afterwards, in either form of the
    trace. Default options keep it (memory is not reported on GB10, so the 120-min window applies and
    the 36-min tail is shorter)."""
    path = trace_fixtures / name
    stop, _, reason = _replay(path)
    assert stop is None
    assert "120 min" in reason
    # an aggressive setting may stop in the tail, but never before the last GPU work
    stop, _, _ = _replay(path, PolicyConfig(window_min=10, held_window_min=10, warn_min=2))
    assert stop is not None and stop >= 4770


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_constructed_trace(name: str) -> None:
    spec = MANIFEST[name]
    stop, _, reason = _replay(FIXTURES / name)
    if spec["expect"] == "never":
        assert stop is None, f"{name}: {spec['description']} was stopped at +{stop} s: {reason}"
    else:
        assert stop is not None, f"{name}: {spec['description']} never stopped: {reason}"
        assert spec["stop_after_s"] <= stop <= spec["stop_before_s"], (name, stop, reason)


def test_constructed_fixtures_are_reproducible() -> None:
    """The committed fixtures are exactly what tests/idle/generate_traces.py writes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import generate_traces
    finally:
        sys.path.pop(0)
    files = generate_traces.build()
    assert set(files) == {p.name for p in FIXTURES.iterdir()}
    for name, text in files.items():
        assert (FIXTURES / name).read_text(encoding="utf-8") == text, name
