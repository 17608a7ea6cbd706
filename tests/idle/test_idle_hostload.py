"""The `host` signal: a download, a build or an upload with no GPU process is a live job.

Before it, a machine whose GPUs sat empty while a model downloaded or flash-attn compiled was stopped after
the 60-minute window, under the job. The counters are fed by a fake reader on a fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from idle_fakes import FakeClock, make_stubs, stub_env

from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.idle.actions import Runner
from gpuwise.idle.daemon import IdleDaemon
from gpuwise.idle.hostload import HostActivity, HostCounters, read_host_counters
from gpuwise.idle.policy import IdleState
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.settings import IdleSettings, load_settings
from gpuwise.idle.signals import gatherers_for

EMPTY = Snapshot(())


@dataclass
class FakeHost:
    """A machine whose processes use `cores` of CPU and whose network moves `net_mib_s`, on `clock`."""

    clock: FakeClock
    cores: float = 0.0
    net_mib_s: float = 0.0
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.clock()

    def __call__(self) -> HostCounters:
        elapsed = self.clock() - self.start
        return HostCounters({7: (self.cores * elapsed, 0.0)}, int(self.net_mib_s * 2**20 * elapsed))


def _host(settings: IdleSettings, fake: FakeHost) -> HostActivity:
    (host,) = [g for g in gatherers_for(settings, Path("/nonexistent")) if g.name == "host"]
    assert isinstance(host, HostActivity)
    host.read = fake
    return host


def test_the_host_signal_is_on_by_default_with_its_thresholds() -> None:
    host = _host(IdleSettings(), FakeHost(FakeClock()))
    assert (host.cpu_pct, host.net_kib_per_s) == (50.0, 1024.0)
    tuned = load_settings({"idle": {"host_cpu_pct": 150, "host_net_kib_per_s": 10}})
    assert (tuned.host_cpu_pct, tuned.host_net_kib_per_s) == (150.0, 10.0)


@pytest.mark.parametrize(
    ("cores", "net", "state", "words"),
    [
        (1.0, 0.0, "active", "processes here at 100% CPU"),
        (0.0, 5.0, "active", "network at 5120 KiB/s"),
        (0.05, 0.01, "quiet", "processes here at 5% CPU, network 10 KiB/s"),
    ],
)
def test_cpu_or_network_makes_the_host_busy(cores: float, net: float, state: str, words: str) -> None:
    clock = FakeClock()
    host = HostActivity(read=FakeHost(clock, cores, net))
    first = host.gather(clock(), EMPTY)
    assert first.state == "quiet" and "first reading" in first.detail
    clock.sleep(30)
    sig = host.gather(clock(), EMPTY)
    assert sig.state == state and words in sig.detail


def test_processes_that_started_since_the_last_reading_count_and_a_reused_pid_is_not_a_negative() -> None:
    clock = FakeClock()
    readings = iter(
        [
            HostCounters({1: (500.0, 10.0)}, None),
            # pid 1 is now another process (created later) with little CPU; pid 2 started 20 s ago
            HostCounters({1: (2.0, clock.now + 5), 2: (25.0, clock.now + 10)}, None),
        ]
    )
    host = HostActivity(read=lambda: next(readings))
    host.gather(clock(), EMPTY)
    clock.sleep(30)
    sig = host.gather(clock(), EMPTY)
    assert sig.state == "active" and "at 90% CPU" in sig.detail


def test_a_reader_that_fails_counts_as_busy() -> None:
    def broken() -> HostCounters:
        raise PermissionError("/proc is not readable")

    sig = HostActivity(read=broken).gather(1.0, EMPTY)
    assert sig.state == "unknown" and "/proc is not readable" in sig.detail


def test_the_real_reader_leaves_out_the_daemon_itself() -> None:
    import os

    counters = read_host_counters()
    assert os.getpid() not in counters.cpu_s and counters.cpu_s  # something else runs here (pid 1 at least)


def _daemon(tmp_path: Path, clock: FakeClock, fake: FakeHost) -> IdleDaemon:
    settings = IdleSettings(action="shutdown")
    make_stubs(tmp_path / "bin", tmp_path / "calls.log")

    class EmptyGpu:
        def read(self) -> Snapshot:
            return Snapshot((Sample(clock(), 0, util_gpu_pct=0.0, memory_used_bytes=1 << 20, processes=()),))

    return IdleDaemon(
        settings,
        EmptyGpu(),
        [_host(settings, fake)],
        tmp_path / "state.json",
        clock=clock,
        sleep=clock.sleep,
        runner=Runner(env=stub_env(tmp_path / "bin"), timeout_s=20),
        endpoints=MetadataEndpoints.all_at("http://127.0.0.1:9", timeout_s=0.2),
        host="gpu-box",
        boot_time=lambda: 1000.0,
    )


@pytest.mark.parametrize(("cores", "net_mib_s"), [(0.0, 20.0), (1.5, 0.0)])
def test_a_download_or_a_build_with_empty_gpus_is_never_stopped(
    tmp_path: Path, cores: float, net_mib_s: float
) -> None:
    """3 h of a model download (20 MiB/s) or a compile (1.5 cores) with the GPU empty and at 0 %."""
    clock = FakeClock()
    d = _daemon(tmp_path, clock, FakeHost(clock, cores, net_mib_s))
    states = set()
    for _ in range(int(3 * 3600 / 30)):
        states.add(d.step().state)
        clock.sleep(30)
    assert IdleState.STOPPING not in states and IdleState.WARNING not in states
    assert not (tmp_path / "calls.log").exists()


def test_the_same_machine_with_nothing_running_is_still_stopped(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, clock, FakeHost(clock, cores=0.02, net_mib_s=0.001))
    for _ in range(int(3 * 3600 / 30)):
        d.step()
        clock.sleep(30)
    assert "shutdown -h now" in (tmp_path / "calls.log").read_text(encoding="utf-8")


def test_the_busy_reason_names_the_busiest_process() -> None:
    """A machine kept up by CPU work should say whose: a runaway process (a spinning kernel) keeps it up as
    surely as a build, and `idle status` is where the user looks."""
    clock = FakeClock()
    readings = iter(
        [
            HostCounters({7: (10.0, 0.0), 8: (5.0, 0.0)}, 0, {7: "cc1plus", 8: "sshd"}),
            HostCounters({7: (40.0, 0.0), 8: (5.5, 0.0)}, 0, {7: "cc1plus", 8: "sshd"}),
        ]
    )
    host = HostActivity(read=lambda: next(readings))
    host.gather(clock(), EMPTY)
    clock.sleep(30)
    sig = host.gather(clock(), EMPTY)
    assert sig.state == "active"
    assert "processes here at 102% CPU (most: cc1plus, pid 7, 100%)" in str(sig.detail)
