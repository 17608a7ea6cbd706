"""A poll that reads one GPU twice, first busy-flat then idle (a merged or repeated recording), crashed the
hang detector with a KeyError (found by the fuzz suite on a generated CSV). Replayed through the CLI, as a
user would."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.cli.main import main

HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]\n"


def _row(t: str, gpu: int, util: int, watts: float) -> str:
    return f"2026/05/04 21:{t}.000, {gpu}, {util} %, 2 MiB, 81559 MiB, {watts:.2f} W\n"


def test_a_gpu_read_twice_in_one_poll_does_not_crash_the_hang_detector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = []
    for minute in range(6):
        t = f"{minute:02d}:00"
        rows += [_row(t, 0, 0, 70.0), _row(t, 1, 99, 650.0), _row(t, 1, 0, 71.0)]
    trace = tmp_path / "dup.csv"
    trace.write_text(HEADER + "".join(rows), encoding="utf-8")
    assert main(["idle", "replay", str(trace), "--json"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out.startswith("{")
