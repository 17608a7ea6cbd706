"""`idle replay` on every GPU trace in tests/fixtures gives exactly the answers recorded before hang
detection and activity checks were added (tests/fixtures/idle_golden/replay.json, written by
record_replay_golden.py): same stops, same reasons, same idle stretches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

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
