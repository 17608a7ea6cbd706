"""`monitor --record`: the CSV is nvidia-smi's own form and round-trips through the gpu room's parser."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from monitor_fakes import EIGHT_GPU_CSV, GIB, gpu

from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, GpuProcess, Sample
from gpuwise.gpu.smi_csv import parse_query_csv, read_query_csv
from gpuwise.monitor.host import HostStats
from gpuwise.monitor.record import Recorder, header, rows

FIELDS = [
    "util_gpu_pct",
    "util_memory_pct",
    "util_encoder_pct",
    "util_decoder_pct",
    "memory_used_bytes",
    "memory_total_bytes",
    "power_draw_watts",
    "power_limit_watts",
    "temperature_c",
    "memory_temperature_c",
    "fan_speed_pct",
    "sm_clock_mhz",
    "memory_clock_mhz",
    "throttle_reasons",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "ecc_mode_enabled",
    "ecc_corrected_volatile",
    "ecc_uncorrected_volatile",
    "ecc_uncorrected_aggregate",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "remapped_rows_failure",
    "persistence_mode",
    "mig_mode",
    "compute_capability",
    "uuid",
    "name",
    "bus_id",
]


def _text(samples: list[Sample], host: HostStats | None = None) -> str:
    lines = [", ".join(header(with_host=True))]
    lines += [", ".join(r) for r in rows(tuple(samples), host, with_host=True)]
    return "\n".join(lines) + "\n"


def test_header_uses_nvidia_smi_names_with_units() -> None:
    cols = header(with_host=False)
    assert cols[:2] == ["timestamp", "index"]
    for name in ("utilization.gpu [%]", "memory.used [MiB]", "power.draw [W]", "clocks.current.sm [MHz]"):
        assert name in cols


def test_values_carry_units_and_missing_is_na() -> None:
    s = gpu(0, ts=1785556800.25, fan_speed_pct=NOT_SUPPORTED, temperature_c=Failed("Unknown Error"))
    row = dict(zip(header(with_host=False), rows((s,), None, with_host=False)[0], strict=True))
    assert row["timestamp"] == "2026/08/01 04:00:00.250"
    assert row["utilization.gpu [%]"] == "95 %"
    assert row["memory.used [MiB]"] == "61440 MiB"
    assert row["power.draw [W]"] == "650.00 W"
    assert row["fan.speed [%]"] == "[N/A]"
    assert row["temperature.gpu"] == "[N/A]"
    assert row["gpuwise.processes"] == "4242:python:61440"


def test_round_trip_through_the_gpu_parser() -> None:
    samples = [
        gpu(0, ts=1785556800.0, throttle_reasons=("sw_power_cap", "sw_thermal_slowdown")),
        gpu(1, ts=1785556800.0, util_gpu_pct=NOT_SUPPORTED, mig_mode=True),
    ]
    back = parse_query_csv(_text(samples, HostStats(0.0, cpu_pct=50.0)))
    assert len(back) == 2
    for want, got in zip(samples, back, strict=True):
        assert got.timestamp_s == want.timestamp_s and got.index == want.index
        for f in FIELDS:
            if f == "persistence_mode":
                continue  # not set by the builder: both sides NotSupported
            assert getattr(got, f) == getattr(want, f), f
        assert got.extra["gpuwise.host.cpu [%]"] == "50 %"


whole = st.integers(0, 100).map(float)


@settings(max_examples=60, deadline=None)
@given(
    util=st.one_of(st.just(NOT_SUPPORTED), whole),
    mem_mib=st.integers(0, 200_000),
    power=st.integers(0, 100_000).map(lambda c: c / 100),
    temp=st.one_of(st.just(NOT_SUPPORTED), st.integers(0, 120).map(float)),
    reasons=st.sets(st.sampled_from(["gpu_idle", "sw_power_cap", "hw_slowdown", "sw_thermal_slowdown"])),
    ts_ms=st.integers(1_600_000_000_000, 1_900_000_000_000),
    index=st.integers(0, 15),
)
def test_round_trip_property(  # noqa: PLR0917 - one argument per generated value
    util: object, mem_mib: int, power: float, temp: object, reasons: set[str], ts_ms: int, index: int
) -> None:
    """Invariant: every reading the CSV can hold comes back equal (to its printed precision)."""
    s = gpu(
        index,
        ts=ts_ms / 1000,
        util_gpu_pct=util,
        memory_used_bytes=mem_mib * 2**20,
        power_draw_watts=power,
        temperature_c=temp,
        throttle_reasons=tuple(sorted(reasons)),
    )
    (got,) = parse_query_csv(_text([s]))
    assert got.timestamp_s == s.timestamp_s
    assert got.util_gpu_pct == s.util_gpu_pct
    assert got.memory_used_bytes == s.memory_used_bytes
    assert got.power_draw_watts == s.power_draw_watts
    assert got.temperature_c == s.temperature_c
    assert set(got.throttle_reasons) == reasons  # type: ignore[arg-type]


def test_recorder_appends_with_one_header_and_skips_lost_gpus(tmp_path: Path) -> None:
    path = tmp_path / "rec.csv"
    lost = Sample(timestamp_s=1.0, index=1, lost=True)
    rec = Recorder(path)
    rec.write((gpu(0, ts=1785556800.0), lost), HostStats(0.0, cpu_pct=10.0))
    rec.close()
    rec = Recorder(path)  # a second run appends, no second header
    rec.write((gpu(0, ts=1785556801.0, processes=(GpuProcess(7, "a, b", 1 * GIB),)),))
    rec.close()
    text = path.read_text()
    assert text.count("timestamp,") == 1
    back = read_query_csv(path)
    assert [s.timestamp_s for s in back] == [1785556800.0, 1785556801.0]
    assert back[1].extra["gpuwise.processes"] == "7:a  b:1024"


def test_the_constructed_fixture_is_what_the_recorder_writes() -> None:
    """The 8-GPU fixture was written by Recorder; it parses to 30 instants of 8 GPUs."""
    samples = read_query_csv(EIGHT_GPU_CSV)
    assert len(samples) == 240
    assert {s.index for s in samples} == set(range(8))
    assert EIGHT_GPU_CSV.read_text().splitlines()[0] == ", ".join(header(with_host=False))
