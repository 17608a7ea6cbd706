"""`gpuwise run` as a real process: exit codes, environment, streamed output, forwarded signals, the idle
stopper's pid file, and a command that does not exist."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from run_fakes import TRAINER, job, json_last_line, start_gpuwise
from run_support import Result

from gpuwise.idle.signals import GpuwiseRunJobs
from gpuwise.run.ledger import LedgerStore


def test_exit_code_env_and_output_are_the_jobs(tmp_path: Path, gw: Callable[..., Result]) -> None:
    code = (
        "import os, sys; print('OUT', os.environ['GPUWISE_RUN_ID'], os.environ['GPUWISE_CHECKPOINT_DIR'], "
        "os.environ.get('GPUWISE_RESUME_FROM')); print('ERR', file=sys.stderr); sys.exit(7)"
    )
    r = gw("run", "--preemption", "off", "--json", "--checkpoint-dir", str(tmp_path / "c"), "--", *job(code))
    assert r.returncode == 7, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("OUT"))
    _, run_id, ckpt, resume = line.split()
    assert run_id.startswith("run-") and ckpt == str(tmp_path / "c") and resume == "None"
    assert "ERR" in r.stderr
    summary = json_last_line(r.stdout)
    assert summary["exit_code"] == 7 and summary["run_id"] == run_id
    # the same command and checkpoint dir give the same run id (a relaunch finds its checkpoints)
    again = gw(
        "run", "--preemption", "off", "--json", "--checkpoint-dir", str(tmp_path / "c"), "--", *job(code)
    )
    assert json_last_line(again.stdout)["run_id"] == run_id


def test_launcher_id_wins(monkeypatch: object, tmp_path: Path, gw: Callable[..., Result]) -> None:
    os.environ["SKYPILOT_TASK_ID"] = "sky-managed-42"
    try:
        r = gw("run", "--preemption", "off", "--", *job("import os; print(os.environ['GPUWISE_RUN_ID'])"))
    finally:
        del os.environ["SKYPILOT_TASK_ID"]
    assert "sky-managed-42" in r.stdout


def test_a_command_that_does_not_exist_is_bad_input(tmp_path: Path, gw: Callable[..., Result]) -> None:
    r = gw("run", "--preemption", "off", "--", "no-such-program-gpuwise")
    assert r.returncode == 2
    assert "'no-such-program-gpuwise' not found on PATH" in r.stderr and "To fix:" in r.stderr
    assert "Traceback" not in r.stderr
    store = LedgerStore(Path(os.environ["GPUWISE_DATA_DIR"]) / "gpuwise.sqlite")
    assert store.entries() == []  # nothing half-recorded
    store.close()


def test_killed_by_a_signal_exits_128_plus_n(gw: Callable[..., Result]) -> None:
    r = gw(
        "run", "--preemption", "off", "--", *job("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    )
    assert r.returncode == 128 + signal.SIGKILL


def test_signals_are_forwarded_and_the_pid_file_is_seen_by_the_idle_stopper(tmp_path: Path) -> None:
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGUSR1, lambda *a: print('GOT USR1', flush=True))\n"
        "signal.signal(signal.SIGINT, lambda *a: (print('GOT INT', flush=True), sys.exit(5)))\n"
        "print('READY', flush=True)\n"
        "while True: time.sleep(0.05)\n"
    )
    p = start_gpuwise("run", "--preemption", "off", "--run-id", "fwd", "--", *job(code))
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "READY"
    run_dir = Path(os.environ["GPUWISE_DATA_DIR"]) / "run"
    signal_ = GpuwiseRunJobs(run_dir).gather(time.time(), None)  # type: ignore[arg-type]
    assert signal_.state == "active", signal_.detail
    p.send_signal(signal.SIGUSR1)
    assert p.stdout.readline().strip() == "GOT USR1"
    p.send_signal(signal.SIGINT)
    out, _err = p.communicate(timeout=20)
    assert p.returncode == 5
    assert "GOT INT" in out
    assert not list(run_dir.iterdir())
    assert GpuwiseRunJobs(run_dir).gather(time.time(), None).state == "quiet"  # type: ignore[arg-type]


def test_sigterm_gives_the_job_its_grace_period_then_kills(tmp_path: Path) -> None:
    stubborn = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: print('IGNORING TERM', flush=True))\n"
        "print('READY', flush=True)\n"
        "while True: time.sleep(0.05)\n"
    )
    p = start_gpuwise("run", "--preemption", "off", "--grace-s", "1", "--", *job(stubborn))
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "READY"
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    out, _err = p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGKILL
    assert 0.9 < time.monotonic() - t0 < 10
    assert "IGNORING TERM" in out


def test_resume_from_a_local_checkpoint(tmp_path: Path, gw: Callable[..., Result]) -> None:
    ck = tmp_path / "ck"
    first = gw("run", "--preemption", "off", "--checkpoint-dir", str(ck), "--", *job(TRAINER))
    assert first.returncode == 0, first.stderr
    (ck / "step-9").mkdir()  # newer by step, but never committed: not a checkpoint
    second = gw("run", "--preemption", "off", "--resume", "--checkpoint-dir", str(ck), "--", *job(TRAINER))
    assert f"START 3 {ck / 'step-3'}" in second.stdout
