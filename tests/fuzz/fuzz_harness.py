"""The parent side of the fuzz suite: start runner processes (several at once), watch them, read their
summaries; and run the CLI sample (the real `gpuwise` command, one process per input) under the same
bounds.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "fuzz_runner.py"
MEM_MIB = 1024
TIMEOUT_S = 10.0


@dataclass
class BatchResult:
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    # a runner that died or was killed: (format, what happened, the input it was on)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    wall_s: float = 0.0


def run_batch(
    formats: list[str],
    out: Path,
    *,
    examples: int,
    sample: int = 0,
    timeout_s: float = TIMEOUT_S,
    watchdog_grace_s: float = 20.0,
    mem_mib: int = MEM_MIB,
    extra: list[str] | None = None,
) -> BatchResult:
    """One runner process for ``formats`` (run one after another in it). The runner bounds each input
    itself; this watchdog ends it when its heartbeat stops for ``timeout_s + watchdog_grace_s`` (a hang
    in C code no signal handler interrupts)."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        str(RUNNER),
        *formats,
        "--examples",
        str(examples),
        "--out",
        str(out),
        "--timeout-s",
        str(timeout_s),
        "--mem-mib",
        str(mem_mib),
        "--sample",
        str(sample),
        *(extra or []),
    ]
    tag = "-".join(formats) if len(formats) == 1 else "all"
    log = (out / f"runner-{tag}.log").open("w")
    stdout_path = out / f"runner-{tag}.out"
    started = time.monotonic()
    with stdout_path.open("w") as stdout:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=log, start_new_session=True)
        killed = ""
        while proc.poll() is None:
            beats = [p.stat().st_mtime for p in (out / f / "heartbeat" for f in formats) if p.exists()]
            if beats and time.time() - max(beats) > timeout_s + watchdog_grace_s:
                limit = timeout_s + watchdog_grace_s
                killed = f"no progress for over {limit:.0f} s (a hang the alarm could not end)"
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.2)
    log.close()
    result = BatchResult()
    result.wall_s = time.monotonic() - started
    lines = [stdout_path.read_text()]
    for line in "".join(lines).splitlines():
        if line.startswith('{"format"'):
            summary = json.loads(line)
            result.summaries[summary["format"]] = summary
    for name in formats:
        if name in result.summaries:
            continue
        folder = out / name
        what = killed or f"the runner exited with {proc.returncode} ({_signal_name(proc.returncode)})"
        current = _current_input(folder)
        result.failures.append((name, what, current))
        wd = folder / "workdir"
        if wd.exists():
            shutil.rmtree(wd.read_text().strip(), ignore_errors=True)
        break  # formats after the one that died never ran
    return result


def _signal_name(code: int | None) -> str:
    if code is not None and code < 0:
        return signal.Signals(-code).name
    return "see runner.log"


def _current_input(folder: Path) -> str:
    """Copy the input the runner was on (it lives in the runner's work folder) next to its log."""
    wd = folder / "workdir"
    if not wd.exists():
        return "?"
    inbox = Path(wd.read_text().strip()) / "in"
    if not inbox.exists():
        return "?"
    keep = folder / "hung-input"
    shutil.rmtree(keep, ignore_errors=True)
    shutil.copytree(inbox, keep, symlinks=True)
    return str(keep)


def describe(summary: dict[str, Any]) -> str:
    codes = ", ".join(f"exit {k}: {v}" for k, v in sorted(summary["codes"].items()))
    return (
        f"{summary['format']}: {summary['inputs']} inputs in {summary['elapsed_s']} s "
        f"({summary['cpu_s']} s CPU); slowest {summary['slowest_s']} s ({summary['slowest_input']}); "
        f"peak memory {summary['peak_rss_mib']} MiB; {codes}"
    )


def describe_crashes(summary: dict[str, Any]) -> str:
    parts = []
    for c in summary["crashes"]:
        commands = "\n".join(f"    $ {cmd}" for cmd in c["commands"])
        parts.append(
            f"  {c['signature']} — {c['count']} input(s); smallest ({c['size']} bytes): {c['input']}\n"
            f"{commands}\n" + "\n".join("      " + ln for ln in c["traceback"].strip().splitlines()[-6:])
        )
    return "\n".join(parts)


# ---------------------------------------------------------------- the CLI sample


@dataclass
class CliRun:
    command: str
    code: int
    seconds: float
    problem: str  # "" when the run kept the promise


def _limits(mem_mib: int, cpu_s: int) -> Any:
    def apply() -> None:
        limit = mem_mib << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))

    return apply


def _cpu_s(pid: int) -> float:
    """CPU seconds used so far by a process and its children (bash, then gpuwise)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
        return sum(sum(p.cpu_times()[:2]) for p in procs)
    except psutil.Error:
        return float("inf")  # gone: not waiting


def cli_sample_commands(fmt_name: str, sample_dir: Path) -> list[str]:
    from fuzz_formats import FORMATS

    fmt = FORMATS[fmt_name]
    commands = []
    for i, folder in enumerate(sorted(p for p in sample_dir.iterdir() if p.is_dir())):
        kind, name, *note = (folder / "CASE").read_text().split()
        path = folder / ("folder" if kind.startswith("dir-") else name)
        every = fmt.commands(path)
        # the fixed cases through every command that reads them; generated ones through one each, in
        # turn (a gpuwise start costs ~0.4 s of CPU: the sample must stay a sample)
        commands.extend(every if kind != "file" or note else [every[i % len(every)]])
    return commands


def run_cli(
    commands: list[str],
    *,
    jobs: int,
    env: dict[str, str],
    mem_mib: int = MEM_MIB,
    cpu_limit_s: int = int(TIMEOUT_S),
    wall_limit_s: float = 600.0,
) -> list[CliRun]:
    """Run each shell command (one gpuwise call) with RLIMIT_AS and a CPU-time limit of 10 s — CPU, not
    wall time, so a loaded 2-core machine is not mistaken for a hang; a process that waits instead (a
    FIFO open) is ended once it has used under 5 % of a CPU for over 10 s. The promise: exit 0, 1 or 2
    and no traceback."""
    runs: list[CliRun] = []
    pending = list(commands)
    active: list[tuple[str, subprocess.Popen[bytes], float, Any]] = []
    while pending or active:
        while pending and len(active) < jobs:
            command = pending.pop(0)
            # stderr to a file, not a pipe: a long traceback would fill an undrained pipe and block
            err_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed once the process has ended
            proc = subprocess.Popen(
                ["bash", "-c", command],
                stdout=subprocess.DEVNULL,
                stderr=err_file,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=_limits(mem_mib, cpu_limit_s),  # noqa: PLW1509 - no threads in this process's children
                start_new_session=True,
            )
            active.append((command, proc, time.monotonic(), err_file))
        still = []
        for command, proc, t0, err_file in active:
            elapsed = time.monotonic() - t0
            waiting = elapsed > cpu_limit_s and _cpu_s(proc.pid) < 0.05 * elapsed
            if proc.poll() is None and elapsed < wall_limit_s and not waiting:
                still.append((command, proc, t0, err_file))
                continue
            problem = ""
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                problem = (
                    f"waiting (not computing) for {elapsed:.0f} s"
                    if waiting
                    else f"still running after {wall_limit_s:.0f} s"
                )
            err_file.seek(0)
            err = err_file.read().decode("utf-8", "replace")
            err_file.close()
            code = proc.returncode
            if not problem and code in (
                -signal.SIGXCPU,
                128 + signal.SIGXCPU,
                -signal.SIGKILL,
                128 + signal.SIGKILL,
            ):
                problem = f"over {cpu_limit_s} s of CPU"
            elif not problem and code not in (0, 1, 2):
                problem = f"exit {code}"
            if not problem and "Traceback" in err:
                problem = "a traceback on stderr"
            if problem:
                problem += ": " + err.strip()[-600:]
            runs.append(CliRun(command, code, time.monotonic() - t0, problem))
        active = still
        time.sleep(0.02)
    return runs
