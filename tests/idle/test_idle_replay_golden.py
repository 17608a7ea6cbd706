"""`idle replay` on every GPU trace in tests/fixtures gives exactly the answers recorded before hang
detection and activity checks were added (tests/fixtures/idle_golden/replay.json, written by
record_replay_golden.py): same stops, same reasons, same idle stretches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpuwise.idle.hang import HangConfig
from gpuwise.idle.replay import replay_trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import record_replay_golden as golden
finally:
    sys.path.pop(0)

GOLDEN = json.loads(golden.GOLDEN.read_text(encoding="utf-8"))


def test_golden_covers_every_trace() -> None:
    assert sorted(GOLDEN) == sorted(str(p.relative_to(golden.FIXTURES)) for p in golden.trace_files())
    assert len(GOLDEN) >= 19


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_replay_unchanged(name: str) -> None:
    assert golden.record(golden.FIXTURES / name) == GOLDEN[name]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_stop_on_hang_stops_no_job_in_the_fixtures(name: str) -> None:
    """Even with stop_on_hang and no progress assumed (a recording shows no files), hang detection finds
    no possible hang in any fixture trace and moves no stop."""
    out = replay_trace(golden.FIXTURES / name, hang=HangConfig(stop=True)).to_json()
    assert out["possible_hangs"] == []
    assert {k: out[k] for k in golden.KEYS} == GOLDEN[name]
