"""`gpuwise idle replay` on traces whose rows are duplicated, shuffled and interleaved (issue 10).

Two `nvidia-smi -l` loggers appending to one file give every GPU two rows per instant, sometimes at the very
same stamp, and they need not agree. The reader once kept one row per (timestamp, index) and the policy
stopped a machine while the other row said 97-100 % busy. The invariant, through the real CLI: the replay
never stops while any row at that time (or within the window before it) shows a busy GPU.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwise.cli.main import main
from gpuwise.gpu.smi_csv import parse_trace_time

HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB]"
START = datetime(2026, 5, 4, 21, 0, 0, tzinfo=UTC)
STEP_S = 10.0
# small windows so that short generated traces do reach a stop: window 3 min, warning 1 min
OPTIONS = ["--window-min", "3", "--held-window-min", "6", "--warn-min", "1"]
WINDOW_S = 180.0

# per (poll, GPU): is the first logger's reading busy, and does a second logger add one (busy or not)
CELL = st.tuples(
    st.sampled_from([False] * 12 + [True]),  # the first logger: mostly idle
    st.sampled_from(["none", "none", "idle", "busy"]),  # the second logger's row, if any
)


def _stamp(t: datetime) -> str:
    return t.strftime("%Y/%m/%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def _row(when: datetime, gpu: int, busy: bool, rng: random.Random) -> tuple[str, float, bool]:
    util = rng.randint(97, 100) if busy else 0
    return f"{_stamp(when)}, {gpu}, {util} %, 2 MiB", when.timestamp(), busy


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gpus=st.integers(1, 3),
    cells=st.lists(st.lists(CELL, min_size=3, max_size=3), min_size=20, max_size=70),
    offset_ms=st.sampled_from([0, 0, 3, 400]),  # the second logger's stamps: the same, or a little later
    shuffle=st.booleans(),
    repeat_header=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_replay_never_stops_while_any_row_shows_a_busy_gpu(  # noqa: PLR0917 - hypothesis inputs
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    gpus: int,
    cells: list[list[tuple[bool, str]]],
    offset_ms: int,
    shuffle: bool,
    repeat_header: bool,
    seed: int,
) -> None:
    rng = random.Random(seed)
    rows: list[tuple[str, float, bool]] = []
    for k, poll in enumerate(cells):
        when = START + timedelta(seconds=k * STEP_S)
        for gpu, (busy, second) in enumerate(poll[:gpus]):
            rows.append(_row(when + timedelta(milliseconds=gpu), gpu, busy, rng))
            if second != "none":
                later = when + timedelta(milliseconds=gpu + offset_ms)
                rows.append(_row(later, gpu, second == "busy", rng))
    lines = [r[0] for r in rows]
    if shuffle:
        rng.shuffle(lines)
    if repeat_header:  # a second logger started with `>>` prints its header mid-file
        lines.insert(rng.randrange(len(lines) + 1), HEADER)
    path = tmp_path / "two-loggers.csv"
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")

    assert main(["idle", "replay", str(path), "--json", *OPTIONS]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == len(rows)  # every row was read, none dropped
    if out["stop_at"] is None:
        return
    stop = parse_trace_time(out["stop_at"])
    assert stop is not None
    busy_at = [t for _, t, busy in rows if busy]
    # no busy row at the stop's instant, nor within the window before it
    assert not [t for t in busy_at if stop - WINDOW_S + 1.0 < t <= stop + 0.001], (out["reason"], busy_at)


def test_replay_of_two_disagreeing_loggers_at_one_stamp_is_busy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The red-team case in its smallest form: for an hour, every stamp has an idle row for GPU 0 first
    and a 98 % row after it. The reader kept the first row and the replay stopped after 60 min."""
    lines = [HEADER]
    for k in range(int(2 * 3600 / 30)):
        stamp = _stamp(START + timedelta(seconds=30 * k))
        lines += [f"{stamp}, 0, 0 %, 2 MiB", f"{stamp}, 0, 98 %, 2 MiB"]
    path = tmp_path / "dup.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["idle", "replay", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stop_at"] is None, out["reason"]
    assert out["samples"] == 2 * 240 and out["gpus"] == [0]
