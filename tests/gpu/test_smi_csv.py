"""The `--query-gpu` CSV parser: the recorded traces, nvidia-smi's quirks, and properties over random CSVs."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.errors import ReplayError
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, NotSupported, Sample
from gpuwise.gpu.smi_csv import (
    busiest_per_gpu,
    format_trace_time,
    iter_snapshot_groups,
    parse_query_csv,
    parse_trace_time,
    read_query_csv,
)

MIB = 1024**2


def test_landct_trace_parses_with_units_in_cells(trace_fixtures: Path) -> None:
    samples = read_query_csv(trace_fixtures / "landct_desktop_bursts_1s.csv")
    assert len(samples) == 434
    first = samples[0]
    assert first.index == 0
    assert first.util_gpu_pct == 100.0
    assert first.memory_used_bytes == 10549 * MIB
    assert first.memory_total_bytes == 11264 * MIB
    assert first.power_draw_watts == NOT_SUPPORTED  # no such column: unknown, not 0
    assert format_trace_time(first.timestamp_s) == "2026-08-01T03:59:40.361"
    assert format_trace_time(samples[-1].timestamp_s).startswith("2026-08-01T04:06:58")
    assert all(a.timestamp_s < b.timestamp_s for a, b in itertools.pairwise(samples))


def test_wandb_companion_in_nvidia_smi_form_parses(trace_fixtures: Path) -> None:
    samples = read_query_csv(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv")
    assert len(samples) == 464
    assert samples[0].power_draw_watts == pytest.approx(24.89)
    assert samples[0].temperature_c == 43.0
    assert samples[0].memory_used_bytes == NOT_SUPPORTED
    span = samples[-1].timestamp_s - samples[0].timestamp_s
    assert span == pytest.approx(6945, abs=1)


def test_wandb_export_reads_like_its_nvidia_smi_companion(trace_fixtures: Path) -> None:
    """A W&B GPU export is translated to nvidia-smi's columns: same instants, same GPU, same readings as
    the .nvidia-smi.csv form of the same data."""
    exported = read_query_csv(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.csv")
    companion = read_query_csv(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv")
    assert len(exported) == len(companion) == 464
    for a, b in zip(exported, companion, strict=True):
        assert (a.timestamp_s, a.index, a.util_gpu_pct) == (b.timestamp_s, b.index, b.util_gpu_pct)
        assert a.temperature_c == b.temperature_c
        assert a.power_draw_watts == pytest.approx(b.power_draw_watts, abs=0.01)
    # GB10 reports no allocated memory: empty cells stay unknown, never 0
    assert exported[0].memory_used_bytes == NOT_SUPPORTED


def test_csv_of_other_columns_is_refused() -> None:
    with pytest.raises(ReplayError) as info:
        parse_query_csv("time,gpu_load\n1,2\n", source="x.csv")
    assert "not an nvidia-smi --query-gpu CSV" in info.value.render()
    assert info.value.exit_code == 2


def test_na_cells_become_not_supported_and_errors_failed() -> None:
    text = (
        "timestamp, index, utilization.gpu [%], power.draw [W], fan.speed [%], temperature.gpu\n"
        "2026/01/02 03:04:05.678, 0, [N/A], [Not Supported], [Unknown Error], N/A\n"
    )
    (s,) = parse_query_csv(text)
    assert s.util_gpu_pct == NOT_SUPPORTED
    assert s.power_draw_watts == NOT_SUPPORTED
    assert s.fan_speed_pct == Failed("Unknown Error")
    assert s.temperature_c == NOT_SUPPORTED


def test_nounits_and_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(
        b"\xef\xbb\xbftimestamp, utilization.gpu [%], memory.used [MiB]\r\n"
        b"2026/01/02 03:04:05.000, 42, 100\r\n"
    )
    (s,) = read_query_csv(path)
    assert s.util_gpu_pct == 42.0
    assert s.memory_used_bytes == 100 * MIB


def test_utf16_powershell_redirect(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes("timestamp, utilization.gpu [%]\r\n2026/01/02 03:04:05.000, 7 %\r\n".encode("utf-16"))
    (s,) = read_query_csv(path)
    assert s.util_gpu_pct == 7.0


def test_rows_out_of_order_and_duplicated_are_sorted_and_all_kept() -> None:
    """Issue 10: two loggers writing one file give two readings of GPU 0 at one stamp; keeping only the
    first dropped the busy one (98 %) and the idle policy stopped a busy machine."""
    text = (
        "timestamp, index, utilization.gpu [%]\n"
        "2026/01/02 03:04:07.000, 1, 30 %\n"
        "2026/01/02 03:04:06.000, 0, 10 %\n"
        "2026/01/02 03:04:07.000, 0, 20 %\n"
        "2026/01/02 03:04:06.000, 0, 98 %\n"
    )
    samples = parse_query_csv(text)
    assert [(s.index, s.util_gpu_pct) for s in samples] == [(0, 10.0), (0, 98.0), (0, 20.0), (1, 30.0)]
    # both readings of 03:04:06 are one instant; a view with one row per GPU shows the busy one
    groups = iter_snapshot_groups(samples)
    assert [[s.util_gpu_pct for s in g] for g in groups] == [[10.0, 98.0], [20.0, 30.0]]
    assert [s.util_gpu_pct for s in busiest_per_gpu(groups[0])] == [98.0]


def test_throttle_reasons_from_either_name_and_from_the_mask() -> None:
    old = (
        "timestamp, utilization.gpu [%], "
        "clocks_throttle_reasons.sw_power_cap, clocks_throttle_reasons.gpu_idle\n"
        "2026/01/02 03:04:05.000, 50 %, Active, Not Active\n"
    )
    assert parse_query_csv(old)[0].throttle_reasons == ("sw_power_cap",)
    new = (
        "timestamp, utilization.gpu [%], clocks_event_reasons.active\n"
        "2026/01/02 03:04:05.000, 50 %, 0x0000000000000024\n"
    )
    assert parse_query_csv(new)[0].throttle_reasons == ("sw_power_cap", "sw_thermal_slowdown")


def test_unknown_columns_are_kept_as_text() -> None:
    text = (
        "timestamp, utilization.gpu [%], vbios_version, driver_version\n"
        "2026/01/02 03:04:05.000, 1 %, 96.00.A5, 590.48.01\n"
    )
    (s,) = parse_query_csv(text)
    assert s.extra == {"vbios_version": "96.00.A5", "driver_version": "590.48.01"}


def test_snapshot_without_timestamp_uses_the_given_default() -> None:
    text = "index, utilization.gpu [%]\n0, 5 %\n1, 6 %\n"
    with pytest.raises(ReplayError, match="no timestamp"):
        parse_query_csv(text)
    samples = parse_query_csv(text, default_timestamp_s=100.0)
    assert [(s.index, s.timestamp_s) for s in samples] == [(0, 100.0), (1, 100.0)]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "hello world\n",
        "timestamp, memory.used [MiB]\n2026/01/02 03:04:05.000, 1 MiB\n",
        "timestamp, utilization.gpu [%]\n",
    ],
)
def test_not_a_query_csv_is_a_replay_error(text: str) -> None:
    with pytest.raises(ReplayError):
        parse_query_csv(text)


def test_bad_timestamp_names_the_row() -> None:
    text = "timestamp, utilization.gpu [%]\nyesterday, 5 %\n"
    with pytest.raises(ReplayError, match="row 2"):
        parse_query_csv(text)


def test_trace_time_round_trip() -> None:
    ts = parse_trace_time("2026/08/01 03:59:40.361")
    assert ts is not None
    assert format_trace_time(ts) == "2026-08-01T03:59:40.361"
    assert parse_trace_time("2026/13/01 03:59:40") is None


# --- properties -------------------------------------------------------------------------------

_COLUMNS = {
    "index": ("index", lambda n: str(n % 8)),
    "utilization.memory [%]": ("util_memory_pct", lambda n: f"{n % 101} %"),
    "memory.used [MiB]": ("memory_used_bytes", lambda n: f"{n} MiB"),
    "memory.total [MiB]": ("memory_total_bytes", lambda n: f"{n + 1} MiB"),
    "power.draw [W]": ("power_draw_watts", lambda n: f"{n / 7:.2f} W"),
    "temperature.gpu": ("temperature_c", lambda n: str(n % 100)),
    "clocks.sm [MHz]": ("sm_clock_mhz", lambda n: f"{n} MHz"),
    "pcie.link.width.current": ("pcie_width_current", lambda n: str(n % 17)),
}
_NA = ["[N/A]", "[Not Supported]", "N/A", "[Requested functionality has been deprecated]"]


@settings(max_examples=60, deadline=None)
@given(
    extra=st.lists(st.sampled_from(sorted(_COLUMNS)), unique=True),
    order_seed=st.randoms(use_true_random=False),
    rows=st.lists(
        st.tuples(st.integers(0, 86_400 * 30), st.integers(0, 100_000), st.booleans(), st.integers(0, 3)),
        min_size=1,
        max_size=20,
    ),
    nounits=st.booleans(),
)
def test_random_columns_orders_and_na_cells(
    extra: list[str], order_seed: object, rows: list[tuple[int, int, bool, int]], nounits: bool
) -> None:
    """Any subset and order of known columns, any N/A spelling: values land on their fields, N/A never
    becomes a number, and the output is sorted with every row kept, file order among rows of one GPU at
    one instant (by index, or by row order at one instant when there is no index column)."""
    import random

    assert isinstance(order_seed, random.Random)
    header = ["timestamp", "utilization.gpu [%]", *extra]
    order_seed.shuffle(header)
    lines = [", ".join(header)]
    expected: dict[tuple[float, int], list[object]] = {}
    rows_at: dict[int, int] = {}  # without an index column, rows at one instant are GPUs 0, 1, … in order
    for t, n, na, which in rows:
        cells = []
        index = rows_at.get(t % 86400, 0)
        rows_at[t % 86400] = index + 1
        for col in header:
            if col == "timestamp":
                cells.append(f"2026/01/01 {t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000")
            elif col == "utilization.gpu [%]":
                cells.append(_NA[which] if na else (f"{n % 101}" if nounits else f"{n % 101} %"))
            else:
                value = _COLUMNS[col][1](n)
                if col == "index":
                    index = n % 8
                cells.append(value.split(" ")[0] if nounits else value)
        lines.append(", ".join(cells))
        key = (float(t % 86400), index)
        expected.setdefault(key, []).append(NOT_SUPPORTED if na else float(n % 101))
    samples = parse_query_csv("\n".join(lines) + "\n")
    keys = [(s.timestamp_s % 86400, s.index) for s in samples]
    assert keys == sorted(keys)
    assert len(keys) == len(rows)
    got: dict[tuple[float, int], list[object]] = {}
    for s in samples:
        got.setdefault((s.timestamp_s % 86400, s.index), []).append(s.util_gpu_pct)
    assert got == expected
    for s in samples:
        assert isinstance(s, Sample)
        for name in ("util_gpu_pct", "memory_used_bytes", "power_draw_watts", "temperature_c"):
            value = getattr(s, name)
            assert isinstance(value, NotSupported | Failed | int | float)
            if isinstance(value, float):
                assert math.isfinite(value) and value >= 0
        for col in extra:
            field = _COLUMNS[col][0]
            if field != "index":
                assert getattr(s, field) != NOT_SUPPORTED


def test_rows_sharing_a_timestamp_without_index_are_separate_gpus() -> None:
    """Without an index column, two GPUs logged at the same instant must not collapse into GPU 0
    (an idle policy would then miss a busy GPU 1)."""
    text = (
        "timestamp, utilization.gpu [%]\n"
        "2024/03/01 12:00:00.000, 0 %\n"
        "2024/03/01 12:00:00.000, 97 %\n"
        "2024/03/01 12:00:01.000, 0 %\n"
        "2024/03/01 12:00:01.000, 95 %\n"
    )
    samples = parse_query_csv(text)
    assert [(s.index, s.util_gpu_pct) for s in samples] == [(0, 0.0), (1, 97.0), (0, 0.0), (1, 95.0)]


def test_monitor_replay_of_two_loggers_shows_one_busy_row_per_gpu() -> None:
    """What `monitor --replay` and the exporter serve: one row per GPU per instant, the busy one of two
    loggers' readings (issue 10), never the idle one kept because it came first."""
    from gpuwise.gpu.replay import parse_recording_text

    text = (
        "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
        "2026/01/02 03:04:05.000, 0, 0 %, 2 MiB\n"
        "2026/01/02 03:04:05.000, 0, 99 %, 2 MiB\n"
        "2026/01/02 03:04:05.001, 1, 0 %, 2 MiB\n"
        "2026/01/02 03:04:06.000, 0, 98 %, 2 MiB\n"
        "2026/01/02 03:04:06.000, 0, 1 %, 2 MiB\n"
        "2026/01/02 03:04:06.001, 1, 0 %, 2 MiB\n"
    )
    snaps = parse_recording_text(text).snapshots
    assert [[(s.index, s.util_gpu_pct) for s in snap.samples] for snap in snaps] == [
        [(0, 99.0), (1, 0.0)],
        [(0, 98.0), (1, 0.0)],
    ]
