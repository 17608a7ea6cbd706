"""docs/metrics.md names every metric the exporter serves (a new metric without a line there fails)."""

from __future__ import annotations

from pathlib import Path

from gpuwise.monitor.dcgm import DCGM_METRICS
from gpuwise.monitor.exporter import GPUWISE_METRICS

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_every_served_metric_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    names = [name for name, *_ in DCGM_METRICS] + list(GPUWISE_METRICS)
    assert [n for n in names if f"`{n}`" not in text] == []
