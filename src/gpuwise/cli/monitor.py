"""`gpuwise monitor` (placeholder until the capability lands)."""

from __future__ import annotations


def monitor() -> None:
    """(monitor: not yet available)"""
