"""Hang detection and activity checks in the daemon and the settings: the constructed NCCL deadlock
replayed with a fake clock, stub programs on PATH and a webhook receiver on 127.0.0.1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from idle_fakes import FakeClock, make_stubs, stub_env, webhook_receiver

from gpuwise.errors import ConfigError
from gpuwise.gpu.probe import ReplayProbe
from gpuwise.gpu.replay import load_recording
from gpuwise.idle.actions import Runner
from gpuwise.idle.daemon import IdleDaemon
from gpuwise.idle.hang import HangConfig
from gpuwise.idle.progress import WatchedPaths
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.settings import IdleSettings, load_settings
from gpuwise.idle.state import load_state

HANG = Path(__file__).resolve().parent.parent / "fixtures" / "idle_hang" / "nccl_deadlock_8x_h100_30s.csv"
UNREACHABLE = MetadataEndpoints.all_at("http://127.0.0.1:9", timeout_s=0.2)


def _daemon(tmp_path: Path, clock: FakeClock, settings: IdleSettings, **kw: Any) -> IdleDaemon:
    make_stubs(tmp_path / "bin", tmp_path / "calls.log")
    probe = ReplayProbe(load_recording(HANG), clock=clock, retime=True)
    return IdleDaemon(
        settings,
        probe,
        [],
        tmp_path / "state" / "state.json",
        clock=clock,
        sleep=clock.sleep,
        runner=Runner(env=stub_env(tmp_path / "bin"), timeout_s=20),
        endpoints=UNREACHABLE,
        host="gpu-box",
        boot_time=lambda: 1_000.0,
        **kw,
    )


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _old_log(tmp_path: Path, clock: FakeClock) -> Path:
    """A job's log directory whose one file was last written an hour before the replay starts."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "train.log").write_text("step 1000\n", encoding="utf-8")
    for p in (logs / "train.log", logs):
        os.utime(p, (clock.now - 3600, clock.now - 3600))
    return logs


@pytest.mark.parametrize("stop", [True, False])
def test_deadlock_is_warned_then_stopped_only_with_stop_on_hang(tmp_path: Path, stop: bool) -> None:
    clock = FakeClock()
    start = clock.now
    logs = _old_log(tmp_path, clock)
    with webhook_receiver() as (url, got):
        settings = IdleSettings(
            action="shutdown", webhook=url, watch_paths=(str(logs),), hang=HangConfig(stop=stop)
        )
        d = _daemon(tmp_path, clock, settings)
        d.run(max_steps=int(150 * 60 / 30))
    events = [g["event"] for g in got]
    walls = [c for c in _calls(tmp_path) if c.startswith("wall")]
    assert events[0] == "hang_suspected" and "possible hang: 7 GPUs" in got[0]["reason"]
    assert got[0]["stop_on_hang"] is stop
    assert "possible hang" in walls[0]
    shutdowns = [c for c in _calls(tmp_path) if c.startswith("shutdown")]
    if not stop:
        assert shutdowns == [] and "stopping" not in events
        assert "not stopping" in got[0]["reason"]
        return
    assert shutdowns and set(shutdowns) == {"shutdown -h now"}  # retried every 10 min: nothing goes down here
    state = load_state(d.state_file)
    assert state is not None
    record = state["stops"][0]  # then retried every 10 min: nothing really goes down here
    # the hang began at +40 min: suspected after 30 more, stopped after the 10-min warning
    assert 80 * 60 <= record["at"] - start <= 81 * 60
    assert record["reason"].startswith("stop: possible hang")


def test_a_growing_log_keeps_the_spinning_job(tmp_path: Path) -> None:
    clock = FakeClock()
    logs = _old_log(tmp_path, clock)
    settings = IdleSettings(action="shutdown", watch_paths=(str(logs),), hang=HangConfig(stop=True))
    d = _daemon(tmp_path, clock, settings)
    for k in range(int(150 * 60 / 30)):
        d.step()
        clock.sleep(30)
        if k % 20 == 0:  # the job writes a line every 10 min
            with (logs / "train.log").open("a", encoding="utf-8") as f:
                f.write("step\n")
            os.utime(logs / "train.log", (clock.now, clock.now))
    assert not any(c.startswith(("shutdown", "wall")) for c in _calls(tmp_path))


def test_without_watch_paths_there_is_no_hang_detection(tmp_path: Path) -> None:
    clock = FakeClock()
    d = _daemon(tmp_path, clock, IdleSettings(action="shutdown"))
    assert d.hang is None
    d.run(max_steps=int(150 * 60 / 30))
    assert _calls(tmp_path) == []


def test_watched_paths_report_their_latest_change(tmp_path: Path) -> None:
    now = 2_000_000_000.0
    ckpt = tmp_path / "ckpt"
    nothing = WatchedPaths((str(ckpt),))
    assert nothing.last_change(now) == now  # nothing there (yet): no evidence, which counts as progress
    assert nothing.problem is not None and "no watched path exists" in nothing.problem
    ckpt.mkdir()
    (ckpt / "step-100.pt").write_bytes(b"x" * 10)
    for p in (ckpt / "step-100.pt", ckpt):
        os.utime(p, (now - 900, now - 900))
    watch = WatchedPaths((str(ckpt), str(tmp_path / "*.log")))
    assert watch.last_change(now) == now - 900
    assert watch.last_change(now + 30) == now - 900  # nothing changed since
    (tmp_path / "run.log").write_text("a", encoding="utf-8")
    os.utime(tmp_path / "run.log", (now - 60, now - 60))
    assert watch.last_change(now + 10) == now + 10  # a new file: the set changed at this poll
    (ckpt / "step-100.pt").write_bytes(b"x" * 20)  # rewritten, its old mtime put back (rsync -t)
    os.utime(ckpt / "step-100.pt", (now - 900, now - 900))
    assert watch.last_change(now + 40) == now + 40


def test_a_mistyped_watch_path_never_stops_a_job_that_runs_flat(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`stop_on_hang` with a watch path that matches nothing (a typo): "no progress" read from no files
    stopped the constructed flat, fully busy job 80 minutes in. It is said once in the log instead."""
    clock = FakeClock()
    _old_log(tmp_path, clock)
    typo = str(tmp_path / "lgos")
    settings = IdleSettings(
        action="shutdown", watch_paths=(typo, typo + "/*.log"), hang=HangConfig(stop=True)
    )
    d = _daemon(tmp_path, clock, settings)
    with caplog.at_level("WARNING", logger="gpuwise.idle"):
        d.run(max_steps=int(150 * 60 / 30))
    assert _calls(tmp_path) == []
    said = [r.getMessage() for r in caplog.records if "cannot see the job's progress" in r.getMessage()]
    assert len(said) == 1 and "no watched path exists" in said[0] and typo in said[0]


def test_an_unreadable_watched_path_counts_as_progress(tmp_path: Path) -> None:
    watch = WatchedPaths((str(tmp_path / ("x" * 300)),))  # a name no file system takes
    assert watch.last_change(5_000_000_000.0) == 5_000_000_000.0
    assert watch.problem is not None and "cannot read a watched path" in watch.problem


def test_settings_read_the_new_keys() -> None:
    s = load_settings(
        {
            "idle": {
                "activity_command": "pgrep -f train.py",
                "activity_url": "http://127.0.0.1:8000/busy",
                "activity_timeout_s": 3,
                "watch_paths": ["~/run/logs", "/ckpt/*.pt"],
                "hang_window_min": 45,
                "hang_util_pct": 98,
                "hang_flat_pct": 3,
                "stop_on_hang": True,
            }
        }
    )
    assert s.activity_command == "pgrep -f train.py" and s.activity_timeout_s == 3
    assert s.watch_paths == ("~/run/logs", "/ckpt/*.pt")
    assert s.hang == HangConfig(window_min=45, util_pct=98, flat_pct=3, stop=True)
    assert load_settings({}).hang == HangConfig()


@pytest.mark.parametrize(
    ("idle", "words"),
    [
        ({"stop_on_hang": True}, "needs watch_paths"),
        ({"activity_command": "check 'unclosed"}, "cannot be split"),
        ({"activity_command": "  "}, "empty"),
        ({"activity_url": "localhost:8000/busy"}, "http:// or https://"),
        ({"activity_timeout_s": 0}, "activity_timeout_s"),
        ({"hang_window_min": -5}, "hang_window_min"),
        ({"hang_util_pct": 120}, "hang_util_pct"),
        ({"stop_on_hang": "yes please"}, "stop_on_hang"),
    ],
)
def test_bad_values_are_bad_input(idle: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({"idle": idle})
    assert words in str(err.value) or words in (err.value.why or "")


def test_the_daemon_on_this_machine_runs_the_users_checks(tmp_path: Path) -> None:
    settings = IdleSettings(activity_command="true", activity_url="http://127.0.0.1:9/x")
    d = IdleDaemon.on_this_machine(settings, probe=None, data_dir=tmp_path)
    names = [g.name for g in d.gatherers]
    assert names[-2:] == ["activity_command", "activity_url"]


@pytest.mark.skipif(os.geteuid() != 0, reason="os.chown to another group needs root")
def test_an_activity_command_in_a_file_others_can_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """activity_command runs a program, like the stop command and the hook: a config file that someone
    else could have changed is refused."""
    from gpuwise.config import INSECURE_ENV, load_config

    monkeypatch.delenv(INSECURE_ENV, raising=False)
    folder = tmp_path / "cfg"
    folder.mkdir(mode=0o700)
    path = folder / "config.toml"
    path.write_text('[idle]\nactivity_command = "pgrep -f train.py"\n', encoding="utf-8")
    path.chmod(0o666)
    os.chown(path, -1, 54321)  # a group that is not the owner's own
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "idle.activity_command" in caught.value.render()
    path.chmod(0o600)
    assert load_config(path).sections["idle"]["activity_command"] == "pgrep -f train.py"


def test_dry_run_logs_the_hang_stop_once_and_stops_nothing(tmp_path: Path) -> None:
    clock = FakeClock()
    logs = _old_log(tmp_path, clock)
    with webhook_receiver() as (url, got):
        settings = IdleSettings(
            action="shutdown", webhook=url, watch_paths=(str(logs),), hang=HangConfig(stop=True)
        )
        d = _daemon(tmp_path, clock, settings, dry_run=True)
        d.run(max_steps=int(100 * 60 / 30))
    events = [g["event"] for g in got]
    assert events == ["hang_suspected", "stopping"]  # the clock starts over after the pretend stop
    assert not any(c.startswith("shutdown") for c in _calls(tmp_path))


def _stop_at(
    tmp_path: Path, restart_at_min: float | None, *, down_s: float = 30.0, old_file: bool = False
) -> float:
    """Minutes from the replay's start to the daemon's first stop for the NCCL deadlock (it begins at
    +40 min), with the daemon restarted at `restart_at_min` after `down_s` seconds down (the GPUs, i.e.
    the recording, go on meanwhile). `old_file`: the restarted daemon finds a state file from before the
    hang clock was saved."""
    tmp_path.mkdir()
    clock = FakeClock()
    start = clock.now
    logs = _old_log(tmp_path, clock)
    settings = IdleSettings(action="shutdown", watch_paths=(str(logs),), hang=HangConfig(stop=True))
    d = _daemon(tmp_path, clock, settings)
    steps = int(150 * 60 / 30)
    if restart_at_min is not None:
        first = int(restart_at_min * 2)
        d.run(max_steps=first)
        steps -= first
        clock.sleep(down_s)
        if old_file:
            data = json.loads(d.state_file.read_text(encoding="utf-8"))
            del data["hang"]
            d.state_file.write_text(json.dumps(data), encoding="utf-8")
        d = IdleDaemon(
            settings,
            d.probe,
            [],
            d.state_file,
            clock=clock,
            sleep=clock.sleep,
            runner=d.runner,
            endpoints=UNREACHABLE,
            host="gpu-box",
            boot_time=lambda: 1_000.0,
        )
    d.run(max_steps=steps)
    state = load_state(d.state_file)
    assert state is not None and state["stops"]
    assert state["stops"][0]["reason"].startswith("stop: possible hang")
    return (state["stops"][0]["at"] - start) / 60


def test_a_restart_in_the_middle_of_a_hang_stops_at_the_same_time(tmp_path: Path) -> None:
    """The hang clock is saved with the policy's: a daemon restarted 15 min into the flat stretch (a
    package upgrade, a crash) stops at the same moment as one that never restarted (+80 min: the hang began
    at +40, 30 min window, 10 min warning), not a whole window later."""
    never = _stop_at(tmp_path / "a", None)
    assert 80 <= never <= 81
    assert _stop_at(tmp_path / "b", 55) == never


def test_a_hang_clock_that_no_longer_applies_starts_over(tmp_path: Path) -> None:
    """Down longer than the gap limit (2 min here: the policy's own rule for its clock), or a state file
    from before the hang clock was saved (it still loads): the stretch starts again at the restart."""
    assert 55 + 40 <= _stop_at(tmp_path / "a", 55, down_s=300) <= 55 + 5 + 41
    assert 55 + 40 <= _stop_at(tmp_path / "b", 55, old_file=True) <= 55 + 41


def test_damaged_hang_evidence_in_the_state_file_starts_the_hang_clock_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    state = tmp_path / "state" / "state.json"
    state.parent.mkdir()
    state.write_text(json.dumps({"version": 1, "hang": {"last_ts": clock.now, "machine_since": 0}}), "utf-8")
    settings = IdleSettings(action="shutdown", watch_paths=(str(_old_log(tmp_path, clock)),))
    d = _daemon(tmp_path, clock, settings)
    assert "unreadable hang evidence" in caplog.text
    d.step()
    saved = load_state(d.state_file)
    assert saved is not None and saved["hang"]["machine_since"] is None
