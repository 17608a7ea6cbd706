"""`gpuwise estimate` (placeholder until the capability lands)."""

from __future__ import annotations


def estimate() -> None:
    """(estimate: not yet available)"""
