"""Issue 15's loop end to end: `gpuwise bench task` measures a small user task that does a known amount of
work per unit, and `gpuwise plan` on a `task = "measured"` workload built on that result ranks offers,
rejects GPUs below the measured peak memory, and names the measurement in its assumptions.

The GPU side of the measurement is a constructed one-GPU nvidia-smi poll replayed through the probe layer
(this machine has no GPU): an H100 at 95 % utilization holding 30 GiB."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpuwise.cli.main import main

# 5 units of work, each a fixed amount of arithmetic, announced as the task does them
WORK = (
    "import json\n"
    "for _ in range(5):\n"
    "    sum(i * i for i in range(200_000))\n"
    "    print(json.dumps({'gpuwise_units': 1}), flush=True)\n"
)
HEADER = (
    "timestamp, index, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
    "memory.total [MiB]"
)


def _poll(seconds: int = 5) -> str:
    rows = [
        f"2026/08/01 04:00:{i:02d}.000, 0, NVIDIA H100 80GB HBM3, 95 %, 30 %, {30 * 1024} MiB, 81559 MiB"
        for i in range(seconds)
    ]
    return "\n".join([HEADER, *rows]) + "\n"


def test_bench_task_result_plans_every_offer_that_holds_its_peak(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "h100.csv"
    recording.write_text(_poll(), encoding="utf-8")
    result = tmp_path / "task.json"
    measured = main(
        [
            "bench", "task", "--unit", "frames", "--replay", str(recording), "--interval", "0.05",
            "--metadata-url", "http://127.0.0.1:9", "--out", str(result), "--", sys.executable, "-c", WORK,
        ]
    )  # fmt: skip
    capsys.readouterr()
    assert measured == 0
    task = json.loads(result.read_text(encoding="utf-8"))["task"]
    assert task["units"] == 5 and task["unit"] == "frames" and task["bound"] == "compute"
    per_unit = task["seconds_per_unit"]

    workload = tmp_path / "frames.toml"
    workload.write_text(
        'name = "frames"\ntask = "measured"\n\n[measured]\nresult = "task.json"\nunits = 100000\n'
        'unit = "frames"\n\n[constraints]\ngpus = ["H100", "A100-80GB", "L40S", "L4", "A10G"]\n',
        encoding="utf-8",
    )
    assert main(["plan", str(workload), "--top", "1000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    options = doc["options"]
    assert options
    # 24 GiB cards cannot hold the 30 GiB the task peaked at
    assert {o["gpu"] for o in options} <= {"H100", "A100-80GB", "L40S"}
    assert doc["rejected"].get("does_not_fit", 0) > 0
    assert [o["cost_usd"] for o in options] == sorted(o["cost_usd"] for o in options)
    h100 = [o for o in options if o["gpu"] == "H100" and o["gpus_per_node"] == 1]
    if h100:  # on the measured GPU the time is the measurement × the work (set-up hours come on top)
        assert h100[0]["hours"] >= 100000 * per_unit / 3600 * 0.99
    for o in options:
        text = " ".join(o["assumptions"])
        assert "task.json" in text and "H100" in text
