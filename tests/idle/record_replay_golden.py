"""Record `gpuwise idle replay --json` (default options) for every GPU trace in tests/fixtures.

    .venv/bin/python tests/idle/record_replay_golden.py   # rewrite tests/fixtures/idle_golden/replay.json

The file was first written on 2026-12-01 from the code as it stood before hang detection and user activity
checks were added (issue 17, items 3 and 4), so `test_idle_replay_golden.py` shows those additions left
every stop exactly where it was. Rewrite it only for a change that is meant to move a stop, and say so in
the commit.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuwise.idle.replay import replay_trace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GOLDEN = FIXTURES / "idle_golden" / "replay.json"
# every CSV under tests/fixtures that is a GPU trace (the catalog's CSVs are price lists)
TRACE_DIRS = ("idle", "recordings/traces", "monitor")
# the keys `idle replay --json` printed when the golden file was recorded; later keys are not compared
KEYS = (
    "stop_at",
    "reason",
    "samples",
    "observations",
    "gpus",
    "first_sample",
    "last_sample",
    "stop_after_s",
    "max_idle_min",
    "idle_stretches",
)


def trace_files() -> list[Path]:
    return sorted(p for d in TRACE_DIRS for p in (FIXTURES / d).glob("*.csv"))


def record(path: Path) -> dict[str, object]:
    out = replay_trace(path).to_json()
    return {k: out[k] for k in KEYS}


def main() -> None:
    golden = {str(p.relative_to(FIXTURES)): record(p) for p in trace_files()}
    GOLDEN.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
