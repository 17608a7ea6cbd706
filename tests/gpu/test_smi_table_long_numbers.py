"""nvidia-smi tables whose GPU index or pid runs to thousands of digits (found by tests/fuzz): int()
refuses over 4,300 digits with a ValueError, so such a row must be damage the parser reports or skips,
never a traceback."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from gpuwise.errors import ReplayError
from gpuwise.gpu.replay import parse_recording_text

HUGE = "9" * 5000


@pytest.fixture(scope="module")
def table(smi_fixtures: Path) -> str:
    return (smi_fixtures / "table" / "8x-h100__idle__550.90.07.txt").read_text(encoding="utf-8")


def _parse(text: str) -> None:
    # refusing it as no recording is fine; any other exception is the bug
    with contextlib.suppress(ReplayError):
        parse_recording_text(text)


def test_a_process_row_with_a_5000_digit_pid(table: str) -> None:
    empty = next(line for line in table.splitlines() if "No running processes found" in line)
    row = f"|    0   N/A  N/A   {HUGE}      C   python                                   1024MiB |"
    _parse(table.replace(empty, row))


def test_a_gpu_index_of_5000_digits(table: str) -> None:
    first = next(line for line in table.splitlines() if line.startswith("|   0  "))
    _parse(table.replace(first, first.replace("|   0  ", f"|   {HUGE}  ", 1)))
