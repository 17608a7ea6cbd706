"""The idle daemon's state file under damage and attack (issue 10): a truncated, mistyped, huge, deeply
nested or non-regular `state.json` is ignored or cleaned — never a traceback, a hang or a shorter idle
clock — and a writer killed at any moment leaves the old state or the new one, never a broken file."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from idle_fakes import FakeClock

from gpuwise import paths
from gpuwise.cli.main import main
from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.idle.daemon import IdleDaemon
from gpuwise.idle.policy import IdleState
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.state import load_state, state_path

NOW = 1_777_000_000.0


def _within(seconds: float, fn: Callable[[], Any]) -> Any:
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed back to the test below
            out["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _policy(**over: Any) -> dict[str, Any]:
    return {"version": 1, "updated_at": NOW, "policy": over}


# name -> what to put at state.json (text, or a callable that makes the path itself)
HOSTILE: dict[str, Any] = {
    "truncated": '{"version": 1, "stops": [{"at": 1777000000, "ok": tr',
    "not json": "\x00\x01binary",
    "a list": "[1, 2, 3]",
    "deeply nested": '{"version": 1, "policy": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "wrong types": json.dumps(
        {
            "version": 1,
            "stops": "shutdown",
            "boots": 5,
            "decision": ["busy"],
            "updated_at": "yesterday",
            "interval_s": -30,
            "price_usd_per_hour": "25",
            "policy": {"last_ts": "now", "known_gpus": "0"},
        }
    ),
    "wrong types inside lists": json.dumps(
        {
            "version": 1,
            "stops": [1, None, {"at": "x"}, {"at": 1e300, "ok": True}, {"at": NOW - 99, "ok": "yes"}],
            "boots": [[], {"system_boot": "x"}, {"system_boot": 1e300}],
            "decision": {"state": 5, "idle_s": "x", "stop_due_s": 1e308},
            "updated_at": 1e300,
        }
    ),
    "policy maps of the wrong type": json.dumps(
        _policy(last_ts=NOW, prev_mem_bytes=[1, 2], mem_floor_bytes={"0": [1]}, observations=1.5)
    ),
    "policy numbers that overflow": json.dumps(_policy(last_ts=NOW, mem_floor_bytes={"0": 1e308})),
    # a damaged file must never claim idle time nobody observed
    "activity without any observation": json.dumps(_policy(last_activity_s=NOW - 86_400)),
    "activity after the last observation": json.dumps(
        _policy(last_activity_s=NOW - 86_400 + 60, last_ts=NOW - 86_400, last_held_s=NOW)
    ),
    # found by the fuzz suite: nesting that parses but breaks every printer, and an int beyond a float
    "decision nested 600 deep": '{"version": 1, "decision": {"x": ' + "[" * 600 + "]" * 600 + "}}",
    "integer beyond a float": '{"version": 1, "updated_at": 1' + "0" * 400 + "}",
    "huge": '{"version": 1, "stops": [' + ", ".join(['{"at": 1}'] * 600_000) + "]}",
}


def _make(path: Path, name: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if name == "fifo":
        os.mkfifo(path)
    elif name == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif name == "a directory":
        path.mkdir()
    else:
        path.write_text(HOSTILE[name], encoding="utf-8")


CASES = [*HOSTILE, "fifo", "link to /dev/zero", "a directory"]


@pytest.mark.parametrize("name", CASES)
def test_damaged_state_is_ignored_or_cleaned(name: str, tmp_path: Path) -> None:
    path = tmp_path / "idle" / "state.json"
    _make(path, name)
    data = _within(10, lambda: load_state(path))
    if data is None:
        return
    assert all(isinstance(s, dict) and isinstance(s["at"], float) for s in data["stops"])
    assert all(isinstance(b, dict) for b in data["boots"])
    assert isinstance(data.get("decision", {}), dict)
    assert data.get("updated_at") is None or data["updated_at"] < 4.2e9


@pytest.mark.parametrize("name", CASES)
def test_idle_status_on_a_damaged_state_exits_0(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    _make(state_path(paths.data_dir()), name)
    assert _within(20, lambda: main(["idle", "status", "--json"])) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out["savings"]["hours_off"], float)
    assert _within(20, lambda: main(["idle", "status"])) == 0


class IdleGpu:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def read(self) -> Snapshot:
        return Snapshot((Sample(self.clock(), 0, util_gpu_pct=0.0, memory_used_bytes=1 << 20),))

    def close(self) -> None:
        pass


@pytest.mark.parametrize("name", CASES)
def test_a_damaged_state_never_shortens_the_idle_clock(name: str, tmp_path: Path) -> None:
    """On an idle machine, the daemon restarted over a damaged state stops no sooner than a fresh one:
    the 60-min window after it started."""
    path = tmp_path / "idle" / "state.json"
    _make(path, name)
    clock = FakeClock(now=NOW)

    def build() -> IdleDaemon:
        return IdleDaemon(
            IdleSettings(action="shutdown"),
            IdleGpu(clock),
            [],
            path if name != "a directory" else tmp_path / "other" / "state.json",
            dry_run=True,
            clock=clock,
            sleep=clock.sleep,
            endpoints=MetadataEndpoints.all_at("http://127.0.0.1:9", timeout_s=0.2),
            boot_time=lambda: None,
        )

    daemon = _within(10, build)
    first_stop = None
    for _ in range(int(90 * 60 / 30)):
        decision = daemon.step()
        if decision.state == IdleState.STOPPING:
            first_stop = decision.timestamp_s
            break
        clock.sleep(30)
    assert first_stop is not None and first_stop - NOW >= 60 * 60


WRITER = """
import sys
from pathlib import Path
from gpuwise.idle.state import save_state
path = Path(sys.argv[1])
n = 0
while True:
    n += 1
    # states of very different sizes, so a torn write could not pass for a whole one
    save_state(path, {"seq": n, "blob": "x" * (50_000 if n % 2 else 10), "stops": []})
"""


def test_a_writer_killed_at_random_moments_leaves_the_old_or_the_new_state(tmp_path: Path) -> None:
    path = tmp_path / "idle" / "state.json"
    rng = random.Random(20261201)
    last_seq = 0
    for _ in range(15):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
        try:
            deadline = time.monotonic() + 30
            while not path.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.03))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        raw = json.loads(path.read_text(encoding="utf-8"))  # whole JSON, never a torn file
        assert raw["blob"] == "x" * (50_000 if raw["seq"] % 2 else 10)
        data = load_state(path)
        assert data is not None and data["version"] == 1
        last_seq = raw["seq"]
    assert last_seq > 0
    # what a kill leaves behind (the writer's temp file) is cleaned up when the daemon next starts
    clock = FakeClock(now=NOW)
    IdleDaemon(IdleSettings(action="shutdown"), IdleGpu(clock), [], path, clock=clock, boot_time=lambda: None)
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]
