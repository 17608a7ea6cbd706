"""Whether the recording being replayed (`gpuwise doctor --replay`) was read completely.

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

from gpuwise.doctor.facts import Facts
from gpuwise.doctor.rules.finding import Finding, ok_finding
from gpuwise.doctor.rules.fixes import FIX
from gpuwise.doctor.tables import Tables


def check_replay(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.replay_path is None and not facts.problems:
        return []
    found = [
        Finding(
            "replay.unparsed",
            "warn",
            f"Could not parse part of the recording ({problem.source})",
            problem.message,
            FIX["replay.unparsed"],
        )
        for problem in facts.problems
    ]
    return found or [ok_finding("replay.unparsed", "Recording parsed completely", facts.replay_path or "")]
