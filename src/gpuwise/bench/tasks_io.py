"""Disk sequential write and read on a chosen folder, and data-loader throughput.

Disk: one file of `disk_mib` MiB written in 4 MiB blocks and fsync'ed (so the write reaches the device, not
only the page cache), then read back after asking the kernel to drop its cached pages
(posix_fadvise DONTNEED). The kernel may keep some of them anyway, and a network or overlay filesystem may
cache elsewhere: the read figure can be the cache's, and says so. The file is removed afterwards.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from gpuwise.bench.context import Context
from gpuwise.bench.results import TaskResult

MIB = 2**20
_BLOCK = 4 * MIB
READ_CAVEAT = (
    "read after fsync and posix_fadvise(DONTNEED); the kernel or a network filesystem may still serve "
    "some of it from a cache, so this can overstate the disk"
)


def _write(path: Path, total: int, block: bytes) -> float:
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        done = 0
        while done < total:
            done += os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def _read(path: Path) -> tuple[float, int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        t0 = time.perf_counter()
        got = 0
        while chunk := os.read(fd, _BLOCK):
            got += len(chunk)
        return time.perf_counter() - t0, got
    finally:
        os.close(fd)


def disk(ctx: Context) -> list[TaskResult]:
    """disk_write and disk_read in MB/s (10⁶ bytes per second) on ctx.disk_path."""
    started = time.perf_counter()
    total = ctx.sizes.disk_mib * MIB
    params: dict[str, Any] = {
        "path": str(ctx.disk_path),
        "mib": ctx.sizes.disk_mib,
        "block_mib": _BLOCK // MIB,
    }
    try:
        fd, name = tempfile.mkstemp(prefix=".gpuwise-bench-", dir=ctx.disk_path)
        os.close(fd)
    except OSError as exc:
        reason = f"cannot write in {ctx.disk_path}: {exc.strerror or exc}"
        return [
            TaskResult(task="disk_write", unit="MB/s", reason=reason, params=params),
            TaskResult(task="disk_read", unit="MB/s", reason=reason, params=params),
        ]
    path = Path(name)
    block = os.urandom(_BLOCK)  # incompressible: a compressing filesystem must not flatter the figure
    try:
        write_s = _write(path, total, block)
        read_s, got = _read(path)
    except OSError as exc:
        reason = f"disk I/O in {ctx.disk_path} failed: {exc.strerror or exc}"
        return [
            TaskResult(task="disk_write", unit="MB/s", reason=reason, params=params),
            TaskResult(task="disk_read", unit="MB/s", reason=reason, params=params),
        ]
    finally:
        path.unlink(missing_ok=True)
    seconds = time.perf_counter() - started
    no_peak = "no datasheet figure for an unknown disk"
    return [
        TaskResult(
            task="disk_write",
            unit="MB/s",
            value=total / write_s / 1e6,
            peak_source=no_peak,
            seconds=seconds,
            params={**params, "fsync": True},
        ),
        TaskResult(
            task="disk_read",
            unit="MB/s",
            value=got / read_s / 1e6,
            peak_source=no_peak,
            seconds=seconds,
            params={**params, "caveat": READ_CAVEAT},
        ),
    ]


class _SyntheticImages:
    """A map-style dataset that decodes nothing but does per-sample work a real pipeline does: make a uint8
    image, convert it to float and normalise it."""

    def __init__(self, torch: Any, count: int, size: int) -> None:
        self.torch, self.count, self.size = torch, count, size

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> Any:
        g = self.torch.Generator().manual_seed(i)
        img = self.torch.randint(0, 256, (3, self.size, self.size), dtype=self.torch.uint8, generator=g)
        return (img.float() / 255.0 - 0.5) / 0.25, i % 1000


def data_loader(ctx: Context) -> TaskResult:
    """Samples/s through torch's DataLoader with worker processes, batches of 32 (no model behind it)."""
    torch, started = ctx.torch, time.perf_counter()
    s = ctx.sizes
    workers = min(4, max(1, ctx.cpu.cores - 1))
    dataset = _SyntheticImages(torch, s.loader_samples, s.loader_image)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=32, num_workers=workers, pin_memory=ctx.cuda, persistent_workers=False
    )
    t0 = time.perf_counter()
    seen = 0
    deadline = t0 + s.cap_s
    for images, _ in loader:
        seen += int(images.shape[0])
        if time.perf_counter() > deadline:
            break
    elapsed = time.perf_counter() - t0  # includes starting the workers, as every epoch of a real job does
    return TaskResult(
        task="data_loader",
        unit="samples/s",
        value=seen / elapsed,
        peak_source="no ceiling: bounded by the CPU cores and the per-sample work",
        seconds=time.perf_counter() - started,
        params={
            "workers": workers,
            "batch": 32,
            "image": f"3×{s.loader_image}×{s.loader_image}",
            "samples": seen,
        },
    )
