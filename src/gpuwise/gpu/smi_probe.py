"""Fallback live probe: runs `nvidia-smi -q -x` (with a timeout) and parses its XML.

Used only when the NVML library cannot be loaded; one subprocess per read, so it is slower than NVML.
The runner is injectable so tests drive it with recorded outputs. Standard library only.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gpuwise.errors import GpuError
from gpuwise.gpu import smi_errors, smi_xml
from gpuwise.gpu.sample import Snapshot

__all__ = ["RunResult", "SmiProbe", "find_nvidia_smi"]


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str], float], RunResult]


def _run(argv: Sequence[str], timeout_s: float) -> RunResult:
    done = subprocess.run(  # a fixed argv, no shell
        list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
    )
    return RunResult(done.returncode, done.stdout, done.stderr)


def find_nvidia_smi() -> str | None:
    return shutil.which("nvidia-smi")


class SmiProbe:
    """Reads all GPUs with `nvidia-smi -q -x`. A failure message (no driver, no devices, a lost GPU) is
    returned as a Snapshot with `errors` set, like a replayed error text; a hang is a GpuError."""

    def __init__(
        self,
        program: str = "nvidia-smi",
        *,
        clock: Callable[[], float] = time.time,
        timeout_s: float = 10.0,
        runner: Runner = _run,
    ) -> None:
        self.program = program
        self._clock = clock
        self.timeout_s = timeout_s
        self._runner = runner
        self.last_problems: list[str] = []

    def read(self) -> Snapshot:
        now = self._clock()
        try:
            result = self._runner([self.program, "-q", "-x"], self.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise GpuError(
                f"nvidia-smi did not answer within {self.timeout_s:g} s",
                why="the driver is hung or a GPU is resetting",
                fix="check the kernel log (sudo dmesg | grep -i xid) and nvidia-smi by hand",
            ) from exc
        except OSError as exc:
            raise GpuError(
                f"cannot run {self.program}", why=str(exc), fix="check the NVIDIA driver install"
            ) from exc
        out = result.stdout
        if smi_xml.looks_like_xml(out):
            parsed = smi_xml.parse_xml(out, source="nvidia-smi -q -x", default_timestamp_s=now)
        else:
            text = (
                out.strip() or result.stderr.strip() or f"nvidia-smi exited with status {result.returncode}"
            )
            parsed = smi_errors.parse_error_text(text, source="nvidia-smi -q -x", default_timestamp_s=now)
        self.last_problems = [str(p) for p in parsed.problems]
        # a live read is stamped with the probe's clock, not nvidia-smi's second-resolution text
        snap = parsed.snapshot
        return replace(snap, samples=tuple(replace(s, timestamp_s=now) for s in snap.samples))

    def close(self) -> None:
        return None
