"""`gpuwise exporter` (placeholder until the capability lands)."""

from __future__ import annotations


def exporter() -> None:
    """(exporter: not yet available)"""
