"""A finding (one diagnosis) and its severities: what every rule returns. Standard library only.

A finding's title, evidence and fix are in the user's language (`_()` when the rule runs); `gpuwise doctor
--json` runs the rules in English, so the JSON never changes with the language.
"""

from __future__ import annotations

from dataclasses import dataclass

# an alias: the catalog's extractor rightly refuses `_(variable)` (there is no text in it for the catalog)
from gpuwise.locale import _ as _translate

SEVERITIES = ("ok", "info", "warn", "error")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Finding:
    """One diagnosis (docs/json.md)."""

    id: str
    severity: str  # "ok" | "info" | "warn" | "error"
    title: str
    evidence: str
    fix: str


def ok_finding(rule_id: str, title: str, evidence: str) -> Finding:
    """The check ran and found nothing wrong (shown only with --all)."""
    return Finding(rule_id, "ok", title, evidence, "")


def tr(text: str) -> str:
    """A text marked with N_() where it was defined (fixes.py's tables), in the user's language."""
    return _translate(text)
