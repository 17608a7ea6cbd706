"""The suite runner: a task that fails becomes a result with its reason and the others still run; the text
output names every skipped task's reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuwise.bench.context import Context
from gpuwise.bench.cpu import CpuInfo
from gpuwise.bench.results import TaskResult
from gpuwise.bench.suite import Task, run_tasks, sizes_for
from gpuwise.cli.main import main


class StubCuda:
    class OutOfMemoryError(RuntimeError):
        pass


class StubTorch:
    """Only what the runner asks of torch when a task fails (the out-of-memory class)."""

    cuda = StubCuda
    OutOfMemoryError = StubCuda.OutOfMemoryError


def _context() -> Context:
    cpu = CpuInfo(model="test", cores=2, sockets=1, clock_ghz=2.0, flags=frozenset({"avx2", "fma"}))
    return Context(StubTorch(), "cpu", sizes_for("quick", "cpu"), cpu, None, 0, Path())


def _raises(exc: Exception) -> Any:
    def run(_ctx: Context) -> list[TaskResult]:
        raise exc

    return run


def test_a_failing_task_is_a_result_and_the_rest_still_run() -> None:
    tasks = [
        Task(
            ("oom_task",),
            "TFLOPS",
            _raises(StubTorch.OutOfMemoryError("CUDA out of memory. Tried to allocate")),
        ),
        Task(("disk_write", "disk_read"), "MB/s", _raises(PermissionError(13, "Permission denied"))),
        Task(("broken",), "GB/s", _raises(RuntimeError("no kernel image is available\nsecond line"))),
        Task(("fine",), "GB/s", lambda _ctx: [TaskResult(task="fine", unit="GB/s", value=1.5)]),
    ]
    started: list[str] = []
    results = run_tasks(_context(), tasks, on_start=lambda t: started.append(t.produces[0]))
    assert started == ["oom_task", "disk_write", "broken", "fine"]
    by_name = {r.task: r for r in results}
    assert list(by_name) == ["oom_task", "disk_write", "disk_read", "broken", "fine"]
    assert by_name["oom_task"].reason == "out of memory at this suite's sizes"
    assert by_name["disk_read"].reason is not None and "permission denied" in by_name["disk_read"].reason
    assert by_name["broken"].reason == "failed: RuntimeError: no kernel image is available"
    assert all(r.value is None and r.to_dict()["value"] is None for r in results[:-1])
    assert by_name["fine"].value == 1.5 and "reason" not in by_name["fine"].to_dict()


def test_text_output_names_each_skip_reason(
    torch_one_thread: Any, empty_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--device", "cpu", "--only", "gemm_fp8", "--only", "h2d_bandwidth", "--no-metadata"]
    assert main([*argv, "--config", str(empty_config)]) == 0
    out = capsys.readouterr().out
    assert "skipped h2d_bandwidth: no GPU" in out and "skipped gemm_fp8: fp8 on a CPU" in out
