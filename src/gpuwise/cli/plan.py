"""`gpuwise plan` (placeholder until the capability lands)."""

from __future__ import annotations


def plan() -> None:
    """(plan: not yet available)"""
