"""NvmlProbe against a pynvml stub built per scenario from the recorded fixtures' driver generations."""

from __future__ import annotations

from pathlib import Path

import nvml_stub
import pytest
from nvml_stub import (
    FakeGpu,
    NVMLError_DriverNotLoaded,
    NVMLError_GpuIsLost,
    NVMLError_LibraryNotFound,
    NVMLError_LibRmVersionMismatch,
    NVMLError_NotSupported,
    NVMLError_Unknown,
    StubNvml,
    gpu_from_sample,
)

from gpuwise.errors import GpuError
from gpuwise.gpu.nvml import NvmlInitError, NvmlProbe, NvmlUnavailableError
from gpuwise.gpu.replay import load_recording
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, Sample
from gpuwise.gpu.smi import ErrorKind

# readings that NVML gives exactly as nvidia-smi prints them
_COMPARABLE = (
    "name",
    "uuid",
    "bus_id",
    "util_gpu_pct",
    "util_memory_pct",
    "memory_used_bytes",
    "memory_total_bytes",
    "power_draw_watts",
    "power_limit_watts",
    "temperature_c",
    "fan_speed_pct",
    "sm_clock_mhz",
    "memory_clock_mhz",
    "throttle_reasons",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "pcie_replay_count",
    "ecc_mode_enabled",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "persistence_mode",
    "mig_mode",
    "pstate",
)


def _fixture_samples(smi_fixtures: Path, rel: str) -> tuple[list[Sample], str]:
    rec = load_recording(smi_fixtures / rel)
    snap = rec.snapshots[-1]
    assert isinstance(snap.driver_version, str)
    return list(snap.samples), snap.driver_version


def _probe(stub: StubNvml) -> NvmlProbe:
    return NvmlProbe(nvml_module=stub, clock=lambda: 1234.5)


@pytest.mark.parametrize(
    "rel",
    [
        "xml/tesla-t4__2-processes__515.105.01.xml",
        "xml/2x-rtx-a5000__idle__590.44.01.xml",
        "query-text/8x-h100__sw-power-cap-sw-thermal__535.183.01.txt",
        "query-text/a10__remapped-rows-uncorrectable-pending__535.129.03.txt",
    ],
)
def test_nvml_reads_what_nvidia_smi_recorded(smi_fixtures: Path, rel: str) -> None:
    """Each GPU's NVML answers (from a real recording) come out as the same readings nvidia-smi showed."""
    expected, driver = _fixture_samples(smi_fixtures, rel)
    stub = StubNvml([gpu_from_sample(s) for s in expected], driver=driver)
    snap = _probe(stub).read()
    assert snap.driver_version == driver
    assert snap.cuda_driver_version == "13.1"
    assert len(snap.samples) == len(expected)
    for got, want in zip(snap.samples, expected, strict=True):
        assert got.timestamp_s == 1234.5
        for name in _COMPARABLE:
            assert getattr(got, name) == getattr(want, name), name


def test_a10_remapped_rows_pending_reaches_the_sample(smi_fixtures: Path) -> None:
    expected, _ = _fixture_samples(
        smi_fixtures, "query-text/a10__remapped-rows-uncorrectable-pending__535.129.03.txt"
    )
    (s,) = _probe(StubNvml([gpu_from_sample(x) for x in expected])).read().samples
    assert s.remapped_rows_uncorrectable == 4
    assert s.remapped_rows_pending is True


def test_old_driver_without_remapped_rows_or_event_reasons(smi_fixtures: Path) -> None:
    """Driver 515 (Tesla T4) predates nvmlDeviceGetRemappedRows on Turing and the "event reasons" name:
    FunctionNotFound is 'not supported', and throttle reasons come from the older call."""
    expected, driver = _fixture_samples(smi_fixtures, "xml/tesla-t4__2-processes__515.105.01.xml")
    stub = StubNvml(
        [gpu_from_sample(s) for s in expected],
        driver=driver,
        cuda=11070,
        missing=frozenset({"nvmlDeviceGetRemappedRows", "nvmlDeviceGetCurrentClocksEventReasons"}),
    )
    (s,) = _probe(stub).read().samples
    assert s.remapped_rows_pending == NOT_SUPPORTED
    assert s.remapped_rows_correctable == NOT_SUPPORTED
    assert s.throttle_reasons == ()
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in stub.calls
    assert isinstance(s.processes, tuple)
    assert sorted(p.pid for p in s.processes) == [675, 5762]
    assert {p.pid: p.kind for p in s.processes} == {675: "graphics", 5762: "compute"}


def test_one_lost_gpu_among_eight_never_hides_the_others(smi_fixtures: Path) -> None:
    """gpustat#125-style: GPU 3 fell off the bus (GPU_IS_LOST mid-read) and GPU 6 has no handle."""
    expected, _ = _fixture_samples(
        smi_fixtures, "query-text/8x-h100__sw-power-cap-sw-thermal__535.183.01.txt"
    )
    gpus = [gpu_from_sample(s) for s in expected]
    gpus[3].raise_on["nvmlDeviceGetMemoryInfo"] = NVMLError_GpuIsLost
    gpus[6].handle_error = NVMLError_Unknown
    snap = _probe(StubNvml(gpus)).read()
    assert [s.index for s in snap.samples] == list(range(8))
    assert [s.lost for s in snap.samples] == [False, False, False, True, False, False, True, False]
    assert snap.samples[3].util_gpu_pct == Failed("GPU is lost")
    assert isinstance(snap.samples[6].memory_used_bytes, Failed)
    assert snap.samples[2].throttle_reasons == (
        "sw_power_cap",
        "sw_thermal_slowdown",
        "hw_power_brake_slowdown",
    )
    for i in (0, 1, 2, 4, 5, 7):
        assert snap.samples[i].memory_total_bytes == expected[i].memory_total_bytes


def test_geforce_power_not_supported_and_fan_failure_stay_per_field(smi_fixtures: Path) -> None:
    expected, _ = _fixture_samples(smi_fixtures, "xml/rtx-3080__load-65pct__595.58.03.xml")
    gpu = gpu_from_sample(expected[0])
    gpu.raise_on["nvmlDeviceGetPowerUsage"] = NVMLError_NotSupported
    gpu.raise_on["nvmlDeviceGetFanSpeed"] = NVMLError_Unknown
    (s,) = _probe(StubNvml([gpu])).read().samples
    assert s.power_draw_watts == NOT_SUPPORTED
    assert s.fan_speed_pct == Failed("Unknown Error")
    assert s.util_gpu_pct == 65.0  # the neighbours are untouched
    assert s.power_limit_watts == 320.0
    assert not s.lost


def test_mig_enabled_a100_has_no_utilization(smi_fixtures: Path) -> None:
    expected, _ = _fixture_samples(smi_fixtures, "xml/a100-sxm4-80gb__mig-enabled__535.54.03.xml")
    (s,) = _probe(StubNvml([gpu_from_sample(x) for x in expected])).read().samples
    assert s.mig_mode is True
    assert s.util_gpu_pct == NOT_SUPPORTED  # never 0 %
    assert s.memory_total_bytes == 81920 * 2**20


def test_pcie_throughput_kb_per_s_and_process_merging() -> None:
    gpu = FakeGpu(
        pcie_kb=(3092, 6346),
        compute_procs=[(11, 2**30), (12, 0xFFFFFFFFFFFFFFFF)],
        graphics_procs=[(11, 2**30), (13, 5 * 2**20)],
    )
    (s,) = _probe(StubNvml([gpu])).read().samples
    assert s.pcie_tx_bytes_per_s == 3_092_000.0
    assert s.pcie_rx_bytes_per_s == 6_346_000.0
    assert isinstance(s.processes, tuple)
    by_pid = {p.pid: p for p in s.processes}
    assert by_pid[11].kind == "compute+graphics"
    assert by_pid[12].used_memory_bytes == NOT_SUPPORTED  # NVML_VALUE_NOT_AVAILABLE is not a number
    assert by_pid[13].kind == "graphics"
    assert s.compute_capability == "9.0"
    assert s.power_draw_watts == 70.0


def test_ecc_disabled_counts_are_not_zero() -> None:
    (s,) = _probe(StubNvml([FakeGpu(ecc=(0, 0))])).read().samples
    assert s.ecc_mode_enabled is False
    assert s.ecc_uncorrected_volatile == NOT_SUPPORTED


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (NVMLError_DriverNotLoaded, ErrorKind.DRIVER_MISSING),
        (NVMLError_LibRmVersionMismatch, ErrorKind.LIBRARY_MISMATCH),
        (NVMLError_Unknown, ErrorKind.NVML_INIT),
    ],
)
def test_init_failures_are_gpu_errors_with_a_fix(error: type[Exception], kind: str) -> None:
    with pytest.raises(NvmlInitError) as info:
        NvmlProbe(nvml_module=StubNvml([], init_error=error))  # type: ignore[arg-type]
    assert info.value.kind == kind
    assert isinstance(info.value, GpuError)
    assert "To fix:" in info.value.render()


def test_missing_library_asks_for_the_fallback() -> None:
    with pytest.raises(NvmlUnavailableError) as info:
        NvmlProbe(nvml_module=StubNvml([], init_error=NVMLError_LibraryNotFound))
    err = info.value.as_gpu_error()
    assert "No NVIDIA driver found" in err.render()
    assert "GPU machine" in err.render()


def test_close_shuts_nvml_down_once() -> None:
    stub = StubNvml([FakeGpu()])
    probe = _probe(stub)
    probe.close()
    probe.close()
    assert stub.shutdowns == 1
    with pytest.raises(GpuError):
        probe.read()


def test_stub_matches_the_installed_pynvml_names_and_constants() -> None:
    """The stub must not drift from nvidia-ml-py: every function and constant it offers (and so every one
    NvmlProbe may call) exists in the real module with the same value. Reads names only; loads no library."""
    import pynvml

    offered = [n for n in dir(StubNvml) if n.startswith(("nvml", "NVML_", "NVMLError"))]
    assert len(offered) > 40
    for name in offered:
        assert hasattr(pynvml, name), name
        if name.startswith("NVML_"):
            assert getattr(pynvml, name) == getattr(StubNvml, name), name
    for name in dir(nvml_stub):
        if name.startswith("NVML_ERROR_"):
            assert getattr(pynvml, name) == getattr(nvml_stub, name), name


def test_xid_events_are_counted_per_gpu_without_waiting() -> None:
    stub = StubNvml([FakeGpu(), FakeGpu(xid_events_supported=False), FakeGpu()])
    probe = _probe(stub)
    first = probe.read()
    assert [s.xid_errors for s in first.samples] == [0, NOT_SUPPORTED, 0]
    assert first.samples[0].xid_last == NOT_SUPPORTED
    stub.pending_events += [(2, 79), (2, 119), (0, 13)]
    second = probe.read()
    assert [s.xid_errors for s in second.samples] == [1, NOT_SUPPORTED, 2]
    assert (second.samples[0].xid_last, second.samples[2].xid_last) == (13, 119)
    probe.close()
    assert stub.freed == 1


def test_vgpu_guest_zero_limits_are_unknown_as_in_the_smi_parsers() -> None:
    # a vGPU guest's NVML reports a 0 W limit and 0 MHz maximum clocks, like its nvidia-smi
    gpu = FakeGpu(power_limit_mw=0, power_default_mw=0, max_clocks={1: 0, 2: 0}, util=(250, 0))
    (s,) = _probe(StubNvml([gpu])).read().samples
    assert s.power_limit_watts is NOT_SUPPORTED and s.power_default_limit_watts is NOT_SUPPORTED
    assert s.sm_clock_max_mhz is NOT_SUPPORTED and s.memory_clock_max_mhz is NOT_SUPPORTED
    assert isinstance(s.util_gpu_pct, Failed)  # 250 % is damage, not a reading
    assert s.power_draw_watts == 70.0
