"""A finding (one diagnosis) and its severities: what every rule returns. Standard library only."""

from __future__ import annotations

from dataclasses import dataclass

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
