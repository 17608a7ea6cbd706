"""`gpuwise doctor` (placeholder until the capability lands)."""

from __future__ import annotations


def doctor() -> None:
    """(doctor: not yet available)"""
