"""Which rows of a `--query-gpu` CSV belong to one poll, and which GPU each row is.

nvidia-smi stamps each GPU's row separately (about 1 ms apart), a CSV may carry no `index` column, and two
loggers may write one file. `number_unindexed_gpus` gives rows without an index one; `iter_snapshot_groups`
splits a time series into one group per instant; `busiest_per_gpu` picks one reading per GPU of a group.

Pure; standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace

from gpuwise.gpu.sample import Sample

__all__ = ["busiest_per_gpu", "iter_snapshot_groups", "number_unindexed_gpus"]

# Consecutive rows stamped closer than this are GPUs of one poll (nvidia-smi reads GPUs ~1 ms apart; the
# fastest loop people record with, `-lms 50`, is far slower).
_SAME_POLL_S = 0.02


def number_unindexed_gpus(samples: Sequence[Sample]) -> list[Sample]:
    """Samples in recording order that carry no GPU index (a CSV without an `index` column — NVIDIA's own
    example query has none — reads every row as GPU 0) get one; keying them all as GPU 0 would drop busy
    GPUs. A GPU's identity (PCI bus id, else UUID) numbers it in order of first appearance, since
    nvidia-smi lists GPUs in index order; without one, the rows of one poll (one stamp, or stamps a few ms
    apart as each GPU is read) are numbered by position."""
    identities: dict[str, int] = {}
    rows_at: dict[float, int] = {}
    prev: tuple[float, int] | None = None  # (timestamp, index) of the previous positional row
    out: list[Sample] = []
    for s in samples:
        identity = s.bus_id if isinstance(s.bus_id, str) and s.bus_id else s.uuid
        if isinstance(identity, str) and identity:
            index = identities.setdefault(identity.strip().upper(), len(identities))
        else:
            ts = s.timestamp_s
            if ts in rows_at:
                index = rows_at[ts]
            elif prev is not None and 0 < ts - prev[0] < _SAME_POLL_S:
                index = prev[1] + 1
            else:
                index = 0
            rows_at[ts] = index + 1
            prev = (ts, index)
        out.append(s if s.index == index else replace(s, index=index))
    return out


def iter_snapshot_groups(samples: Iterable[Sample], *, max_skew_s: float = 0.5) -> list[list[Sample]]:
    """Split time-ordered samples into one group per instant: a new group starts when an index repeats
    with another timestamp, or the timestamp moves on by more than ``max_skew_s`` (nvidia-smi stamps each
    GPU's row separately). Rows repeating a GPU at the very same stamp (two loggers writing one file) are
    readings of that instant and stay in its group, every one of them: a consumer that shows one row per
    GPU picks with `busiest_per_gpu`, and the idle policy counts any of them that is busy."""
    groups: list[list[Sample]] = []
    current: list[Sample] = []
    seen: dict[int, float] = {}  # GPU index -> the stamp of its first row in this group
    for s in samples:
        repeat = s.index in seen and seen[s.index] != s.timestamp_s
        if current and (repeat or s.timestamp_s - current[0].timestamp_s > max_skew_s):
            groups.append(current)
            current, seen = [], {}
        current.append(s)
        seen.setdefault(s.index, s.timestamp_s)
    if current:
        groups.append(current)
    return groups


def _activity_rank(s: Sample) -> tuple[int, float, float]:
    """How much a reading says "busy": a lost GPU, then a missing utilization (missing data counts as
    busy), then the higher utilization, then the more memory (a missing memory reading counts as held)."""
    util = s.util_gpu_pct
    mem = s.memory_used_bytes
    util_rank = float(util) if isinstance(util, int | float) and not isinstance(util, bool) else 101.0
    mem_rank = float(mem) if isinstance(mem, int | float) and not isinstance(mem, bool) else math.inf
    return (1 if s.lost else 0, util_rank, mem_rank)


def busiest_per_gpu(samples: Iterable[Sample]) -> list[Sample]:
    """One reading per GPU index, in order of first appearance: of several readings of one GPU at one
    instant (two loggers writing one file), the busiest whole row — never a blend of rows, and never the
    idle one when another says busy."""
    best: dict[int, Sample] = {}
    for s in samples:
        kept = best.get(s.index)
        if kept is None or _activity_rank(s) > _activity_rank(kept):
            best[s.index] = s
    return list(best.values())
