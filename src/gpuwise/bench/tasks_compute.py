"""Dense GEMM per dtype, device memory bandwidth (copy, triad), host↔device copies and all-reduce.

Each returns a TaskResult against its physical ceiling. Conventions: a GEMM of n×n by n×n is 2·n³ FLOPs;
memory bandwidth counts bytes read plus bytes written as STREAM does (copy 2, triad 3 arrays' bytes per
pass, write-allocate traffic not counted); all-reduce bus bandwidth is nccl-tests' busbw =
size / time × 2(n−1)/n. GB is 10⁹ bytes.
"""

from __future__ import annotations

import time
from typing import Any

from gpuwise.bench.context import Context
from gpuwise.bench.results import TaskResult, skipped
from gpuwise.bench.timing import time_calls

MIB = 2**20
_DTYPES = {
    "fp32": "float32",
    "tf32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp8": "float8_e4m3fn",
}


def gemm(ctx: Context, dtype: str) -> TaskResult:
    """TFLOPS of one n×n×n matrix multiply in `dtype` (fp8 through torch._scaled_mm, Hopper/Ada and later)."""
    torch, started = ctx.torch, time.perf_counter()
    task, n = f"gemm_{dtype}", ctx.sizes.gemm_n
    if not ctx.cuda and dtype not in ("fp32", "bf16"):
        why = "a tensor-core format" if dtype in ("tf32", "fp8") else "not a CPU GEMM format worth timing"
        return skipped(task, "TFLOPS", f"{dtype} on a CPU: {why}; the CPU suite times fp32 and bf16", n=n)
    if dtype == "fp8" and torch.cuda.get_device_capability() < (8, 9):
        return skipped(task, "TFLOPS", "fp8 needs compute capability 8.9 or newer (Ada, Hopper)", n=n)
    if not ctx.cuda and dtype == "bf16" and not ctx.cpu.has_bf16:
        n = max(256, n // 4)  # emulated bf16 runs far below the fp32 rate: a smaller product keeps the cap
    a = torch.randn(n, n, device=ctx.device).to(getattr(torch, _DTYPES[dtype]))
    b = torch.randn(n, n, device=ctx.device).to(getattr(torch, _DTYPES[dtype]))
    if ctx.cuda:
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    if dtype == "fp8":
        b = b.t().contiguous().t()  # _scaled_mm wants the second operand column-major
        one = torch.tensor(1.0, device=ctx.device)

        def step() -> Any:
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    else:

        def step() -> Any:
            return a @ b

    try:
        s = ctx.sizes
        timing = time_calls(
            step, warmup=s.warmup, repetitions=s.repetitions, max_seconds=s.cap_s, sync=ctx.sync
        )
    finally:
        if ctx.cuda:
            torch.backends.cuda.matmul.allow_tf32 = False
    peak, source = ctx.peak_tflops(dtype)
    return TaskResult(
        task=task,
        unit="TFLOPS",
        value=2 * n**3 / timing.median_s / 1e12,
        peak=peak,
        peak_source=source,
        seconds=time.perf_counter() - started,
        timing=timing,
        params={"n": n, "dtype": dtype, "device": ctx.device},
    )


def memory_bandwidth(ctx: Context, kernel: str) -> TaskResult:
    """GB/s of a device-memory copy (b = a) or triad (a = b + s·c) over arrays larger than the caches."""
    torch, started = ctx.torch, time.perf_counter()
    task = "memory_bandwidth" if kernel == "copy" else "memory_bandwidth_triad"
    n = ctx.sizes.memory_mib * MIB // 4
    a = torch.empty(n, dtype=torch.float32, device=ctx.device).fill_(1.0)
    b = torch.empty_like(a).fill_(2.0)
    c = torch.empty_like(a).fill_(0.5)
    if kernel == "copy":

        def step() -> Any:
            return b.copy_(a)

        arrays = 2
    else:

        def step() -> Any:
            return torch.add(b, c, alpha=3.0, out=a)

        arrays = 3
    s = ctx.sizes
    timing = time_calls(step, warmup=s.warmup, repetitions=s.repetitions, max_seconds=s.cap_s, sync=ctx.sync)
    peak, source = ctx.peak_bandwidth_gbs()
    return TaskResult(
        task=task,
        unit="GB/s",
        value=arrays * n * 4 / timing.median_s / 1e9,
        peak=peak,
        peak_source=source,
        seconds=time.perf_counter() - started,
        timing=timing,
        params={"kernel": kernel, "array_mib": s.memory_mib, "bytes_counted": f"{arrays} arrays per pass"},
    )


def host_device(ctx: Context, direction: str, pinned: bool) -> TaskResult:
    """GB/s of one host→device (h2d) or device→host (d2h) copy, from pinned or pageable host memory."""
    torch, started = ctx.torch, time.perf_counter()
    task = f"{direction}_bandwidth" + ("" if pinned else "_pageable")
    mib = ctx.sizes.transfer_mib
    if not ctx.cuda:
        return skipped(task, "GB/s", "no GPU: host↔device copies need a CUDA device", mib=mib, pinned=pinned)
    host = torch.empty(mib * MIB, dtype=torch.uint8, pin_memory=pinned)
    dev = torch.empty(mib * MIB, dtype=torch.uint8, device="cuda")
    src, dst = (host, dev) if direction == "h2d" else (dev, host)

    def step() -> Any:
        return dst.copy_(src, non_blocking=pinned)

    s = ctx.sizes
    timing = time_calls(step, warmup=s.warmup, repetitions=s.repetitions, max_seconds=s.cap_s, sync=ctx.sync)
    peak, source = ctx.peak_pcie_gbs()
    return TaskResult(
        task=task,
        unit="GB/s",
        value=mib * MIB / timing.median_s / 1e9,
        peak=peak,
        peak_source=source,
        seconds=time.perf_counter() - started,
        timing=timing,
        params={"mib": mib, "pinned": pinned},
    )


def allreduce(ctx: Context) -> TaskResult:
    """NCCL all-reduce bus bandwidth across this machine's GPUs (one process per GPU, on 127.0.0.1)."""
    started = time.perf_counter()
    task, mib = "allreduce_bus_bandwidth", ctx.sizes.allreduce_mib
    if not ctx.cuda or ctx.gpus < 2:
        return skipped(task, "GB/s", f"all-reduce needs 2 or more GPUs; this machine has {ctx.gpus}", mib=mib)
    torch = ctx.torch
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        return skipped(task, "GB/s", "this torch build has no NCCL", mib=mib)
    from gpuwise.bench.allreduce import measure_allreduce

    busbw, seconds_per_op = measure_allreduce(ctx.gpus, mib, ctx.sizes.repetitions)
    fig = ctx.gpu_spec.nvlink_bidir_gbs if ctx.gpu_spec is not None else None
    peak = fig.value / 2 if fig is not None and fig.value else None
    source = f"NVLink, one direction: {fig.source}" if peak and fig is not None else "no NVLink figure"
    return TaskResult(
        task=task,
        unit="GB/s",
        value=busbw,
        peak=peak,
        peak_source=source,
        seconds=time.perf_counter() - started,
        params={"mib": mib, "gpus": ctx.gpus, "seconds_per_op": seconds_per_op, "rule": "nccl-tests busbw"},
    )
