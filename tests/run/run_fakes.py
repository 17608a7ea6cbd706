"""Helpers for the run tests: start `gpuwise run` as a real process, and a miniature training job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def gpuwise_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpuwise", *args]


def start_gpuwise(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        gpuwise_argv(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ if env is None else env),
        cwd=cwd,
    )


def run_gpuwise(
    *args: str, timeout_s: float = 90, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        gpuwise_argv(*args),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        cwd=cwd,
        env=dict(os.environ if env is None else env),
    )


def job(code: str) -> list[str]:
    """A job: a Python snippet run by this interpreter (no shell quoting games)."""
    return [sys.executable, "-c", code]


# A training job in miniature: writes checkpoint step-N (two files, COMPLETE last) every `every` seconds,
# resumes from GPUWISE_RESUME_FROM, and on SIGTERM writes a final checkpoint and exits 0.
TRAINER = r"""
import os, signal, sys, time, json
from pathlib import Path
ckdir = Path(os.environ["GPUWISE_CHECKPOINT_DIR"])
ckdir.mkdir(parents=True, exist_ok=True)
resume = os.environ.get("GPUWISE_RESUME_FROM")
step = 0
if resume:
    step = json.loads(Path(resume, "state.json").read_text())["step"]
print("START", step, resume, flush=True)
SIZE = int(os.environ.get("TRAINER_BYTES", "1000"))
def save(n):
    d = ckdir / f"step-{n}"
    d.mkdir(exist_ok=True)
    (d / "state.json").write_text(json.dumps({"step": n}))
    (d / "weights.bin").write_bytes(os.urandom(SIZE))
    for i in range(int(os.environ.get("TRAINER_SHARDS", "0"))):
        (d / f"shard{i}.bin").write_bytes(os.urandom(SIZE))
    (d / "COMPLETE").write_text("")
    print("SAVED", n, flush=True)
def on_term(*_):
    save(step + 1000)
    print("FINAL", step + 1000, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
stop_at = int(os.environ.get("TRAINER_STEPS", "3"))
every = float(os.environ.get("TRAINER_EVERY", "0.2"))
while stop_at < 0 or step < stop_at:
    step += 1
    time.sleep(every)
    save(step)
print("DONE", step, flush=True)
"""


def json_last_line(stdout: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return data
