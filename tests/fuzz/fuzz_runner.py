"""Run one format's fuzz batch in this process, under the bounds the suite promises.

    python tests/fuzz/fuzz_runner.py FORMAT --examples 10000 --out DIR

The process limits its own address space (RLIMIT_AS, default 1 GiB) and bounds every input to 10 s of
CPU (and to not waiting: see _Clock), so a blow-up is a MemoryError and a hang an exception at the line
that hung; both are recorded like any other crash. A hang in C code that no signal handler interrupts is
the parent's job: it watches OUT/FORMAT/heartbeat and kills the process (the input is still in the work
folder named in OUT/FORMAT/workdir).

Every input is run to the end of the batch: each distinct crash (exception type and the innermost
gpuwise line) is kept with its smallest input under DIR/crashes/, so one run reports all of them. With
--shrink the first crash is raised instead, for hypothesis to shrink.

The last line of stdout (and DIR/summary.json) is the summary: inputs run, exit codes, the slowest input,
peak memory, and the crashes with their reproducers.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpuwise

SRC_DIR = str(Path(gpuwise.__file__).resolve().parent) + os.sep


class Hang(BaseException):
    """An input ran past the time bound."""


@dataclass
class Crash:
    signature: str
    exc_type: str
    where: str
    traceback: str
    in_product: bool = True  # False: the harness itself broke (a target out of date with the CLI)
    count: int = 0
    size: int = -1
    input: str = ""
    commands: list[str] = field(default_factory=list)


@dataclass
class Stats:
    inputs: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    slowest_s: float = 0.0
    slowest_note: str = ""
    crashes: dict[str, Crash] = field(default_factory=dict)


class _Clock:
    """The time bound of one input. CPU time is the measure (SIGPROF after `timeout_s` of CPU), so a
    loaded machine does not turn a slow input into a "hang"; a wall-clock alarm every `timeout_s`
    catches an input that waits instead (a FIFO nobody writes): if the process used under 5 % of a CPU
    since the input began, it is blocked, and that is a hang too."""

    timeout_s = 10.0
    wall0 = 0.0
    cpu0 = 0.0

    @staticmethod
    def cpu() -> float:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    @classmethod
    def start(cls) -> None:
        cls.wall0, cls.cpu0 = time.monotonic(), cls.cpu()
        signal.setitimer(signal.ITIMER_PROF, cls.timeout_s)
        signal.setitimer(signal.ITIMER_REAL, cls.timeout_s)

    @staticmethod
    def stop() -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)


def _on_cpu_limit(signum: int, frame: Any) -> None:
    raise Hang(f"input used over {_Clock.timeout_s:g} s of CPU")


def _on_wall_alarm(signum: int, frame: Any) -> None:
    wall = time.monotonic() - _Clock.wall0
    if _Clock.cpu() - _Clock.cpu0 < 0.05 * wall:
        raise Hang(f"input blocked for {wall:.0f} s (waiting, not computing)")
    if wall > 30 * _Clock.timeout_s:  # starved that long: report rather than wait on
        raise Hang(f"input still running after {wall:.0f} s")
    signal.setitimer(signal.ITIMER_REAL, _Clock.timeout_s)


def _frames(exc: BaseException) -> list[tuple[str, int, str]]:
    """(file, line, function) of each traceback frame: a plain walk, cheap even for the 1,000 frames of a
    RecursionError (traceback.extract_tb reads source lines)."""
    out = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        out.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return out


def _in_product(exc: BaseException) -> bool:
    """Did the exception pass through gpuwise's code? If not, the harness called something wrongly."""
    if isinstance(exc, Hang | MemoryError | AssertionError):
        return True
    return any(f[0].startswith(SRC_DIR) for f in _frames(exc))


def _where(exc: BaseException) -> str:
    """The innermost frame in gpuwise's own code (else the innermost frame): where to look."""
    frames = _frames(exc)
    ours = [f for f in frames if f[0].startswith(SRC_DIR)]
    if not (ours or frames):
        return "?"
    filename, line, func = (ours or frames)[-1]
    name = filename.removeprefix(SRC_DIR) if filename.startswith(SRC_DIR) else Path(filename).name
    return f"{name}:{line} in {func}"


def _build(folder: Path, case: Any) -> Path:
    """Put ``case`` in ``folder``; return the path the commands are given."""
    path = folder / case.name
    if case.kind == "file":
        path.write_bytes(case.data)
    elif case.kind == "fifo":
        os.mkfifo(path)
    elif case.kind == "devzero":
        path.symlink_to("/dev/zero")
    elif case.kind in ("dir-with-fifo", "dir-with-devzero"):
        from fuzz_formats import FIX

        path = folder / "folder"
        path.mkdir()
        (path / "lambda.csv").write_bytes((FIX / "catalog" / "own.csv").read_bytes())  # a valid CSV
        if case.kind == "dir-with-fifo":
            os.mkfifo(path / "aws.csv")
        else:
            (path / "gcp.csv").symlink_to("/dev/zero")
    else:
        raise ValueError(case.kind)
    (folder / "CASE").write_text(f"{case.kind} {case.name} {case.note}\n")
    return path


class Runner:
    def __init__(
        self,
        fmt_name: str,
        out: Path,
        work: Path,
        timeout_s: float,
        text_every: int,
        *,
        sample: int,
        examples: int,
    ) -> None:
        from fuzz_formats import FORMATS, SELFTESTS

        self.fmt = FORMATS[fmt_name] if fmt_name in FORMATS else SELFTESTS[fmt_name]
        # the explicit cases, then every n-th generated input, are kept for the CLI sample
        self.sample_dir = out / "sample"
        self.sample_left = sample
        self.sample_every = max(1, examples // max(1, sample - len(self.fmt.explicit)))
        self.out = out
        self.timeout_s = timeout_s
        self.text_every = text_every
        self.stats = Stats()
        self.inbox = work / "in"
        self.heartbeat = out / "heartbeat"
        self.heartbeat.touch()
        self._last_kind = ""
        self._last_path: Path | None = None

    # -- one input
    def _save_sample(self, case: Any) -> None:
        folder = self.sample_dir / f"{self.stats.inputs:05d}"
        folder.mkdir(parents=True)
        _build(folder, case)
        self.sample_left -= 1

    def _materialise(self, case: Any) -> Path:
        path = self.inbox / case.name
        if case.kind == "file" and self._last_kind == "file":
            # the common case, kept cheap: replace the one file of the previous input
            if self._last_path is not None and self._last_path != path:
                self._last_path.unlink(missing_ok=True)
            path.write_bytes(case.data)
            self._last_path = path
            return path
        if self.inbox.exists():
            shutil.rmtree(self.inbox)
        self.inbox.mkdir(parents=True)
        self._last_kind, self._last_path = case.kind, path
        return _build(self.inbox, case)

    def run(self, case: Any, shrink: bool = False) -> None:
        os.utime(self.heartbeat)
        if self.sample_left > 0 and (case.kind != "file" or self.stats.inputs % self.sample_every == 0):
            self._save_sample(case)
        path = self._materialise(case)
        text = self.text_every > 0 and self.stats.inputs % self.text_every == 0
        started = time.perf_counter()
        _Clock.start()
        try:
            code = self.fmt.target(path, text)
        except BaseException as exc:  # every escape is the finding
            _Clock.stop()
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._record(case, exc)
            code = -1
            if shrink:
                raise
        finally:
            _Clock.stop()
        elapsed = time.perf_counter() - started
        self.stats.inputs += 1
        key = str(code)
        if code not in (-1, 0, 1, 2):
            self._record(case, AssertionError(f"exit code {code} is not 0, 1 or 2"))
        self.stats.codes[key] = self.stats.codes.get(key, 0) + 1
        if elapsed > self.stats.slowest_s:
            self.stats.slowest_s = elapsed
            self.stats.slowest_note = f"{case.kind} {case.name} {len(case.data)} bytes {case.note}".strip()

    def _record(self, case: Any, exc: BaseException) -> None:
        where = _where(exc)
        signature = f"{type(exc).__name__} at {where}"
        crash = self.stats.crashes.get(signature)
        if crash is None:
            tb = "".join(traceback.format_exception(exc))
            crash = Crash(signature, type(exc).__name__, where, tb[-4000:], in_product=_in_product(exc))
            self.stats.crashes[signature] = crash
        crash.count += 1
        size = len(case.data)
        if crash.size < 0 or size < crash.size:
            folder = (
                self.out / "crashes" / f"{len(self.stats.crashes):02d}"
                if not crash.input
                else Path(crash.input).parent
            )
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            saved = _build(folder, case)
            crash.size = size
            crash.input = str(saved)
            crash.commands = self.fmt.commands(saved)

    def summary(self, elapsed: float, cpu_before: Any) -> dict[str, Any]:
        s = self.stats
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "format": self.fmt.name,
            "inputs": s.inputs,
            "cpu_s": round(cpu.ru_utime + cpu.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 1),
            "codes": s.codes,
            "slowest_s": round(s.slowest_s, 3),
            "slowest_input": s.slowest_note,
            "elapsed_s": round(elapsed, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "crashes": [vars(c) for c in s.crashes.values()],
        }


def _batch(runner: Runner, examples: int, seed: int | None, shrink: bool, explicit: bool) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hyp_seed

    cases = runner.fmt.explicit if explicit else []
    for case in cases:
        runner.run(case)
    strategy = runner.fmt.strategy()
    goal = examples + len(cases)
    attempt = 0
    # hypothesis stops early when it believes the space is exhausted; go on (new seed) until N inputs ran
    while runner.stats.inputs < goal:

        @settings(
            max_examples=goal - runner.stats.inputs,
            deadline=None,
            database=None,
            derandomize=seed is None and attempt == 0,
            phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @given(strategy)
        def fuzz(case: Any) -> None:
            runner.run(case, shrink=shrink)

        if seed is not None or attempt > 0:
            fuzz = hyp_seed((seed or 0) + attempt)(fuzz)
        before = runner.stats.inputs
        fuzz()
        attempt += 1
        if runner.stats.inputs == before:
            break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("formats", nargs="+")
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout-s", type=float, default=10.0)
    parser.add_argument("--mem-mib", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: derandomized)")
    parser.add_argument("--text-every", type=int, default=50, help="run the command functions every N inputs")
    parser.add_argument("--sample", type=int, default=0, help="save N of the inputs under OUT/FORMAT/sample")
    parser.add_argument("--no-explicit", action="store_true", help="skip the fixed cases (FIFOs, gzip bomb)")
    parser.add_argument(
        "--shrink", action="store_true", help="stop at the first crash and let hypothesis shrink"
    )
    args = parser.parse_args(argv)

    limit = args.mem_mib << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out_root: Path = args.out.resolve()
    out_root.mkdir(parents=True, exist_ok=True)
    _Clock.timeout_s = args.timeout_s
    signal.signal(signal.SIGPROF, _on_cpu_limit)
    signal.signal(signal.SIGALRM, _on_wall_alarm)
    failed = False
    for name in args.formats:
        out = out_root / name
        out.mkdir(exist_ok=True)
        # inputs are written and read ten thousand times: in memory when the machine has a tmpfs
        shm = Path("/dev/shm")
        work = Path(tempfile.mkdtemp(prefix="gpuwise-fuzz-", dir=shm if shm.is_dir() else out))
        atexit.register(shutil.rmtree, work, True)
        (out / "workdir").write_text(f"{work}\n")
        os.environ["GPUWISE_FUZZ_WORK"] = str(work)
        os.environ["GPUWISE_CONFIG_DIR"] = str(work / "config")
        os.environ["GPUWISE_DATA_DIR"] = str(work / "data")

        runner = Runner(
            name, out, work, args.timeout_s, args.text_every, sample=args.sample, examples=args.examples
        )
        started = time.perf_counter()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        _batch(runner, args.examples, args.seed, args.shrink, not args.no_explicit)
        summary = runner.summary(time.perf_counter() - started, cpu)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        print(json.dumps(summary), flush=True)
        failed = failed or bool(summary["crashes"])
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
