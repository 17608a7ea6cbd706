"""Pins what other rooms import from gpuwise.gpu, and that importing it stays cheap (no pynvml)."""

from __future__ import annotations

import inspect
import subprocess
import sys

from gpuwise.gpu import kernel_log, probe, replay, sample, smi, smi_csv
from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.gpu.smi_csv import iter_snapshot_groups, parse_query_csv


def test_exported_names() -> None:
    for module, names in (
        (
            sample,
            {
                "Sample",
                "Snapshot",
                "GpuProcess",
                "MigDevice",
                "NotSupported",
                "Failed",
                "Reading",
                "ParseProblem",
            },
        ),
        (smi_csv, {"parse_query_csv", "read_query_csv", "format_trace_time", "parse_trace_time"}),
        (replay, {"load_recording", "Recording", "ParseProblem", "XidEvent"}),
        (probe, {"Probe", "open_probe", "ReplayProbe"}),
        (kernel_log, {"parse_xid_events", "XidEvent"}),
        (smi, {"parse_xml", "parse_query_text", "parse_error_text", "classify_error_text", "ErrorKind"}),
    ):
        missing = {n for n in names if not hasattr(module, n)}
        assert not missing, (module.__name__, missing)
    params = inspect.signature(probe.open_probe).parameters
    assert list(params) == ["replay", "clock", "loop"]
    assert params["clock"].kind is inspect.Parameter.KEYWORD_ONLY


def test_importing_the_probe_does_not_load_nvml() -> None:
    code = (
        "import sys, gpuwise.gpu.probe, gpuwise.gpu.replay, gpuwise.gpu.smi_csv; "
        "assert 'pynvml' not in sys.modules, 'pynvml imported at module level'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_multi_gpu_time_series_groups_into_one_snapshot_per_instant() -> None:
    text = (
        "timestamp, index, utilization.gpu [%]\n"
        "2026/01/02 03:04:05.100, 0, 1 %\n"
        "2026/01/02 03:04:05.101, 1, 2 %\n"
        "2026/01/02 03:04:06.100, 0, 3 %\n"
        "2026/01/02 03:04:06.102, 1, 4 %\n"
    )
    groups = iter_snapshot_groups(parse_query_csv(text))
    assert [[s.util_gpu_pct for s in g] for g in groups] == [[1.0, 2.0], [3.0, 4.0]]
    snap = Snapshot(samples=tuple(groups[0]))
    assert all(isinstance(s, Sample) for s in snap.samples)
