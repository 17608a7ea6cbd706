"""The template's train.py, run for real on the CPU: the smoke run (train, evaluate, save, load), a run
stopped by SIGTERM that a second run resumes (with and without gpuwise installed), and the same under
`gpuwise run` with its checkpoint sync. Each process imports torch, so the steps are few and tiny."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from gpuwise.run.store import scan_local

_STEP = re.compile(r"^\[train\] step (\d+) ")
STATE = "state.pt"


def _python(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "train.py", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _stop_mid_training(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, sig: signal.Signals = signal.SIGTERM
) -> tuple[int, str, int]:
    """Start a long run, wait until it has logged a training step, send `sig`. Returns (exit code,
    stdout and stderr, the step it says it stopped at)."""
    # As a terminal starts it: a test runner started in the background (`cmd &` in a script) ignores SIGINT,
    # the child would inherit that, and train.py rightly leaves an ignored Ctrl-C ignored
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - single-threaded here
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if _STEP.match(line):
            break
    proc.send_signal(sig)
    rest, err = proc.communicate(timeout=120)
    out = "".join(seen) + rest + err
    stopped = re.search(rf"{sig.name}: stopped at step (\d+), saved (\S+);", out)
    assert stopped, out + err
    return proc.returncode, out, int(stopped.group(1))


def _steps_logged(out: str) -> list[int]:
    return [int(m.group(1)) for m in map(_STEP.match, out.splitlines()) if m]


def test_smoke_trains_evaluates_saves_and_loads(project: Path) -> None:
    r = _python(project, "--smoke")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "written by gpuwise.checkpoint" in r.stdout
    assert re.search(r"eval loss [\d.]+ -> [\d.]+ over steps 0\.\.40", r.stdout)
    assert "smoke test passed: trained, evaluated, saved" in r.stdout
    # its tiny model's checkpoints went to a temporary folder: a real run must never resume from them
    assert sorted(p.name for p in project.iterdir()) == sorted(
        p.name for p in project.iterdir() if p.is_file()
    )


def test_sigterm_saves_and_the_next_run_resumes_without_gpuwise(project: Path, tmp_path: Path) -> None:
    """On a machine without gpuwise train.py writes checkpoints itself, in the layout gpuwise reads."""
    hidden = tmp_path / "hide" / "gpuwise"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('gpuwise is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": str(hidden.parent)}
    ckpt = tmp_path / "ckpt"
    argv = [sys.executable, "train.py", "--smoke", "--steps", "100000", "--log-every", "2"]
    code, out, step = _stop_mid_training([*argv, "--checkpoint-dir", str(ckpt)], project, env)
    assert code == 128 + signal.SIGTERM, out
    assert "written by train.py (gpuwise is not installed)" in out
    assert (ckpt / f"step-{step}" / "COMPLETE").is_file()
    assert not [p for p in ckpt.iterdir() if p.name.startswith(".")]  # no half-written folder left
    assert f"step-{step}" in {c.path.name for c in scan_local(ckpt)}  # gpuwise counts it complete

    r = _python(project, "--smoke", "--steps", str(step + 6), "--checkpoint-dir", str(ckpt), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"resumed from {ckpt / f'step-{step}'} (step {step})" in r.stdout
    assert re.search(rf"over steps {step}\.\.{step + 6}\b", r.stdout)
    assert _steps_logged(r.stdout)[0] > step  # continued, not restarted
    assert "smoke test passed" in r.stdout


def test_ctrl_c_saves_a_final_checkpoint_and_the_next_run_resumes(project: Path, tmp_path: Path) -> None:
    """Ctrl-C on a laptop: the step finishes, a final checkpoint is written, exit 130, and no traceback."""
    ckpt = tmp_path / "ckpt"
    argv = [sys.executable, "train.py", "--smoke", "--steps", "100000", "--log-every", "2"]
    code, out, step = _stop_mid_training([*argv, "--checkpoint-dir", str(ckpt)], project, sig=signal.SIGINT)
    assert code == 128 + signal.SIGINT, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    assert (ckpt / f"step-{step}" / "COMPLETE").is_file()
    r = _python(project, "--smoke", "--steps", str(step + 2), "--checkpoint-dir", str(ckpt))
    assert f"resumed from {ckpt / f'step-{step}'} (step {step})" in r.stdout, r.stdout + r.stderr


def test_under_gpuwise_run_sigterm_syncs_the_final_checkpoint_and_a_new_machine_resumes(
    project: Path, tmp_path: Path
) -> None:
    ckpt, remote = tmp_path / "ckpt", tmp_path / "remote"
    gw = [sys.executable, "-m", "gpuwise", "run", "--preemption", "off", "--run-id", "tpl"]
    gw += ["--checkpoint-dir", str(ckpt), "--sync", remote.as_uri()]
    job = [sys.executable, "train.py", "--smoke", "--log-every", "2"]
    code, out, step = _stop_mid_training([*gw, "--", *job, "--steps", "100000"], project)
    assert code == 128 + signal.SIGTERM, out  # gpuwise run exits with the job's code
    assert "written by gpuwise.checkpoint" in out
    assert (remote / "tpl" / f"step-{step}" / "gpuwise-manifest.json").is_file()  # uploaded before exit

    shutil.rmtree(ckpt)  # the relaunch lands on a new machine: only the remote copy is left
    r = subprocess.run(
        [*gw, "--resume", "--", *job, "--steps", str(step + 4)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"resumed from {ckpt / f'step-{step}'} (step {step})" in r.stdout
    assert _steps_logged(r.stdout)[0] > step
    assert "smoke test passed" in r.stdout


def test_without_gpuwise_a_save_removes_what_killed_saves_left_as_gpuwise_does(
    project: Path, tmp_path: Path
) -> None:
    """A save killed mid-write (the OOM killer, kill -9) leaves `.step-N.<pid>.tmp`, as large as a
    checkpoint. gpuwise.checkpoint.save() removes those whose writer is gone; train.py's own saver, used
    without gpuwise, must leave the folder exactly as gpuwise's does."""
    from gpuwise import checkpoint

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    left = (f".step-7.{int(dead.stdout)}.tmp", f".step-8.{os.getppid()}.tmp", ".step-9.x.tmp")
    folders = {}
    for writer in ("gpuwise", "train.py"):
        folder = folders[writer] = tmp_path / writer
        for name in left:
            (folder / name).mkdir(parents=True)
            (folder / name / STATE).write_bytes(b"half")
    hidden = tmp_path / "hide" / "gpuwise"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('gpuwise is not installed here')\n")
    code = (
        "import sys, torch; from pathlib import Path; import train\n"
        "assert train.gpuwise_checkpoint is None\n"
        f"train.save_checkpoint({{'w': torch.zeros(1)}}, 10, Path({str(folders['train.py'])!r}))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{hidden.parent}{os.pathsep}{project}"}
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    checkpoint.save(b"state", 10, directory=folders["gpuwise"])
    listed = {w: sorted(p.name for p in f.iterdir()) for w, f in folders.items()}
    assert listed["train.py"] == listed["gpuwise"] == sorted([*left[1:], "step-10"])
