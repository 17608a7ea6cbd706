"""The idle daemon on replayed recordings with a fake clock, recording stub programs on PATH and fake
cloud metadata / webhook servers on 127.0.0.1 (never the real link-local addresses, never a real cloud)."""

from __future__ import annotations

import itertools
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from idle_fakes import FakeClock, make_stubs, metadata_server, stub_env, webhook_receiver

from gpuwise.errors import GpuError
from gpuwise.gpu.probe import ReplayProbe
from gpuwise.gpu.replay import load_recording
from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.idle.actions import Runner
from gpuwise.idle.daemon import IdleDaemon
from gpuwise.idle.policy import IdleState, PolicyConfig
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.state import compute_savings, load_state

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle"
UNREACHABLE = MetadataEndpoints.all_at("http://127.0.0.1:9", timeout_s=0.2)  # discard port: refused


class EmptyGpu:
    """A probe of one idle, empty GPU (timestamps from the clock)."""

    def __init__(self, clock: FakeClock, util: float = 0.0) -> None:
        self.clock, self.util = clock, util

    def read(self) -> Snapshot:
        return Snapshot((Sample(self.clock(), 0, util_gpu_pct=self.util, memory_used_bytes=1 << 20),))


def _daemon(
    tmp_path: Path,
    probe: Any,
    clock: FakeClock,
    *,
    settings: IdleSettings | None = None,
    endpoints: MetadataEndpoints = UNREACHABLE,
    dry_run: bool = False,
    fail: tuple[str, ...] = (),
    boot_time: float | None = 1_000.0,
) -> IdleDaemon:
    make_stubs(tmp_path / "bin", tmp_path / "calls.log", fail=fail)
    return IdleDaemon(
        settings or IdleSettings(action="shutdown"),
        probe,
        [],
        tmp_path / "state" / "state.json",
        dry_run=dry_run,
        clock=clock,
        sleep=clock.sleep,
        runner=Runner(env=stub_env(tmp_path / "bin"), timeout_s=20),
        endpoints=endpoints,
        host="gpu-box",
        boot_time=lambda: boot_time,
    )


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _replay_probe(name: str, clock: FakeClock) -> ReplayProbe:
    return ReplayProbe(load_recording(FIXTURES / name), clock=clock)


def test_job_then_idle_is_stopped_once_with_warning_first(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, _replay_probe("job_then_idle_3h_h100_30s.csv", clock), clock)
    start = clock.now
    d.run(max_steps=int(5 * 3600 / 30))
    calls = _calls(tmp_path)
    walls = [c for c in calls if c.startswith("wall")]
    stops = [c for c in calls if c.startswith("shutdown")]
    # the fake machine stays up, so the daemon tries again every warn_min (10 min) after the first stop
    assert stops and set(stops) == {"shutdown -h now"}
    assert "will be stopped in 10 min" in walls[0]
    assert "touch" in walls[0]  # how to keep the machine
    data = load_state(tmp_path / "state" / "state.json")
    assert data is not None
    ok = [s for s in data["stops"] if s["ok"]]
    assert len(ok) == len(stops)
    assert all(b["at"] - a["at"] == pytest.approx(600, abs=31) for a, b in itertools.pairwise(ok))
    stop = ok[0]
    # the job exits at +2 h; the stop comes 60 min later
    assert stop["at"] - start == pytest.approx(3 * 3600, abs=60)
    assert "window 60 min reached" in stop["reason"]


def test_eval_phases_are_never_stopped(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, _replay_probe("eval_phases_h100_30s.csv", clock), clock)
    d.run(max_steps=int(7 * 3600 / 30))
    assert not [c for c in _calls(tmp_path) if c.startswith("shutdown")]
    assert not [c for c in _calls(tmp_path) if c.startswith("wall")]


def test_dry_run_runs_nothing_and_records_the_would_be_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, EmptyGpu(clock), clock, dry_run=True)
    with caplog.at_level(logging.INFO, logger="gpuwise.idle"):
        d.run(max_steps=130)
    assert _calls(tmp_path) == []
    assert "dry run: would stop now with: shutdown -h now" in caplog.text
    data = load_state(tmp_path / "state" / "state.json")
    assert data is not None and data["stops"][0]["dry_run"] is True
    assert compute_savings(data, 25.0).stops == 0  # a dry run saves nothing


class FlakyProbe:
    """NVML fails on every `every`-th read (driver reload, Xid) — each failure counts as busy."""

    def __init__(self, clock: FakeClock, every: int) -> None:
        self.inner, self.every, self.n = EmptyGpu(clock), every, 0

    def read(self) -> Snapshot:
        self.n += 1
        if self.n % self.every == 0:
            raise GpuError("NVML_ERROR_UNKNOWN: nvmlDeviceGetUtilizationRates")
        return self.inner.read()


def test_nvml_errors_count_as_busy_and_do_not_kill_the_daemon(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, FlakyProbe(clock, every=100), clock)  # fails every 50 min
    states = []
    for _ in range(400):  # 200 min
        states.append(d.step().state)
        clock.sleep(30)
    assert IdleState.STOPPING not in states
    assert IdleState.IDLE_CANDIDATE in states  # it did observe between the errors
    assert not [c for c in _calls(tmp_path) if c.startswith("shutdown")]


def test_restart_resumes_from_evidence_and_never_shortens_the_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.now
    d = _daemon(tmp_path, EmptyGpu(clock), clock)
    d.run(max_steps=60)  # 30 min idle
    clock.sleep(30)
    # restarted within max_gap: the 30 idle minutes are kept, the stop is due at +60 min as before
    d2 = _daemon(tmp_path, EmptyGpu(clock), clock)
    assert d2.step().idle_s == pytest.approx(30 * 60, abs=31)
    d2.run(max_steps=70)
    stops = [s for s in load_state(tmp_path / "state" / "state.json")["stops"] if s["ok"]]  # type: ignore[index]
    assert stops and stops[0]["at"] - start == pytest.approx(3600, abs=31)


def test_restart_after_a_long_absence_starts_the_clock_over(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, EmptyGpu(clock), clock)
    d.run(max_steps=100)  # 50 min idle
    clock.sleep(3 * 3600)  # the daemon was down 3 h (evidence from that time is missing)
    d2 = _daemon(tmp_path, EmptyGpu(clock), clock)
    first = d2.step()
    assert first.state == IdleState.BUSY and "no data for" in first.reason
    assert compute_savings(load_state(tmp_path / "state" / "state.json"), 10.0).stops == 0


def test_corrupt_state_file_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "state" / "state.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    clock = FakeClock()
    d = _daemon(tmp_path, EmptyGpu(clock), clock)
    assert d.step().state == IdleState.BUSY


def test_failing_hook_is_logged_and_does_not_block_by_default(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = IdleSettings(action="shutdown", pre_stop_hook="echo syncing; exit 3", hook_timeout_s=5)
    d = _daemon(tmp_path, EmptyGpu(clock), clock, settings=settings)
    d.run(max_steps=125)
    assert "shutdown -h now" in _calls(tmp_path)


def test_blocking_hook_postpones_the_stop(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.now
    marker = tmp_path / "hook-ran"
    hook = f'if [ -e "{marker}" ]; then exit 0; fi; touch "{marker}"; exit 1'  # fails once, then works
    settings = IdleSettings(action="shutdown", pre_stop_hook=hook, hook_timeout_s=5, hook_blocks=True)
    d = _daemon(tmp_path, EmptyGpu(clock), clock, settings=settings)
    d.run(max_steps=160)
    assert _calls(tmp_path).count("shutdown -h now") == 1
    stop = next(s for s in load_state(tmp_path / "state" / "state.json")["stops"] if s["ok"])  # type: ignore[index]
    assert stop["at"] - start == pytest.approx(3600 + 600, abs=31)  # retried after warn_min


def test_hook_timeout_is_enforced(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = IdleSettings(action="shutdown", pre_stop_hook="sleep 30", hook_timeout_s=0.5, hook_blocks=True)
    d = _daemon(tmp_path, EmptyGpu(clock), clock, settings=settings)
    d.run(max_steps=121)
    assert "shutdown -h now" not in _calls(tmp_path)


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("aws", "aws ec2 stop-instances --instance-ids i-0abc123def4567890 --region us-east-2"),
        ("gcp", "gcloud compute instances stop train-a100 --zone us-central1-a --project my-proj --quiet"),
        ("azure", "az vm deallocate --name vm-gpu --resource-group rg-ml --subscription sub-1 --no-wait"),
        (
            "alibaba",
            "aliyun ecs StopInstance --InstanceId i-bp67acfmxazb4ph1 --StoppedMode StopCharging"
            " --region cn-hangzhou",
        ),
    ],
)
def test_auto_action_uses_the_providers_own_stop(tmp_path: Path, provider: str, expected: str) -> None:
    clock = FakeClock()
    with metadata_server(provider) as meta:
        ep = MetadataEndpoints.all_at(meta.base, timeout_s=2)
        d = _daemon(tmp_path, EmptyGpu(clock), clock, settings=IdleSettings(action="auto"), endpoints=ep)
        d.run(max_steps=121)
    assert expected in _calls(tmp_path)
    assert "shutdown -h now" not in _calls(tmp_path)
    if provider == "aws":  # IMDSv2: token first
        assert meta.requests[0][:2] == ("PUT", "/latest/api/token")


def test_auto_falls_back_to_shutdown_when_the_cli_fails(tmp_path: Path) -> None:
    clock = FakeClock()
    with metadata_server("aws") as meta:
        ep = MetadataEndpoints.all_at(meta.base, timeout_s=2)
        d = _daemon(
            tmp_path,
            EmptyGpu(clock),
            clock,
            settings=IdleSettings(action="auto"),
            endpoints=ep,
            fail=("aws",),
        )
        d.run(max_steps=121)
    calls = [c for c in _calls(tmp_path) if not c.startswith("wall")]
    assert calls[0].startswith("aws ec2 stop-instances") and calls[1] == "shutdown -h now"


def test_named_provider_without_metadata_fails_and_retries(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, EmptyGpu(clock), clock, settings=IdleSettings(action="gcp"))
    d.run(max_steps=121 + 20 + 1)
    data = load_state(tmp_path / "state" / "state.json")
    assert data is not None
    failed = [s for s in data["stops"] if not s["ok"]]
    assert len(failed) == 2  # at +60 min and again after warn_min
    assert not [c for c in _calls(tmp_path) if not c.startswith("wall")]


def test_no_metadata_means_shutdown(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, EmptyGpu(clock), clock, settings=IdleSettings(action="auto"))
    d.run(max_steps=121)
    assert "shutdown -h now" in _calls(tmp_path)


def test_custom_command(tmp_path: Path) -> None:
    clock = FakeClock()
    out = tmp_path / "custom.txt"
    settings = IdleSettings(action="command", command=f'echo "stopped $((1+1))" > "{out}"')
    d = _daemon(tmp_path, EmptyGpu(clock), clock, settings=settings)
    d.run(max_steps=121)
    assert out.read_text(encoding="utf-8").strip() == "stopped 2"
    # a user's command line may hold credentials: named, never stored or logged
    assert "echo" not in (tmp_path / "state" / "state.json").read_text(encoding="utf-8")


def test_webhook_events_and_no_secret_in_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    with webhook_receiver() as (base, got):
        url = base + "/hooks/T000/SECRET-TOKEN"
        settings = IdleSettings(action="shutdown", webhook=url)
        probe = EmptyGpu(clock)
        d = _daemon(tmp_path, probe, clock, settings=settings)
        with caplog.at_level(logging.DEBUG, logger="gpuwise.idle"):
            d.run(max_steps=105)  # into the warning
            probe.util = 90.0
            d.run(max_steps=2)  # activity cancels the stop
            probe.util = 0.0
            d.run(max_steps=125)
    events = [g["event"] for g in got]
    assert events[:2] == ["warning", "cancelled"]
    assert events[-2:] == ["stopping", "stopped"]
    assert all(g["host"] == "gpu-box" and g["reason"] for g in got)
    assert "SECRET-TOKEN" not in caplog.text
    walls = [c for c in _calls(tmp_path) if c.startswith("wall")]
    assert any("stop cancelled" in w for w in walls)


def test_savings_count_only_stops_the_machine_came_back_from(tmp_path: Path) -> None:
    data = {
        "stops": [
            {"at": 1000.0, "ok": True, "dry_run": False},
            {"at": 50_000.0, "ok": False, "dry_run": False},
            {"at": 90_000.0, "ok": True, "dry_run": True},
            {"at": 100_000.0, "ok": True, "dry_run": False},
        ],
        "boots": [
            {"daemon_start": 30.0, "system_boot": 0.0},
            {"daemon_start": 8260.0, "system_boot": 1000.0 + 7200.0},
            {"daemon_start": 150_000.0, "system_boot": 1000.0 + 7200.0},  # daemon restart, same boot
            {"daemon_start": 200_000.0 + 59, "system_boot": 200_000.0 - 1},
            {"daemon_start": 210_000.0, "system_boot": None},
        ],
    }
    s = compute_savings(data, 25.0)
    assert s.stops == 2 and s.counted_stops == 2
    assert s.hours_off == pytest.approx(2 + (99_999.0 / 3600))
    assert s.saved_usd == pytest.approx(round(25.0 * s.hours_off, 2))
    one = compute_savings({"stops": data["stops"][:1], "boots": data["boots"][:1]}, 25.0)
    assert one.counted_stops == 0 and one.pending_since_s == 1000.0 and one.saved_usd == 0
    assert compute_savings(data, None).saved_usd is None


def test_policy_config_validation_reaches_settings() -> None:
    with pytest.raises(Exception, match="interval_s"):
        IdleSettings(interval_s=100, policy=replace(PolicyConfig(), max_gap_s=120)).validate()


def test_live_runs_write_the_monitor_history(tmp_path: Path) -> None:
    from gpuwise.monitor.history import HistoryStore

    clock = FakeClock()
    store = HistoryStore(tmp_path / "history.sqlite")
    d = _daemon(tmp_path, EmptyGpu(clock), clock)
    d.history = store
    d.run(max_steps=122)
    rows = store._db.execute("SELECT COUNT(*) FROM monitor_samples").fetchone()[0]
    events = [r[0] for r in store._db.execute("SELECT event_id FROM monitor_events ORDER BY ts")]
    store.close()
    assert rows == 122
    assert events == ["idle.warning", "idle.stopped"]


def test_a_stop_call_that_did_not_take_the_machine_down_saves_nothing(tmp_path: Path) -> None:
    """The stop call returned 0 but the machine never rebooted: a daemon restart is not 'hours off'."""
    clock = FakeClock()
    _daemon(tmp_path, EmptyGpu(clock), clock).run(max_steps=121)
    state_file = tmp_path / "state" / "state.json"
    stop_at = next(s["at"] for s in load_state(state_file)["stops"] if s["ok"])  # type: ignore[index]
    clock.sleep(4 * 3600)
    _daemon(tmp_path, EmptyGpu(clock), clock).step()  # restarted, same boot
    assert compute_savings(load_state(state_file), 25.0).counted_stops == 0
    clock.sleep(600)
    _daemon(tmp_path, EmptyGpu(clock), clock, boot_time=stop_at + 3 * 3600).step()  # really rebooted
    s = compute_savings(load_state(state_file), 25.0)
    assert s.counted_stops == 1 and s.hours_off == pytest.approx(3.0) and s.saved_usd == 75.0


def test_a_probe_that_cannot_open_is_retried_and_counts_as_busy(tmp_path: Path) -> None:
    from gpuwise.idle.daemon import RetryingProbe

    clock = FakeClock()
    attempts = []

    def opener() -> EmptyGpu:
        attempts.append(clock.now)
        if len(attempts) < 5:
            raise GpuError("Failed to initialize NVML: Driver/library version mismatch")
        return EmptyGpu(clock)

    d = _daemon(tmp_path, RetryingProbe(opener), clock)
    decisions = []
    for _ in range(6):
        decisions.append(d.step())
        clock.sleep(30)
    assert [x.state for x in decisions[:4]] == [IdleState.BUSY] * 4 and len(attempts) == 5
    assert "version mismatch" in decisions[0].reason
    assert decisions[5].state == IdleState.IDLE_CANDIDATE


def test_a_replay_that_ended_is_not_an_idle_machine(tmp_path: Path) -> None:
    """Issue 10: the daemon on a 20-min recording of an idle GPU kept being served its last reading after
    the recording ended, as if fresh, and stopped the machine an hour later. No data counts as busy."""
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB]"]
    lines += [f"2026/05/04 21:{m // 2:02d}:{30 * (m % 2):02d}.000, 0, 0 %, 1 MiB" for m in range(40)]
    trace = tmp_path / "short.csv"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    clock = FakeClock()
    d = _daemon(tmp_path, ReplayProbe(load_recording(trace), clock=clock), clock)
    d.run(max_steps=int(3 * 3600 / 30))
    assert not [c for c in _calls(tmp_path) if c.startswith(("shutdown", "wall"))]
    assert d.policy.last_decision is not None
    assert "the recording ended at 2026-05-04T21:19:30" in d.policy.last_decision.reason
