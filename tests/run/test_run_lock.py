"""Running the same job again. One `gpuwise run` per checkpoint directory: a second copy is refused
(exit 2, nothing recorded) while the first one's gpuwise or its job lives, even after gpuwise itself was
killed with SIGKILL; it runs again once both are gone, closing the ledger row the killed gpuwise left open
at its last sign of life. A --resume that finds nothing of its own run says which runs --sync holds."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from run_fakes import TRAINER, job, json_last_line, run_gpuwise, start_gpuwise
from run_support import Result

from gpuwise.run.ledger import LedgerEntry, LedgerStore
from gpuwise.run.runner import RunOptions, Supervisor

_SLEEPER = "import os, time\nprint('READY', os.getpid(), flush=True)\nwhile True: time.sleep(0.05)\n"


def _entries() -> list[LedgerEntry]:
    store = LedgerStore(Path(os.environ["GPUWISE_DATA_DIR"]) / "gpuwise.sqlite")
    try:
        return store.entries()
    finally:
        store.close()


def _ledger_rows() -> int:
    return len(_entries())


def _gone(pid: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} still alive")


def test_a_second_run_in_one_checkpoint_dir_is_refused(tmp_path: Path, gw: Callable[..., Result]) -> None:
    ck = tmp_path / "ck"
    first = start_gpuwise(
        "run", "--preemption", "off", "--run-id", "j", "--checkpoint-dir", str(ck), "--", *job(_SLEEPER)
    )
    assert first.stdout is not None
    job_pid = int(first.stdout.readline().split()[1])
    killed_at = time.time()
    try:
        second = gw(
            "run",
            "--preemption",
            "off",
            "--run-id",
            "j",
            "--checkpoint-dir",
            str(ck),
            "--",
            *job("print('RAN')"),
        )
        assert second.returncode == 2, second.stderr
        assert "Another gpuwise run is using the checkpoint directory" in second.stderr
        assert f"job pid {job_pid}" in second.stderr and "--checkpoint-dir" in second.stderr
        assert "RAN" not in second.stdout and "Traceback" not in second.stderr
        assert _ledger_rows() == 1  # the refused run left no row
        # gpuwise killed outright: its job runs on, unsupervised, and still holds the directory
        first.kill()
        first.wait(timeout=10)
        os.kill(job_pid, 0)
        third = gw(
            "run",
            "--preemption",
            "off",
            "--run-id",
            "j",
            "--checkpoint-dir",
            str(ck),
            "--",
            *job("print('RAN')"),
        )
        assert third.returncode == 2, third.stderr
        assert "RAN" not in third.stdout
    finally:
        first.kill()
        os.kill(job_pid, signal.SIGKILL)
        first.communicate(timeout=10)  # the job held the pipes too
    _gone(job_pid)
    fourth = gw(
        "run", "--preemption", "off", "--run-id", "j", "--checkpoint-dir", str(ck), "--", *job("print('RAN')")
    )
    assert fourth.returncode == 0, fourth.stderr
    assert "RAN" in fourth.stdout
    assert "the previous run of j was stopped" in fourth.stderr and "exit code unknown" in fourth.stderr
    killed, done = _entries()
    assert killed.ended_at is not None and killed.started_at <= killed.ended_at <= killed_at + 1
    assert killed.exit_code is None and done.exit_code == 0
    # its own lock is gone with it: the next run in the same process is not refused by a leftover
    assert (
        gw(
            "run", "--preemption", "off", "--run-id", "j", "--checkpoint-dir", str(ck), "--", *job("pass")
        ).returncode
        == 0
    )


def test_gpuwise_renews_the_pid_files_time_while_the_job_runs(tmp_path: Path) -> None:
    """The pid file's time is the run's last sign of life, should gpuwise be killed outright."""
    pid_dir = tmp_path / "run"
    watch = (
        "import glob, os, sys, time\n"
        f"pattern = {str(pid_dir / 'beat@*.pid')!r}\n"
        "while not glob.glob(pattern): time.sleep(0.01)\n"
        "(p,) = glob.glob(pattern)\n"
        "first = os.stat(p).st_mtime\n"
        "time.sleep(1.5)\n"
        "sys.exit(0 if os.stat(p).st_mtime > first + 0.5 else 9)\n"
    )
    opts = RunOptions(
        command=tuple(job(watch)),
        checkpoint_dir=tmp_path / "ck",
        pid_dir=pid_dir,
        run_id="beat",
        preemption="off",
        heartbeat_s=0.3,
    )
    assert Supervisor(opts).run().exit_code == 0
    assert not list(pid_dir.iterdir())  # a run that ends leaves none behind


def test_resume_that_finds_nothing_of_its_run_names_the_other_runs_at_sync(
    tmp_path: Path, gw: Callable[..., Result]
) -> None:
    """The run id is a hash of the command line: relaunched on a new machine with one flag changed, --resume
    finds nothing of the new id and the job starts from scratch. It says so, naming the runs --sync holds."""
    vol = tmp_path / "vol"
    sync = ["--sync", f"file://{vol}", "--poll-s", "0.2"]
    first = gw("run", "--preemption", "off", *sync, "--checkpoint-dir", str(tmp_path / "a"), "--json", "--",
               *job(TRAINER), "--lr", "1")  # fmt: skip
    assert first.returncode == 0, first.stderr
    old_id = json_last_line(first.stdout)["run_id"]
    again = gw("run", "--preemption", "off", *sync, "--resume", "--checkpoint-dir", str(tmp_path / "b"),
               "--", *job(TRAINER), "--lr", "2")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "START 0 None" in again.stdout
    assert "so the job starts from scratch" in again.stderr and f"holds other runs: {old_id}" in again.stderr
    assert "--run-id" in again.stderr
    resumed = gw("run", "--preemption", "off", *sync, "--resume", "--run-id", old_id, "--checkpoint-dir",
                 str(tmp_path / "c"), "--", *job(TRAINER), "--lr", "2")  # fmt: skip
    assert "START 3" in resumed.stdout and "starts from scratch" not in resumed.stderr


def test_a_lock_left_with_a_background_child_of_the_job_names_the_lock_file(
    tmp_path: Path, gw: Callable[..., Result]
) -> None:
    """The job started a process in the background that inherited the lock (a shell's `cmd &`), then ended
    with gpuwise: the pids the file names are gone, so the message says how to find the holder instead."""
    ck = tmp_path / "ck"
    spawn = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], close_fds=False,\n"
        "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print('CHILD', p.pid, flush=True)\n"
    )
    first = run_gpuwise("run", "--preemption", "off", "--checkpoint-dir", str(ck), "--", *job(spawn))
    assert first.returncode == 0, first.stderr
    child = int(first.stdout.split("CHILD")[1].split()[0])
    try:
        second = gw("run", "--preemption", "off", "--checkpoint-dir", str(ck), "--", *job("print('RAN')"))
        assert second.returncode == 2, second.stderr
        assert "a process it started in the background still holds" in second.stderr
        assert f"fuser -v {ck / '.gpuwise-run.lock'}" in second.stderr and "RAN" not in second.stdout
    finally:
        os.kill(child, signal.SIGKILL)
    _gone(child)
    assert gw("run", "--preemption", "off", "--checkpoint-dir", str(ck), "--", *job("pass")).returncode == 0
