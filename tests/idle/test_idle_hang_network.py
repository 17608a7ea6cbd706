"""The hang detector and the network: data moving (the `host` signal) is progress, host CPU is not.

Rank 0 uploading a checkpoint for longer than the hang window while the other ranks spin flat in a barrier
looked like a possible hang, and with stop_on_hang the machine was stopped under the live job. A deadlocked
collective moves no data, so it is still found once the network goes quiet."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from idle_fakes import FakeClock, make_stubs, stub_env

from gpuwise.gpu.probe import ReplayProbe
from gpuwise.gpu.replay import load_recording
from gpuwise.gpu.sample import Snapshot
from gpuwise.gpu.smi_csv import read_query_csv
from gpuwise.idle.actions import Runner
from gpuwise.idle.daemon import IdleDaemon
from gpuwise.idle.hang import HangConfig, HangDetector
from gpuwise.idle.hostload import HostActivity, HostCounters
from gpuwise.idle.policy import Signal
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.replay import group_samples
from gpuwise.idle.settings import IdleSettings

DEADLOCK = Path(__file__).resolve().parent.parent / "fixtures" / "idle_hang" / "nccl_deadlock_8x_h100_30s.csv"
HANG_SINCE_S = 2400  # the fixture's manifest: the GPUs spin flat from +40 min
UPLOAD = Signal("host", "active", "network at 51200 KiB/s", moves_data=True)
CPU_ONLY = Signal("host", "active", "processes here at 800% CPU")


def _verdicts(signal_until_s: float, signal: Signal) -> list[tuple[float, str]]:
    """(offset, state) of every verdict that is not "none", with `signal` in each observation before
    `signal_until_s` (offset from the trace's start)."""
    det = HangDetector(HangConfig(stop=True), gap_s=120.0)
    observations = group_samples(read_query_csv(DEADLOCK))
    first = observations[0].timestamp_s
    out: list[tuple[float, str]] = []
    for obs in observations:
        t = obs.timestamp_s - first
        with_signal = dataclasses.replace(obs, signals=(signal,)) if t < signal_until_s else obs
        v = det.observe(with_signal, last_progress_s=None)
        if v.state != "none":
            out.append((t, v.state))
    return out


def test_an_upload_longer_than_the_window_is_not_a_hang() -> None:
    quiet = _verdicts(0, UPLOAD)
    assert quiet and quiet[0][0] >= HANG_SINCE_S + 30 * 60  # the deadlock alone: flagged after the window
    upload_ends = HANG_SINCE_S + 50 * 60  # an upload running 50 min into the flat stretch
    got = _verdicts(upload_ends, UPLOAD)
    assert got, "the deadlock must still be found once the network is quiet"
    assert got[0][0] >= upload_ends + 30 * 60  # the stretch starts over when the data stops moving


def test_host_cpu_alone_is_not_progress() -> None:
    """A hung job's own threads spin on the CPU: that must not hide the hang."""
    assert _verdicts(10**9, CPU_ONLY) == _verdicts(0, CPU_ONLY)


def test_the_host_signal_says_when_the_network_moved_data() -> None:
    busy_core = {7: (60.0, 0.0)}  # pid 7: 60 CPU seconds in the last 30 s
    readings = iter([HostCounters({7: (0.0, 0.0)}, 0), HostCounters({7: (0.0, 0.0)}, 60 * 2**20)])
    readings = iter([*readings, HostCounters(busy_core, 60 * 2**20)])
    host = HostActivity(read=lambda: next(readings))
    host.gather(0.0, Snapshot(()))
    moving = host.gather(30.0, Snapshot(()))  # 2 MiB/s
    cpu = host.gather(60.0, Snapshot(()))  # a busy core, the network still
    assert (moving.state, moving.moves_data) == ("active", True)
    assert (cpu.state, cpu.moves_data) == ("active", False)


def test_the_daemon_does_not_stop_a_job_whose_upload_outlasts_the_window(tmp_path: Path) -> None:
    """The deadlock trace's flat GPUs, an old log, stop_on_hang on, and 5 MiB/s leaving the machine."""
    clock = FakeClock()
    logs = tmp_path / "logs"
    logs.mkdir()
    os.utime(logs, (clock.now - 3600, clock.now - 3600))
    make_stubs(tmp_path / "bin", tmp_path / "calls.log")
    uploading = HostActivity(read=lambda: HostCounters({}, int(5 * 2**20 * clock.now)))
    settings = IdleSettings(action="shutdown", watch_paths=(str(logs),), hang=HangConfig(stop=True))
    d = IdleDaemon(
        settings,
        ReplayProbe(load_recording(DEADLOCK), clock=clock, retime=True),
        [uploading],
        tmp_path / "state" / "state.json",
        clock=clock,
        sleep=clock.sleep,
        runner=Runner(env=stub_env(tmp_path / "bin"), timeout_s=20),
        endpoints=MetadataEndpoints.all_at("http://127.0.0.1:9", timeout_s=0.2),
        boot_time=lambda: 1_000.0,
    )
    d.run(max_steps=int(150 * 60 / 30))
    calls = (tmp_path / "calls.log").read_text(encoding="utf-8") if (tmp_path / "calls.log").exists() else ""
    assert "shutdown" not in calls and "possible hang" not in calls
