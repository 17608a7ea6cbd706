"""The exporter's own renderer writes exactly what prometheus-client writes (text format and OpenMetrics),
on every recorded GPU and on label values and readings chosen to break escaping and number formatting;
what it cannot render the same way it refuses rather than render differently."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from monitor_fakes import FakeProbe, gpu, snap
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.utils import floatToGoString

from gpuwise.gpu.probe import open_probe
from gpuwise.gpu.sample import GpuProcess
from gpuwise.monitor.exporter import GpuCollector
from gpuwise.monitor.exposition import go_float, render_openmetrics, render_text
from gpuwise.monitor.scrape import COUNTERS, counter_types

RECORDINGS = Path(__file__).resolve().parent.parent / "fixtures"


class _Families:
    """A registry stand-in: prometheus-client's generate_latest only calls collect()."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def assert_same_as_prometheus_client(families: list[Metric]) -> None:
    text = counter_types(generate_latest(_Families(families)))  # type: ignore[arg-type]
    assert render_text(families, COUNTERS) == text
    assert render_openmetrics(families) == openmetrics_latest(_Families(families))


def _recordings() -> list[Path]:
    candidates = [*sorted(RECORDINGS.glob("recordings/nvidia-smi/*/*")), *RECORDINGS.glob("monitor/*.csv")]
    found = [p for p in candidates if p.suffix in (".txt", ".xml", ".csv") and "kernel-log" not in p.parts]
    assert len(found) >= 15
    return found


@pytest.mark.parametrize("path", _recordings(), ids=lambda p: p.name)
def test_recorded_gpus_render_as_prometheus_client_renders_them(path: Path) -> None:
    probe = open_probe(path, loop=True)
    try:
        collector = GpuCollector(probe, clock=lambda: 1000.0, hostname="h", price_usd_per_hour=2.5)
        families = list(collector.collect())
    finally:
        probe.close()
    assert_same_as_prometheus_client(families)


_awkward_text = st.text(
    st.characters(blacklist_categories=("Cs",)) | st.sampled_from(['"', "\\", "\n", "ä", "😀"]), max_size=12
)
_readings = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e6, 1e21, 123456.7])


@settings(max_examples=60, deadline=None)
@given(name=_awkward_text, host=_awkward_text, process=_awkward_text, util=_readings, power=_readings)
def test_awkward_labels_and_readings_render_as_prometheus_client_renders_them(
    name: str, host: str, process: str, util: float, power: float
) -> None:
    samples = (
        gpu(0, name=name, util_gpu_pct=util, processes=(GpuProcess(7, process, 2**30),)),
        gpu(1, util_gpu_pct=-0.0 if util == 0 else 0.0, power_draw_watts=power),
    )
    families = list(GpuCollector(FakeProbe([snap(*samples)]), clock=lambda: 5.0, hostname=host).collect())
    assert_same_as_prometheus_client(families)


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70))
def test_numbers_are_written_as_go_writes_them(value: float) -> None:
    assert go_float(value) == floatToGoString(value)


def test_what_it_cannot_render_identically_it_refuses() -> None:
    created = CounterMetricFamily("jobs", "Jobs.", labels=["a"])
    created.add_metric(["x"], 1.0, created=12.0)  # a _created sample, split out by prometheus-client
    stamped = GaugeMetricFamily("temp", "Temperature.")
    stamped.add_metric([], 1.0, timestamp=3.0)
    odd_label = GaugeMetricFamily("temp", "Temperature.", labels=["bad-label"])
    odd_label.add_metric(["x"], 1.0)
    for family in (created, stamped, odd_label):
        with pytest.raises(ValueError, match=r"not rendered|needs escaping"):
            render_text([family])
        with pytest.raises(ValueError, match=r"not rendered|needs escaping"):
            render_openmetrics([family])
