"""Whether the recording being replayed (`gpuwise doctor --replay`) was read completely.

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

from gpuwise.doctor.facts import Facts
from gpuwise.doctor.rules.finding import Finding, ok_finding, tr
from gpuwise.doctor.rules.fixes import FIX
from gpuwise.doctor.tables import Tables
from gpuwise.locale import _


def check_replay(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.replay_path is None and not facts.problems:
        return []
    found = [
        Finding(
            "replay.unparsed",
            "warn",
            _("Could not parse part of the recording ({source})").format(source=problem.source),
            problem.message,
            tr(FIX["replay.unparsed"]),
        )
        for problem in facts.problems
    ]
    return found or [ok_finding("replay.unparsed", _("Recording parsed completely"), facts.replay_path or "")]
