"""The user's activity checks (idle/activity.py): real subprocesses and a real HTTP server on 127.0.0.1.
Exit 0 / HTTP 200 is busy, a clear other answer is quiet, and every failure counts as busy."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from idle_fakes import serve

from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.idle.activity import ActivityCheck, activity_checks, fetch_status, run_command
from gpuwise.idle.policy import IdlePolicy, IdleState, Observation, PolicyConfig

EMPTY = Snapshot(samples=())


def test_exit_zero_is_busy_another_exit_is_quiet() -> None:
    assert run_command(["true"], 5)[0] == "active"
    assert run_command(["false"], 5) == ("quiet", "exit 1 (not busy)")
    assert run_command(["sh", "-c", "exit 3"], 5)[0] == "quiet"


@pytest.mark.parametrize(
    "argv",
    [
        ["/nonexistent/check-busy"],
        ["sh", "-c", "exit 127"],
        ["sh", "-c", "exit 126"],
        ["sh", "-c", "kill -9 $$"],
    ],
    ids=["not found", "shell: not found", "shell: not executable", "killed by a signal"],
)
def test_a_check_that_cannot_run_counts_as_busy(argv: list[str]) -> None:
    state, detail = run_command(argv, 5)
    assert state == "unknown", detail


def test_timeout_kills_everything_the_check_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    state, detail = run_command(["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"], 0.5)
    assert state == "unknown" and "timed out after 0.5 s" in detail
    assert time.monotonic() - started < 10
    child = int(pid_file.read_text(encoding="utf-8"))
    for _ in range(100):  # the orphaned sleep is reaped by init shortly after the kill
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the check's child survived its timeout")


def test_the_command_runs_without_a_shell(tmp_path: Path) -> None:
    """`;` and `$(…)` in activity_command are words passed to the program, never run by a shell."""
    marker = tmp_path / "injected"
    (check,) = activity_checks(f"true ; touch {marker} $(touch {marker})", None, 5, 30)
    assert check.check()[0] == "active"  # `true` ignores its arguments
    assert not marker.exists()


def _status_server(status: int) -> Any:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # noqa: ARG002 - silence the request log
            return

        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return serve(Handler)


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (200, "active"),
        (204, "quiet"),
        (409, "quiet"),
        (404, "unknown"),
        (401, "unknown"),
        (503, "unknown"),
        # a Django check refusing the Host header, a POST-only route: the check never ran
        (400, "unknown"),
        (405, "unknown"),
    ],
)
def test_url_200_is_busy_a_failed_request_counts_as_busy(status: int, state: str) -> None:
    with _status_server(status) as base:
        assert fetch_status(base + "/busy", 5)[0] == state


def test_url_without_an_answer_counts_as_busy() -> None:
    state, detail = fetch_status("http://127.0.0.1:9/busy", 1)  # the discard port: refused
    assert state == "unknown" and detail.startswith("no answer")


def _now_start(work: Callable[[], None]) -> None:
    work()  # run the check at once, in this thread


def _check(results: list[tuple[str, str]], clock: list[float]) -> ActivityCheck:
    it = iter(results)
    return ActivityCheck(
        "activity_command", "activity_command", lambda: next(it), 10, 30, _now_start, lambda: clock[0]
    )


def test_gather_reports_the_latest_answer() -> None:
    clock = [1000.0]
    check = _check([("active", "exit 0 (busy)"), ("quiet", "exit 1 (not busy)")], clock)
    assert check.gather(1000.0, EMPTY).state == "active"
    clock[0] = 1030.0
    sig = check.gather(1030.0, EMPTY)
    assert (sig.state, sig.detail) == ("quiet", "activity_command: exit 1 (not busy)")


def test_a_check_that_raises_or_goes_stale_counts_as_busy() -> None:
    clock = [1000.0]

    def boom() -> tuple[str, str]:
        raise RuntimeError("bad check")

    raising = ActivityCheck("activity_url", "activity_url", boom, 10, 30, _now_start, lambda: clock[0])
    assert raising.gather(1000.0, EMPTY).state == "unknown"
    ran: list[Callable[[], None]] = []
    stuck = ActivityCheck(
        "activity_url", "activity_url", lambda: ("quiet", "x"), 10, 30, ran.append, lambda: 1000.0
    )
    assert stuck.gather(1000.0, EMPTY).state == "unknown"  # first answer not in yet
    ran[0]()  # the thread finishes once
    assert stuck.gather(1001.0, EMPTY).state == "quiet"
    sig = stuck.gather(1000.0 + 2 * 10 + 30 + 1, EMPTY)  # no new answer for two timeouts and an interval
    assert sig.state == "unknown" and "stuck" in sig.detail


def test_a_slow_check_never_blocks_the_daemon_loop() -> None:
    (check,) = activity_checks("sleep 5", None, 2, 30)
    started = time.monotonic()
    sig = check.gather(time.time(), EMPTY)
    assert time.monotonic() - started < 1.0
    assert sig.state == "unknown" and "not finished" in sig.detail
    assert check.gather(time.time(), EMPTY).state == "unknown"  # the same check still running: no second one


@pytest.mark.parametrize(("answer", "stops"), [("active", False), ("unknown", False), ("quiet", True)])
def test_the_policy_keeps_a_machine_the_check_calls_busy(answer: str, stops: bool) -> None:
    """An idle, empty GPU for 10 min with a 2-min window: stopped only when the check says "not busy"."""
    policy = IdlePolicy(PolicyConfig(window_min=2, held_window_min=2, warn_min=1))
    clock = [0.0]
    check = _check([(answer, "answer")] * 21, clock)
    states = []
    for k in range(21):
        clock[0] = t = k * 30.0
        gpu = Sample(t, 0, util_gpu_pct=0.0, memory_used_bytes=1 << 20)
        states.append(policy.observe(Observation(t, (gpu,), (check.gather(t, EMPTY),))).state)
    assert (IdleState.STOPPING in states) is stops


def test_url_is_never_shown_in_reasons() -> None:
    (check,) = activity_checks(None, "http://127.0.0.1:9/check?token=s3cret", 1, 30)
    assert "s3cret" not in check.what and check.what == "activity_url http://127.0.0.1:9/…"
