"""All-reduce across this machine's GPUs: one process per GPU (torch.multiprocessing), NCCL, rendezvous on
127.0.0.1. Bus bandwidth follows nccl-tests (doc/PERFORMANCE.md): algbw = bytes / time,
busbw = algbw × 2(n−1)/n, which compares with the link's one-direction bandwidth whatever n is.
"""

from __future__ import annotations

import socket
import time
from typing import Any

MIB = 2**20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(  # noqa: PLR0917 - torch.multiprocessing passes arguments positionally
    rank: int, world: int, port: int, mib: int, reps: int, out: Any
) -> None:  # pragma: no cover - GPU
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        x = torch.ones(mib * MIB // 4, dtype=torch.float32, device="cuda")
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(max(1, reps)):
            t0 = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        if rank == 0:
            out.put(sorted(times)[len(times) // 2])
    finally:
        dist.destroy_process_group()


def measure_allreduce(gpus: int, mib: int, reps: int) -> tuple[float, float]:  # pragma: no cover - GPU
    """(bus bandwidth GB/s, median seconds per all-reduce)."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(  # type: ignore[attr-defined,no-untyped-call,unused-ignore]  # torch's own export
        _worker, args=(gpus, _free_port(), mib, reps, queue), nprocs=gpus, start_method="spawn"
    )
    seconds = float(queue.get())
    algbw = mib * MIB / seconds / 1e9
    return algbw * 2 * (gpus - 1) / gpus, seconds
