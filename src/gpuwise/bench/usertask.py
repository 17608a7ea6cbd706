"""`gpuwise bench task -- CMD`: run the user's own task package, bounded, while sampling the GPUs.

Units of work come from `--units N` (the whole run) or from lines `{"gpuwise_units": K}` the command prints
on its stdout (summed; every stdout line is passed on to stderr, so `--json` output stays one document).
The GPUs are read through the probe layer (live, or a recording in tests) every `interval_s`.

`bound` is decided from what was sampled (see `decide_bound`). The command runs in its own process group;
at `max_seconds` the whole group gets SIGTERM, then SIGKILL after a grace period, and the result says so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.gpu.probe import Probe
from gpuwise.gpu.sample import Snapshot, value_or_none
from gpuwise.locale import N_, _, child_environment
from gpuwise.locale import _ as _translate  # a text marked with N_() (the extractor refuses _(variable))

GIB = 2**30
KILL_GRACE_S = 5.0
UNITS_KEY = "gpuwise_units"
# The bound rule's two thresholds: judgements, not measured boundaries (see decide_bound).
BUSY_GPU_PCT = 20.0
MEMORY_TO_KERNEL_RATIO = 0.5


@dataclass
class Readings:
    """What the samples said, summarised per run."""

    samples: int = 0
    util_gpu: list[float] = field(default_factory=list)  # per sample: mean over GPUs
    util_memory: list[float] = field(default_factory=list)
    power_watts: list[float] = field(default_factory=list)  # per sample: sum over GPUs
    sm_clock_mhz: list[float] = field(default_factory=list)
    memory_clock_mhz: list[float] = field(default_factory=list)
    peak_memory_bytes: int | None = None  # the most any one GPU had in use

    def add(self, snap: Snapshot) -> None:
        live = [s for s in snap.samples if not s.lost]
        if not live:
            return
        self.samples += 1
        for target, attr, combine in (
            (self.util_gpu, "util_gpu_pct", statistics.fmean),
            (self.util_memory, "util_memory_pct", statistics.fmean),
            (self.power_watts, "power_draw_watts", sum),
            (self.sm_clock_mhz, "sm_clock_mhz", statistics.fmean),
            (self.memory_clock_mhz, "memory_clock_mhz", statistics.fmean),
        ):
            values = [float(v) for s in live if (v := value_or_none(getattr(s, attr))) is not None]
            if values:
                target.append(float(combine(values)))
        used = [int(v) for s in live if (v := value_or_none(s.memory_used_bytes)) is not None]
        if used:
            self.peak_memory_bytes = max(self.peak_memory_bytes or 0, *used)


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


def decide_bound(readings: Readings) -> tuple[str, str]:
    """("compute" | "memory_bandwidth" | "unknown", why).

    Rule: NVML's `utilization.gpu` is the share of time a kernel ran and `utilization.memory` the share of
    time device memory was read or written. With no such readings, or a GPU busy less than 20 % of the
    time (the task was bound by the host, not the GPU), the answer is "unknown". Otherwise, when memory was
    busy for at least half of the time kernels ran, the kernels were mostly waiting on memory:
    "memory_bandwidth"; else "compute". Both thresholds are judgements, not measured boundaries: the
    answer is a hint for projecting the task to other GPUs, and is said to be one. The reason is English:
    it goes into the results file (`bound_reason_shown` gives it in the user's language).
    """
    bound, text, fields = _bound(_mean(readings.util_gpu), _mean(readings.util_memory))
    return bound, text.format(**fields)


_NO_UTILIZATION = N_("no utilization readings (no GPU, or the GPU does not report them)")
_HOST_BOUND = N_("the GPU ran kernels {gpu} % of the time: bound by the host, not the GPU")
_MEMORY_BOUND = N_("memory busy {mem} % vs kernels {gpu} % (ratio {ratio} ≥ 0.5)")
_COMPUTE_BOUND = N_("memory busy {mem} % vs kernels {gpu} % (ratio {ratio} < 0.5)")


def _bound(gpu: float | None, mem: float | None) -> tuple[str, str, dict[str, str]]:
    """decide_bound's rule on the mean utilizations (as the results file holds them): the answer, its
    reason as a text marked with N_(), and the reason's fields."""
    if gpu is None or mem is None:
        return "unknown", _NO_UTILIZATION, {}
    if gpu < BUSY_GPU_PCT:
        return "unknown", _HOST_BOUND, {"gpu": f"{gpu:.0f}"}
    ratio = mem / gpu
    fields = {"mem": f"{mem:.0f}", "gpu": f"{gpu:.0f}", "ratio": f"{ratio:.2f}"}
    if ratio >= MEMORY_TO_KERNEL_RATIO:
        return "memory_bandwidth", _MEMORY_BOUND, fields
    return "compute", _COMPUTE_BOUND, fields


def bound_reason_shown(task: dict[str, Any]) -> str:
    """A results file's `bound_reason` in the user's language, rebuilt from the mean utilizations the file
    holds (the figures decide_bound used). A reason those figures do not give back (a file written by
    another version, or edited) is shown as written."""
    gpu, mem = task.get("gpu_util_mean_pct"), task.get("memory_util_mean_pct")
    numbers = all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in (gpu, mem))
    written = str(task.get("bound_reason", ""))
    if not numbers:
        return written
    bound, text, fields = _bound(gpu, mem)
    if bound != task.get("bound") or text.format(**fields) != written:
        return written
    return _translate(text).format(**fields)


def parse_units(line: str) -> float | None:
    """K from a line that is exactly a JSON object with a finite, non-negative number `gpuwise_units`."""
    text = line.strip()
    if not (text.startswith("{") and UNITS_KEY in text):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    value = data.get(UNITS_KEY) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value < float("inf") else None


def check_command(command: Sequence[str]) -> str:
    """The executable CMD names, or bad input (exit 2) when there is none to run."""
    if not command:
        raise ConfigError(
            _("No command to measure"), fix=_("put it after `--`: gpuwise bench task -- python render.py")
        )
    name = command[0]
    found = shutil.which(name) if os.sep not in name else (name if os.access(name, os.X_OK) else None)
    if found is None or Path(found).is_dir():
        where = (
            _("Command {name} is not an executable file")
            if Path(name).exists()
            else _("Command {name} was not found")
        )
        raise ConfigError(
            where.format(name=repr(name)),
            fix=_("check the spelling, give its full path, or run it through its interpreter (python x.py)"),
        )
    return found


@dataclass(frozen=True)
class TaskRun:
    command: list[str]
    exit_code: int | None
    seconds: float
    stopped_at_limit: bool
    line_units: float | None  # summed from the command's gpuwise_units lines; None when it printed none
    readings: Readings


def run_command(
    command: Sequence[str],
    *,
    max_seconds: float | None,
    probe: Probe | None,
    interval_s: float = 1.0,
    echo: Callable[[str], None] = lambda _line: None,
    clock: Callable[[], float] = time.monotonic,
) -> TaskRun:
    """Run `command` to its end or to `max_seconds`, reading the GPUs every `interval_s` meanwhile."""
    executable = check_command(command)
    readings = Readings()
    units: list[float] = []
    started = clock()
    try:
        proc = subprocess.Popen(
            [executable, *command[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,  # its own process group: the limit stops its children too
            env=child_environment(),  # the user's own locale variables, whatever --lang gpuwise got
            text=True,
            errors="replace",
        )
    except OSError as exc:  # not a program the kernel can run (no #! line, wrong architecture)
        raise ConfigError(
            _("Command {name} cannot be run: {why}").format(name=repr(command[0]), why=exc.strerror or exc),
            fix=_("run it through its interpreter (bash x.sh, python x.py) or make it executable"),
        ) from exc
    reader = threading.Thread(target=_read_lines, args=(proc, units, echo), daemon=True)
    reader.start()
    stopped = False
    try:
        while True:
            if probe is not None:
                _sample(probe, readings)
            left = None if max_seconds is None else max_seconds - (clock() - started)
            if left is not None and left <= 0:
                stopped = True
                _stop_group(proc)
                break
            try:
                proc.wait(timeout=interval_s if left is None else min(interval_s, left))
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        if proc.poll() is None:  # interrupted (Ctrl-C): leave nothing running
            _stop_group(proc)
    seconds = clock() - started
    reader.join(timeout=KILL_GRACE_S)
    if proc.stdout is not None:
        proc.stdout.close()
    return TaskRun(
        command=list(command),
        exit_code=proc.returncode,
        seconds=seconds,
        stopped_at_limit=stopped,
        line_units=sum(units) if units else None,
        readings=readings,
    )


def _read_lines(proc: subprocess.Popen[str], units: list[float], echo: Callable[[str], None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        echo(line.rstrip("\n"))
        found = parse_units(line)
        if found is not None:
            units.append(found)


def _sample(probe: Probe, readings: Readings) -> None:
    from gpuwise.errors import GpuwiseError

    try:
        readings.add(probe.read())
    except GpuwiseError:
        return  # one missed reading is missing data, not a failed measurement


def _stop_group(proc: subprocess.Popen[str]) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def task_section(run: TaskRun, *, units: float | None, unit: str) -> tuple[dict[str, Any], list[str]]:
    """The `task` object of the result (its "problems" in English: a file programs read), and the problems
    that make the measurement incomplete in the user's language (for the error line)."""
    said: list[tuple[str, dict[str, object]]] = []  # (a text marked with N_(), its fields)
    counted = units if units is not None else run.line_units
    source = (
        "--units" if units is not None else (f"{UNITS_KEY} lines" if run.line_units is not None else None)
    )
    if units is not None and run.stopped_at_limit:
        stopped = N_(
            "stopped at --max-seconds before the end: the --units given for the whole run were not all done"
        )
        said.append((stopped, {}))
        counted = None
    if counted is None and not said:
        no_units = N_("no units: give --units N, or have the command print lines {line}")
        said.append((no_units, {"line": f'{{"{UNITS_KEY}": K}}'}))
    if run.exit_code not in (0, None) and not run.stopped_at_limit:
        said.append((N_("the command exited with code {code}"), {"code": run.exit_code}))
    problems = [text.format(**fields) for text, fields in said]
    shown = [_translate(text).format(**fields) for text, fields in said]
    bound, why = decide_bound(run.readings)
    r = run.readings
    per_unit = run.seconds / counted if counted else None
    return {
        "command": run.command,
        "units": counted,
        "unit": unit,
        "units_source": source,
        "seconds": round(run.seconds, 6),  # to the µs: seconds_per_unit is computed from the same figure
        "seconds_per_unit": per_unit,
        "peak_memory_gib": round(r.peak_memory_bytes / GIB, 3) if r.peak_memory_bytes is not None else None,
        "gpu_util_mean_pct": _mean(r.util_gpu),
        "memory_util_mean_pct": _mean(r.util_memory),
        "power_mean_watts": _mean(r.power_watts),
        "sm_clock_mean_mhz": _mean(r.sm_clock_mhz),
        "memory_clock_mean_mhz": _mean(r.memory_clock_mhz),
        "samples": r.samples,
        "bound": bound,
        "bound_reason": why,
        "exit_code": run.exit_code,
        "stopped_at_limit": run.stopped_at_limit,
        "problems": problems,
    }, shown
