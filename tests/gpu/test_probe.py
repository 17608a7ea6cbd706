"""open_probe, the replay probe's clock, and the nvidia-smi subprocess fallback (injected runner)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuwise.errors import GpuError, ReplayError
from gpuwise.gpu.probe import Probe, ReplayProbe, open_probe
from gpuwise.gpu.replay import load_recording
from gpuwise.gpu.sample import Failed
from gpuwise.gpu.smi_csv import format_trace_time
from gpuwise.gpu.smi_probe import RunResult, SmiProbe


class FakeClock:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def test_time_series_is_served_in_real_time_from_its_first_sample(trace_fixtures: Path) -> None:
    clock = FakeClock()
    probe = open_probe(trace_fixtures / "landct_desktop_bursts_1s.csv", clock=clock)
    assert isinstance(probe, Probe)
    first = probe.read().samples[0]
    assert format_trace_time(first.timestamp_s) == "2026-08-01T03:59:40.361"
    clock.now += 215.5
    later = probe.read().samples[0]
    offset = later.timestamp_s - first.timestamp_s
    assert 214.0 <= offset <= 215.5  # the last sample at or before the elapsed time, never after
    assert isinstance(probe, ReplayProbe)
    assert not probe.finished
    clock.now = 1_000_000.0 + probe.duration_s + 0.5  # within one sampling interval of the last sample
    last = probe.read().samples[0]
    assert format_trace_time(last.timestamp_s).startswith("2026-08-01T04:06:58")
    assert probe.finished


def test_a_finished_recording_is_not_served_as_fresh_forever(trace_fixtures: Path) -> None:
    """Issue 10: after the end, the last reading was returned as current for ever, so the idle daemon on a
    replay counted a recording that had stopped as a machine that stayed idle. Now it is missing data."""
    clock = FakeClock()
    probe = open_probe(trace_fixtures / "landct_desktop_bursts_1s.csv", clock=clock)
    assert isinstance(probe, ReplayProbe)
    clock.now += probe.duration_s + 10_000
    snap = probe.read()
    assert snap.samples == ()
    assert snap.errors == ("the recording ended at 2026-08-01T04:06:58.068 (its clock): no newer readings",)
    assert probe.finished


def test_loop_starts_over_and_retimes(trace_fixtures: Path) -> None:
    clock = FakeClock()
    rec = load_recording(trace_fixtures / "landct_desktop_bursts_1s.csv")
    probe = ReplayProbe(rec, clock=clock, loop=True)
    a = probe.read().samples[0]
    assert a.timestamp_s == clock.now  # retimed onto the probe clock while looping
    clock.now += probe.duration_s + 1.5  # past the end by more than one sample interval
    b = probe.read().samples[0]
    assert b.util_gpu_pct == rec.snapshots[0].samples[0].util_gpu_pct == 100.0  # back at the start
    assert rec.snapshots[-1].samples[0].util_gpu_pct != 100.0
    assert not probe.finished
    assert b.timestamp_s > a.timestamp_s


def test_single_snapshot_is_served_as_it_is(smi_fixtures: Path) -> None:
    clock = FakeClock()
    probe = open_probe(smi_fixtures / "xml/2x-rtx-a5000__idle__590.44.01.xml", clock=clock)
    one = probe.read()
    clock.now += 3600
    assert probe.read() == one
    assert len(one.samples) == 2
    probe.close()


def test_kernel_log_alone_serves_an_empty_snapshot(smi_fixtures: Path) -> None:
    probe = open_probe(smi_fixtures / "kernel-log/h100__xid-119-gsp-rpc-timeout.dmesg.log")
    assert probe.read().samples == ()


def test_replay_of_a_non_recording_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n")
    with pytest.raises(ReplayError):
        open_probe(path)


def _runner(stdout: str, returncode: int = 0, stderr: str = "") -> object:
    calls: list[Sequence[str]] = []

    def run(argv: Sequence[str], timeout_s: float) -> RunResult:
        calls.append(list(argv))
        assert timeout_s > 0
        return RunResult(returncode, stdout, stderr)

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_smi_probe_parses_xml_and_stamps_its_own_clock(smi_fixtures: Path) -> None:
    xml = (smi_fixtures / "xml/tesla-t4__2-processes__515.105.01.xml").read_text()
    run = _runner(xml)
    probe = SmiProbe(runner=run, clock=lambda: 42.0)  # type: ignore[arg-type]
    snap = probe.read()
    assert run.calls == [["nvidia-smi", "-q", "-x"]]  # type: ignore[attr-defined]
    (s,) = snap.samples
    assert s.name == "Tesla T4"
    assert s.timestamp_s == 42.0
    assert snap.driver_version == "515.105.01"


def test_smi_probe_turns_failure_text_into_errors(smi_fixtures: Path) -> None:
    text = (smi_fixtures / "errors/device-handle-unknown-error.stdout.txt").read_text()
    snap = SmiProbe(runner=_runner(text, returncode=15), clock=lambda: 1.0).read()  # type: ignore[arg-type]
    assert snap.errors and "device handle" in snap.errors[0]
    (lost,) = snap.samples
    assert lost.lost and isinstance(lost.memory_used_bytes, Failed)


def test_smi_probe_timeout_is_a_gpu_error() -> None:
    def hang(argv: Sequence[str], timeout_s: float) -> RunResult:
        raise subprocess.TimeoutExpired(list(argv), timeout_s)

    with pytest.raises(GpuError, match="did not answer"):
        SmiProbe(runner=hang, timeout_s=0.5).read()


def test_live_probe_without_any_driver_says_how_to_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On a machine without NVIDIA software (as here and in CI), opening a live probe is a GpuError that
    says so and how to fix it — not a traceback from ctypes."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi to fall back on
    try:
        probe = open_probe()
    except GpuError as exc:
        text = exc.render()
        assert "No NVIDIA driver found" in text or "NVML" in text
        assert "To fix:" in text
    else:  # a real GPU machine: the probe works
        probe.read()
        probe.close()
