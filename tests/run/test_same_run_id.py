"""One run id running twice at once, in two checkpoint directories (a launcher's id, such as
$SKYPILOT_TASK_ID, shared by two jobs on one machine): each keeps its own pid file, so the first to end
does not take away the sign the idle stopper reads for the other, and a killed one's relaunch closes only
its own ledger row. A --run-id that is not one folder name is refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from run_fakes import job, start_gpuwise
from run_support import Result

from gpuwise.idle.signals import GpuwiseRunJobs
from gpuwise.run.ledger import LedgerStore, RunStart
from gpuwise.run.runner import interrupted, pid_file_name


def test_the_first_run_to_end_leaves_the_others_pid_file(tmp_path: Path, gw: Callable[..., Result]) -> None:
    release = tmp_path / "release"
    waiter = (
        "import os, time\n"
        "print('READY', flush=True)\n"
        f"while not os.path.exists({str(release)!r}): time.sleep(0.05)\n"
    )
    second = start_gpuwise(
        "run", "--preemption", "off", "--run-id", "same", "--checkpoint-dir", str(tmp_path / "b"),
        "--", *job(waiter),
    )  # fmt: skip
    run_dir = Path(os.environ["GPUWISE_DATA_DIR"]) / "run"
    try:
        assert second.stdout is not None
        assert second.stdout.readline().strip() == "READY"
        first = gw(
            "run", "--preemption", "off", "--run-id", "same", "--checkpoint-dir", str(tmp_path / "a"),
            "--", *job("pass"),
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        assert [p.name for p in run_dir.iterdir()] == [pid_file_name("same", second.pid)]
        seen = GpuwiseRunJobs(run_dir).gather(time.time(), None)  # type: ignore[arg-type]
        assert seen.state == "active", seen.detail
    finally:
        release.touch()
        second.communicate(timeout=30)
    assert second.returncode == 0
    assert not list(run_dir.iterdir())


def test_a_killed_runs_relaunch_closes_its_own_row_not_a_live_one_of_the_same_id(tmp_path: Path) -> None:
    pid_dir = tmp_path / "run"
    pid_dir.mkdir()
    store = LedgerStore(tmp_path / "ledger.sqlite")
    try:
        start = RunStart(
            "same", None, (), ("train.py",), time.time() - 60, None, None, None, None, None, None
        )
        killed_row, live_row = store.start(start), store.start(start)
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)  # fmt: skip
        dead_pid = int(dead.stdout)
        (pid_dir / pid_file_name("same", dead_pid)).write_text(f"{dead_pid} 1 {killed_row}\n")
        (pid_dir / pid_file_name("same", os.getppid())).write_text(f"{os.getppid()} 1 {live_row}\n")
        (left,) = interrupted(pid_dir, "same")
        assert left.path.name == pid_file_name("same", dead_pid) and left.ledger_row == killed_row
        assert interrupted(pid_dir, "sam") == []  # another id's files are not its own
        assert store.close_interrupted("same", left.last_alive, left.ledger_row) == 1
        # rows in the order opened: the killed run's ends, the other one's (still going) stays open
        assert [e.ended_at is None for e in store.entries()] == [False, True]
    finally:
        store.close()


def test_a_run_id_that_is_not_one_folder_name_is_refused(tmp_path: Path, gw: Callable[..., Result]) -> None:
    """`--run-id ..` once uploaded to the folder above --sync's (and --keep deleted there)."""
    remote = tmp_path / "remote" / "mine"
    remote.mkdir(parents=True)
    for bad, example in (("..", "run"), ("team/exp 1", "team-exp-1")):
        r = gw(
            "run", "--preemption", "off", "--run-id", bad, "--sync", remote.as_uri(),
            "--checkpoint-dir", str(tmp_path / "ck"), "--", *job("print('RAN')"),
        )  # fmt: skip
        assert r.returncode == 2, r.stderr
        assert f"--run-id {bad!r} is not a plain name" in r.stderr and f"--run-id {example}" in r.stderr
        assert "RAN" not in r.stdout and "Traceback" not in r.stderr
    assert [p.name for p in (tmp_path / "remote").iterdir()] == ["mine"] and not list(remote.iterdir())
    assert not (Path(os.environ["GPUWISE_DATA_DIR"]) / "gpuwise.sqlite").exists()
