"""Rendering: unknown readings say so (never 0), a lost GPU never hides the others, sparklines scale."""

from __future__ import annotations

from monitor_fakes import gpu, snap
from rich.console import Console

from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, GpuProcess, Sample, Snapshot
from gpuwise.monitor.hints import Hint
from gpuwise.monitor.history import summarize
from gpuwise.monitor.view import dashboard, history_view, sparkline


def render(renderable: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_sparkline_scale_and_gaps() -> None:
    assert sparkline([0, 50, 100, None, 100]) == "▁▅█ █"
    assert sparkline([]) == ""
    assert sparkline([150.0, -3.0]) == "█▁"  # clamped


def test_lost_gpu_and_unknown_readings_are_shown_as_such() -> None:
    """gpustat's scenario_failing_one_gpu: GPU 1 is lost, GPUs 0 and 2 still show."""
    lost = Sample(timestamp_s=1000.0, index=1, lost=True, name=Failed("GPU is lost"))
    odd = gpu(2, temperature_c=NOT_SUPPORTED, power_draw_watts=Failed("Unknown Error"))
    text = render(dashboard(snap(gpu(0), lost, odd), hints=[Hint("x", 0, "warn", "look here", "because")]))
    assert "GPU 0 NVIDIA H100" in text
    assert "GPU 1 ?" in text and "LOST" in text
    assert "GPU 2 NVIDIA H100" in text
    assert "err/700 W  n/a°C" in text
    assert "look here" in text and "because" in text
    assert "python" in text  # the process table


def test_probe_error_and_no_gpus() -> None:
    text = render(dashboard(Snapshot(samples=(), errors=("No devices were found",))))
    assert "No devices were found" in text and "0 GPU(s)" in text


def test_process_without_memory_reading() -> None:
    s = gpu(0, processes=(GpuProcess(9, "Xwayland", NOT_SUPPORTED, kind="graphics"),))
    assert "Xwayland" in render(dashboard(snap(s)))


def test_history_view_lists_gpus_and_events() -> None:
    from gpuwise.monitor.history import EventRow, SampleRow

    rows = [SampleRow(float(t), 0, "H100", 50.0, 2**30, 2**31, 300.0, 60.0) for t in range(0, 600, 60)]
    events = [EventRow(120.0, "alert", 0, "temperature", "firing", "GPU 0: hot")]
    text = render(history_view(summarize(rows, events, 0.0, 540.0)))
    assert "0 H100" in text and "50% / 50%" in text and "alert temperature firing" in text
    assert "no samples" in render(history_view(summarize([], [], 0.0, 1.0)))


def _render_at(renderable: object, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


def test_an_80_column_terminal_gets_one_line_per_gpu() -> None:
    """At 80 columns an 8-GPU machine folded to 5 lines per GPU and cut the heading to "throt"."""
    gpus = [gpu(i, memory_used_bytes=(60 + i) * 2**30, throttle_reasons=()) for i in range(8)]
    lines = _render_at(dashboard(snap(*gpus)), 80)
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].strip() == "NVIDIA H100 80GB HBM3"  # the shared model, named once
    heading = next(line for line in lines if "util" in line and "memory" in line)
    assert heading.split("┃")[-1].strip() == "throttle"
    rows = [line for line in lines if line.startswith("GPU ") and "│" in line]
    assert [r.split()[1] for r in rows] == [str(i) for i in range(8)]  # one line each, in order
    assert "61/80 GiB" in rows[1] and "none" in rows[1]
    assert not any(line.startswith("      ") and "│" in line for line in lines[:12])  # nothing folded


def test_a_narrow_terminal_keeps_each_gpus_own_name_when_they_differ() -> None:
    lost = Sample(timestamp_s=1000.0, index=2, lost=True, name=Failed("GPU is lost"))
    lines = _render_at(dashboard(snap(gpu(0), gpu(1, name="NVIDIA L4"), lost)), 80)
    text = "\n".join(lines)
    assert "GPU 0" in text and "H100" in text and "GPU 1" in text and "NVIDIA L4" in text and "LOST" in text
    assert "NVIDIA H100 80GB HBM3" not in lines[1]  # no shared model named above the table
    assert all(len(line) <= 80 for line in lines)
