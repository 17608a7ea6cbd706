"""Bottleneck hints: each rule fires on its scenario, stays quiet on a healthy machine, and never
treats a missing reading as zero."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from monitor_fakes import GIB, gpu, snap

from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, Sample
from gpuwise.monitor.hints import compute_hints
from gpuwise.monitor.host import HostStats


def _ids(hints: list) -> set[tuple[str, int | None]]:  # type: ignore[type-arg]
    return {(h.id, h.gpu) for h in hints}


def host(cpu: float, iowait: float = 0.0) -> HostStats:
    return HostStats(timestamp_s=0.0, cpu_pct=cpu, iowait_pct=iowait)


def test_healthy_machine_has_no_hints() -> None:
    window = [snap(gpu(0), gpu(1)) for _ in range(5)]
    assert compute_hints(window, [host(30.0)] * 5) == []


def test_input_bound_needs_low_util_a_job_and_a_busy_host() -> None:
    window = [snap(gpu(0, util_gpu_pct=20.0)) for _ in range(5)]
    hints = compute_hints(window, [host(97.0)] * 5)
    assert ("input_bound", 0) in _ids(hints)
    assert "host CPU 97%" in hints[0].evidence
    # the same low util on a quiet host is not input-bound (it may just be a small model)
    assert compute_hints(window, [host(20.0)] * 5) == []
    # I/O wait alone is enough
    assert ("input_bound", 0) in _ids(compute_hints(window, [host(30.0, iowait=40.0)] * 5))
    # no job on the GPU: not input-bound
    idle = [snap(gpu(0, util_gpu_pct=20.0, processes=(), memory_used_bytes=0)) for _ in range(5)]
    assert compute_hints(idle, [host(97.0)] * 5) == []


def test_throttle_reasons_by_severity() -> None:
    window = [snap(gpu(0, throttle_reasons=("sw_thermal_slowdown", "gpu_idle"))) for _ in range(4)]
    hints = compute_hints(window)
    assert [(h.id, h.severity) for h in hints] == [("throttled", "warn")]
    assert "sw thermal slowdown" in hints[0].message
    power = [snap(gpu(0, throttle_reasons=("sw_power_cap",))) for _ in range(4)]
    assert [(h.id, h.severity) for h in compute_hints(power)] == [("throttled", "info")]
    # a reason seen in one sample of four is noise
    once = [snap(gpu(0, throttle_reasons=("hw_slowdown",)))] + [snap(gpu(0)) for _ in range(3)]
    assert compute_hints(once) == []


def test_memory_nearly_full() -> None:
    hints = compute_hints([snap(gpu(0, memory_used_bytes=79 * GIB))])
    assert _ids(hints) == {("memory_nearly_full", 0)}
    assert "79.0 of 80.0 GiB" in hints[0].evidence


def test_pcie_below_max_only_under_load() -> None:
    slow = gpu(0, pcie_gen_current=3, pcie_width_current=8)
    assert _ids(compute_hints([snap(slow)])) == {("pcie_below_max", 0)}
    # a link that drops generation at idle is power saving, not a fault
    idle = gpu(0, pcie_gen_current=1, util_gpu_pct=0.0)
    assert compute_hints([snap(idle)]) == []


def test_one_gpu_idle_while_peers_work() -> None:
    window = [snap(gpu(0), gpu(1), gpu(2, util_gpu_pct=0.0)) for _ in range(5)]
    hints = compute_hints(window)
    assert _ids(hints) == {("gpu_idle_while_peers_busy", 2)}
    # all idle together is just an idle machine
    quiet = [snap(gpu(0, util_gpu_pct=0.0), gpu(1, util_gpu_pct=0.0)) for _ in range(5)]
    assert compute_hints(quiet) == []


def test_encoder_bound_video_work() -> None:
    """The L40S capture's case: NVENC at 60 % while GPU util reads 9 %."""
    window = [snap(gpu(0, util_gpu_pct=9.0, util_encoder_pct=63.0)) for _ in range(3)]
    hints = compute_hints(window)
    assert _ids(hints) == {("encoder_bound", 0)}
    assert "encoder" in hints[0].message


def test_lost_gpu_is_skipped_not_counted_idle() -> None:
    lost = Sample(timestamp_s=0.0, index=1, lost=True, util_gpu_pct=Failed("GPU is lost"))
    window = [snap(gpu(0), lost) for _ in range(5)]
    assert compute_hints(window) == []


def test_unsupported_util_is_not_zero() -> None:
    """A MIG GPU reports utilization N/A; it must not look idle next to a busy peer."""
    mig = gpu(1, util_gpu_pct=NOT_SUPPORTED)
    window = [snap(gpu(0), mig) for _ in range(5)]
    assert compute_hints(window) == []


@given(st.lists(st.one_of(st.just(None), st.floats(0, 100)), min_size=1, max_size=8))
def test_missing_readings_never_produce_a_hint_on_their_gpu(utils: list[float | None]) -> None:
    """Invariant: a GPU whose every reading is unsupported never gets a hint about itself."""
    samples = [gpu(i, util_gpu_pct=u if u is not None else 50.0) for i, u in enumerate(utils)]
    blank = Sample(timestamp_s=0.0, index=99)  # every reading NotSupported
    window = [snap(*samples, blank) for _ in range(4)]
    hints = compute_hints(window, [host(99.0, 50.0)] * 4)
    assert all(h.gpu != 99 for h in hints)
    assert all(
        h.id
        in {
            "throttled",
            "memory_nearly_full",
            "pcie_below_max",
            "gpu_idle_while_peers_busy",
            "encoder_bound",
            "input_bound",
        }
        for h in hints
    )


def test_hints_on_every_real_recording(smi_fixtures) -> None:  # type: ignore[no-untyped-def]
    """Real nvidia-smi outputs: only the throttled H100 and the two NVENC loads deserve a hint."""
    from gpuwise.errors import ReplayError
    from gpuwise.gpu.replay import load_recording
    from gpuwise.monitor.hints import HintThresholds

    expected = {
        "8x-h100__sw-power-cap-sw-thermal__535.183.01.txt": {("throttled", 2)},
        "linux-x86_64__nvidia-l40s__595.80.txt": {("encoder_bound", 0)},
        "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt": {("encoder_bound", 0)},
    }
    seen = 0
    for path in sorted(smi_fixtures.glob("*/*")):
        if path.name == "README.md":
            continue
        try:
            rec = load_recording(path)
        except ReplayError:
            continue
        got: set[tuple[str, int | None]] = set()
        for s in rec.snapshots:
            got |= _ids(compute_hints([s], thresholds=HintThresholds(min_samples=1)))
        assert got == expected.get(path.name, set()), path.name
        seen += 1
    assert seen >= 15
