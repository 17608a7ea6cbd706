"""The standard tasks, the suites' sizes, and the runner that turns a failing task into a result.

    quick     under 2 minutes on a CPU (tests and CI run it), under 3 on one GPU
    standard  under 10 minutes on one GPU; larger sizes, more repetitions

Each task is bounded by its repetitions and by `cap_s` seconds of timed work; one that fails (out of
memory, no NCCL, a folder it may not write) becomes a result with `value: null` and the reason, and the
others still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuwise.bench import tasks_compute as tc
from gpuwise.bench import tasks_io as tio
from gpuwise.bench import tasks_train as tt
from gpuwise.bench.context import Context, GptSize, Sizes
from gpuwise.bench.results import TaskResult
from gpuwise.errors import NotFoundError
from gpuwise.locale import _

SUITES = ("quick", "standard")

_SIZES: dict[tuple[str, str], Sizes] = {
    ("quick", "cpu"): Sizes(
        gemm_n=1024, memory_mib=64, transfer_mib=64, allreduce_mib=64, disk_mib=64, loader_samples=512,
        loader_image=32, gpt=GptSize(d_model=128, layers=2, heads=4, seq=64, batch=4, vocab=2048),
        cnn_width_div=8, cnn_image=32, cnn_batch=8, decode_batch=4, decode_context=256, decode_steps=16,
        warmup=1, repetitions=5, cap_s=1.5,
    ),
    ("standard", "cpu"): Sizes(
        gemm_n=2048, memory_mib=256, transfer_mib=256, allreduce_mib=256, disk_mib=512, loader_samples=4096,
        loader_image=64, gpt=GptSize(d_model=256, layers=4, heads=8, seq=256, batch=8, vocab=8192),
        cnn_width_div=4, cnn_image=112, cnn_batch=16, decode_batch=8, decode_context=1024, decode_steps=32,
        warmup=2, repetitions=10, cap_s=10.0,
    ),
    ("quick", "cuda"): Sizes(
        gemm_n=4096, memory_mib=512, transfer_mib=256, allreduce_mib=256, disk_mib=512, loader_samples=4096,
        loader_image=64, gpt=GptSize(d_model=768, layers=6, heads=12, seq=512, batch=8, vocab=32768),
        cnn_width_div=1, cnn_image=224, cnn_batch=32, decode_batch=8, decode_context=1024, decode_steps=32,
        warmup=3, repetitions=10, cap_s=5.0,
    ),
    ("standard", "cuda"): Sizes(
        gemm_n=8192, memory_mib=2048, transfer_mib=1024, allreduce_mib=1024, disk_mib=2048,
        loader_samples=16384, loader_image=64,
        gpt=GptSize(d_model=1024, layers=12, heads=16, seq=1024, batch=16, vocab=50304),
        cnn_width_div=1, cnn_image=224, cnn_batch=128, decode_batch=32, decode_context=2048, decode_steps=64,
        warmup=5, repetitions=30, cap_s=20.0,
    ),
}  # fmt: skip


def sizes_for(suite: str, device: str) -> Sizes:
    if suite not in SUITES:
        raise NotFoundError(_("suite"), suite, SUITES, fix=_("use --suite quick or --suite standard"))
    return _SIZES[(suite, device)]


@dataclass(frozen=True)
class Task:
    """One runnable entry; `produces` names the results it returns (disk returns a write and a read)."""

    produces: tuple[str, ...]
    unit: str
    run: Callable[[Context], list[TaskResult]]


def _one(fn: Callable[[Context], TaskResult]) -> Callable[[Context], list[TaskResult]]:
    return lambda ctx: [fn(ctx)]


TASKS: tuple[Task, ...] = (
    Task(("gemm_fp32",), "TFLOPS", _one(lambda c: tc.gemm(c, "fp32"))),
    Task(("gemm_tf32",), "TFLOPS", _one(lambda c: tc.gemm(c, "tf32"))),
    Task(("gemm_bf16",), "TFLOPS", _one(lambda c: tc.gemm(c, "bf16"))),
    Task(("gemm_fp16",), "TFLOPS", _one(lambda c: tc.gemm(c, "fp16"))),
    Task(("gemm_fp8",), "TFLOPS", _one(lambda c: tc.gemm(c, "fp8"))),
    Task(("memory_bandwidth",), "GB/s", _one(lambda c: tc.memory_bandwidth(c, "copy"))),
    Task(("memory_bandwidth_triad",), "GB/s", _one(lambda c: tc.memory_bandwidth(c, "triad"))),
    Task(("h2d_bandwidth",), "GB/s", _one(lambda c: tc.host_device(c, "h2d", pinned=True))),
    Task(("h2d_bandwidth_pageable",), "GB/s", _one(lambda c: tc.host_device(c, "h2d", pinned=False))),
    Task(("d2h_bandwidth",), "GB/s", _one(lambda c: tc.host_device(c, "d2h", pinned=True))),
    Task(("d2h_bandwidth_pageable",), "GB/s", _one(lambda c: tc.host_device(c, "d2h", pinned=False))),
    Task(("allreduce_bus_bandwidth",), "GB/s", _one(tc.allreduce)),
    Task(("disk_write", "disk_read"), "MB/s", tio.disk),
    Task(("data_loader",), "samples/s", _one(tio.data_loader)),
    Task(("train_step_transformer",), "tokens/s", _one(lambda c: tt.train_step_transformer(c, amp=True))),
    Task(
        ("train_step_transformer_fp32",), "tokens/s", _one(lambda c: tt.train_step_transformer(c, amp=False))
    ),
    Task(("train_step_cnn",), "images/s", _one(lambda c: tt.train_step_cnn(c, amp=True))),
    Task(("train_step_cnn_fp32",), "images/s", _one(lambda c: tt.train_step_cnn(c, amp=False))),
    Task(("llm_decode",), "tokens/s", _one(tt.llm_decode)),
)
TASK_NAMES = tuple(name for t in TASKS for name in t.produces)


def select_tasks(only: list[str] | None) -> list[Task]:
    """Every task, or those that produce one of the names in `only` (an unknown name is bad input)."""
    if not only:
        return list(TASKS)
    for name in only:
        if name not in TASK_NAMES:
            raise NotFoundError(
                _("task"), name, TASK_NAMES, fix=_("see `gpuwise bench --help` for the task names")
            )
    return [t for t in TASKS if set(t.produces) & set(only)]


def _failure_reason(ctx: Context, exc: BaseException) -> str:
    oom = getattr(ctx.torch, "OutOfMemoryError", None) or getattr(ctx.torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return "out of memory at this suite's sizes"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"failed: {type(exc).__name__}: {first[:300]}"


def run_tasks(
    ctx: Context,
    tasks: list[Task],
    *,
    on_start: Callable[[Task], None] | None = None,
    on_done: Callable[[Task, list[TaskResult]], None] | None = None,
) -> list[TaskResult]:
    """Run each task in turn; an exception becomes a result with its reason for every name it produces."""
    results: list[TaskResult] = []
    for task in tasks:
        if on_start is not None:
            on_start(task)
        started = time.perf_counter()
        try:
            got = task.run(ctx)
        except Exception as exc:  # one task's failure must not cost the others their results
            reason = _failure_reason(ctx, exc)
            spent = time.perf_counter() - started
            got = [
                TaskResult(task=name, unit=task.unit, reason=reason, seconds=spent) for name in task.produces
            ]
        finally:
            _release(ctx)
        results.extend(got)
        if on_done is not None:
            on_done(task, got)
    return results


def _release(ctx: Context) -> None:
    """Give the GPU memory of the task back before the next (a CPU's is freed as its tensors go)."""
    if ctx.cuda:
        import gc

        gc.collect()
        ctx.torch.cuda.empty_cache()


def framework(torch: Any) -> dict[str, Any]:
    return {
        "framework": f"torch {torch.__version__}",
        "torch_cuda": getattr(torch.version, "cuda", None),
        "torch_threads": torch.get_num_threads(),
    }
