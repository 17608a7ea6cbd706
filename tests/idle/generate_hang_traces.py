"""Generate the CONSTRUCTED hang traces in tests/fixtures/idle_hang/ (reproducible: a fixed seed).

    .venv/bin/python tests/idle/generate_hang_traces.py   # rewrite the fixtures

No public time series of a hung job was found (issue 17's search: NCCL, PyTorch, Horovod, TensorFlow and
CuPy threads hold one `nvidia-smi` reading each), so these traces are built from those readings and are
labelled as constructed. Each is written as `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,
utilization.memory,memory.used,memory.total,power.draw,clocks.sm --format=csv -l 30` prints it (without
the utilization.memory column where the header says so). `manifest.json` says what each must give.

The figures used, and where they come from:
* a deadlocked collective spins at 100 % with 0 % memory utilization (NVIDIA/nccl#2079) at ~70 W
  (NVIDIA/nccl#968: "GPU util is 100% but the power consumption is pretty low (~70W)");
* the rank that caused it sits at 0 % while the others spin (Theano/libgpuarray#387, NVIDIA/nccl#1033);
* a working H100 job draws 480–690 W at 93–100 %, with its memory busy (the training shape of
  tests/idle/generate_traces.py); a power-capped one is pinned at its 700-W limit.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "idle_hang"
H100_TOTAL_MIB = 81559
HEADER = (
    "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], "
    "power.draw [W], clocks.current.sm [MHz]"
)
HEADER_NO_MEMUTIL = (
    "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W], "
    "clocks.current.sm [MHz]"
)
START = datetime(2026, 6, 2, 1, 0, 0, tzinfo=UTC)
INTERVAL_S = 30

# (util %, memory util %, memory used MiB, power W, SM clock MHz)
Row = tuple[float, float, float, float, float]
Shape = Callable[[random.Random, int, float], Row]


@dataclass(frozen=True)
class HangTrace:
    name: str
    description: str
    gpus: int
    duration_s: float
    shape: Shape
    header: str
    manifest: dict[str, object]


def _train(rng: random.Random) -> Row:
    return (rng.uniform(93, 100), rng.uniform(25, 45), 71230 + rng.uniform(-20, 20), rng.uniform(480, 690),
            rng.uniform(1700, 1980))  # fmt: skip


def _deadlock(rng: random.Random, gpu: int, t: float) -> Row:
    if t < 40 * 60:
        return _train(rng)
    if gpu == 5:  # the rank that left the collective: idle, memory held
        return (0.0, 0.0, 71230.0, rng.uniform(118, 122), 1980.0)
    return (100.0, 0.0, 71230.0, rng.uniform(69.5, 71.0), 1980.0)


def _capped(rng: random.Random, gpu: int, t: float) -> Row:
    return (
        100.0,
        rng.uniform(35, 45),
        71230 + rng.uniform(-10, 10),
        rng.uniform(698, 700),
        rng.uniform(1740, 1770),
    )


def traces() -> list[HangTrace]:
    return [
        HangTrace(
            "nccl_deadlock_8x_h100_30s",
            "CONSTRUCTED. 8×H100: training for 40 min, then a deadlocked all-reduce: 7 GPUs spin at 100 % / "
            "0 % memory utilization / ~70 W, rank 5 sits at 0 % with its memory held, for 150 min",
            8,
            190 * 60,
            _deadlock,
            HEADER,
            {
                "policy_stop": None,
                "hang_since_s": 40 * 60,
                "hang_flagged_s": 70 * 60,
                "hang_stop_s": 80 * 60,
            },
        ),
        HangTrace(
            "capped_training_1x_h100_30s",
            "CONSTRUCTED. 1×H100: 3 h of training pinned at its 700-W power limit (flat power and clock) "
            "with memory utilization 35–45 %: a live job, not a hang",
            1,
            180 * 60,
            _capped,
            HEADER,
            {"policy_stop": None, "hang_since_s": None},
        ),
        HangTrace(
            "capped_training_no_memutil_1x_h100_30s",
            "CONSTRUCTED. The capped training above logged without the utilization.memory column: from "
            "the GPU alone it looks like a hang; only its files' progress tells it apart",
            1,
            180 * 60,
            _capped,
            HEADER_NO_MEMUTIL,
            {"policy_stop": None, "hang_since_s": 0, "needs_progress": True},
        ),
    ]


def _ts(t: datetime) -> str:
    return t.strftime("%Y/%m/%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def render(trace: HangTrace) -> str:
    rng = random.Random(trace.name)
    lines = [trace.header]
    for k in range(int(trace.duration_s // INTERVAL_S) + 1):
        stamp = START + timedelta(seconds=k * INTERVAL_S, milliseconds=rng.randint(0, 9))
        for gpu in range(trace.gpus):
            util, mem_util, mem, power, clock = trace.shape(rng, gpu, k * INTERVAL_S)
            mu = f" {mem_util:.0f} %," if trace.header == HEADER else ""
            lines.append(
                f"{_ts(stamp)}, {gpu}, {util:.0f} %,{mu} {mem:.0f} MiB, {H100_TOTAL_MIB} MiB, {power:.2f} W, "
                f"{clock:.0f} MHz"
            )
    return "\n".join(lines) + "\n"


def build() -> dict[str, str]:
    files = {f"{t.name}.csv": render(t) for t in traces()}
    manifest = {f"{t.name}.csv": {"description": t.description, **t.manifest} for t in traces()}
    files["manifest.json"] = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    return files


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in build().items():
        (OUT / name).write_text(text, encoding="utf-8")
