"""Every recorded nvidia-smi output in tests/fixtures/recordings parses, values spot-checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwise.errors import ReplayError
from gpuwise.gpu.kernel_log import parse_xid_events
from gpuwise.gpu.replay import Recording, load_recording, parse_recording_text
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, NotSupported, Sample
from gpuwise.gpu.smi import ErrorKind, classify_error_text

MIB = 2**20

# Every file under fixtures/nvidia-smi and the format it must be detected as. A new fixture file fails
# `test_every_fixture_file_is_listed` until it is added here with its checks.
EXPECTED_FORMATS = {
    "captures/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt": "capture",
    "captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt": "capture",
    "captures/linux-x86_64__nvidia-h100-mig__590.48.01.txt": "capture",
    "captures/linux-x86_64__nvidia-l40s__595.80.txt": "capture",
    "errors/device-handle-unknown-error.stdout.txt": "error",
    "errors/driver-not-communicating.stdout.txt": "error",
    "errors/no-devices-found.stdout.txt": "error",
    "errors/nvml-init-unknown-error.stdout.txt": "error",
    "kernel-log/h100__xid-119-gsp-rpc-timeout.dmesg.log": "kernel-log",
    "query-text/8x-h100__sw-power-cap-sw-thermal__535.183.01.txt": "query-text",
    "query-text/a10__remapped-rows-uncorrectable-pending__535.129.03.txt": "query-text",
    "query-text/h100__malformed-truncated__535.183.01.txt": "query-text",
    "query-text/titan-v__legacy-ecc-layout__560.35.03.txt": "query-text",
    "table/8x-h100__idle__550.90.07.txt": "table",
    "table/geforce__fan-err__525.125.06.txt": "table",
    "xml/2x-rtx-a5000__idle__590.44.01.xml": "xml",
    "xml/a100-sxm4-80gb__mig-enabled__535.54.03.xml": "xml",
    "xml/a10g__idle__515.105.01.xml": "xml",
    "xml/rtx-3080__load-65pct__595.58.03.xml": "xml",
    "xml/tesla-t4__2-processes__515.105.01.xml": "xml",
}
DAMAGED = {"query-text/h100__malformed-truncated__535.183.01.txt"}


def _load(smi_fixtures: Path, rel: str) -> Recording:
    return load_recording(smi_fixtures / rel)


def _only(rec: Recording) -> list[Sample]:
    assert len(rec.snapshots) == 1
    return list(rec.snapshots[0].samples)


def test_every_fixture_file_is_listed(smi_fixtures: Path) -> None:
    on_disk = {
        str(p.relative_to(smi_fixtures))
        for p in smi_fixtures.rglob("*")
        if p.is_file() and p.name != "README.md"
    }
    assert on_disk == set(EXPECTED_FORMATS)


def test_every_fixture_parses_in_its_format_and_only_the_damaged_one_has_problems(smi_fixtures: Path) -> None:
    for rel, fmt in EXPECTED_FORMATS.items():
        rec = _load(smi_fixtures, rel)
        assert rec.format == fmt, rel
        if rel in DAMAGED:
            assert rec.problems, rel
        else:
            assert rec.problems == [], (rel, rec.problems)
        for snap in rec.snapshots:
            for s in snap.samples:
                for name in ("util_gpu_pct", "memory_used_bytes", "power_draw_watts", "temperature_c"):
                    value = getattr(s, name)
                    # never a sentinel: a value in range, or an explicit NotSupported/Failed
                    assert isinstance(value, NotSupported | Failed) or value >= 0, (rel, name, value)


def test_format_detection_does_not_trust_the_extension(smi_fixtures: Path, tmp_path: Path) -> None:
    src = smi_fixtures / "xml/a10g__idle__515.105.01.xml"
    renamed = tmp_path / "gpu.csv"
    renamed.write_bytes(src.read_bytes())
    assert load_recording(renamed).format == "xml"


def test_xml_a100_mig(smi_fixtures: Path) -> None:
    rec = _load(smi_fixtures, "xml/a100-sxm4-80gb__mig-enabled__535.54.03.xml")
    (s,) = _only(rec)  # <attached_gpus> says 4; the file holds one <gpu>
    assert s.name == "NVIDIA A100-SXM4-80GB"
    assert s.mig_mode is True
    assert s.util_gpu_pct == NOT_SUPPORTED  # N/A under MIG, not 0 %
    assert s.persistence_mode is False
    assert s.ecc_mode_enabled is True
    assert isinstance(s.mig_devices, tuple)
    assert len(s.mig_devices) == 4
    assert s.mig_devices[0].memory_total_bytes == 19968 * MIB
    assert s.mig_devices[0].gpu_instance_id == 3
    assert rec.snapshots[0].driver_version == "535.54.03"
    assert rec.snapshots[0].cuda_driver_version == "12.2"


def test_xml_old_throttle_names_and_processes(smi_fixtures: Path) -> None:
    (t4,) = _only(_load(smi_fixtures, "xml/tesla-t4__2-processes__515.105.01.xml"))
    assert t4.name == "Tesla T4"
    assert t4.throttle_reasons == ()  # clocks_throttle_reasons, all "Not Active"
    assert isinstance(t4.processes, tuple)
    assert [(p.pid, p.kind, p.used_memory_bytes) for p in t4.processes] == [
        (675, "graphics", 22 * MIB),
        (5762, "compute", 1005 * MIB),
    ]
    (a10g,) = _only(_load(smi_fixtures, "xml/a10g__idle__515.105.01.xml"))
    assert a10g.throttle_reasons == ("gpu_idle",)
    assert (a10g.pcie_gen_current, a10g.pcie_gen_max) == (1, 4)
    assert (a10g.pcie_width_current, a10g.pcie_width_max) == (8, 16)


def test_xml_new_event_names_and_two_gpus(smi_fixtures: Path) -> None:
    (rtx,) = _only(_load(smi_fixtures, "xml/rtx-3080__load-65pct__595.58.03.xml"))
    assert rtx.util_gpu_pct == 65.0
    assert rtx.power_draw_watts == pytest.approx(139.62)  # average_power_draw in the v13 DTD
    assert rtx.memory_total_bytes == 10240 * MIB
    a5000 = _only(_load(smi_fixtures, "xml/2x-rtx-a5000__idle__590.44.01.xml"))
    assert [s.bus_id for s in a5000] == ["00000000:81:00.0", "00000000:C1:00.0"]
    assert all(s.remapped_rows_pending is False for s in a5000)
    assert all(s.fan_speed_pct == 30.0 for s in a5000)


def test_query_text_8x_h100_one_gpu_throttled(smi_fixtures: Path) -> None:
    rec = _load(smi_fixtures, "query-text/8x-h100__sw-power-cap-sw-thermal__535.183.01.txt")
    samples = _only(rec)
    assert len(samples) == 8
    throttled = [
        s for s in samples if isinstance(s.throttle_reasons, tuple) and "sw_power_cap" in s.throttle_reasons
    ]
    assert [s.bus_id for s in throttled] == ["00000000:75:00.0"]
    assert "sw_thermal_slowdown" in throttled[0].throttle_reasons  # type: ignore[operator]
    assert samples[0].pcie_replay_count == 120
    assert samples[0].memory_total_bytes == 81559 * MIB
    assert rec.snapshots[0].driver_version == "535.183.01"


def test_query_text_a10_remap_pending(smi_fixtures: Path) -> None:
    (s,) = _only(_load(smi_fixtures, "query-text/a10__remapped-rows-uncorrectable-pending__535.129.03.txt"))
    assert s.remapped_rows_uncorrectable == 4
    assert s.remapped_rows_pending is True
    assert s.remapped_rows_failure is False
    assert s.ecc_uncorrected_volatile == 0  # the counters read 0 while rows were remapped
    assert s.retired_pages_pending == NOT_SUPPORTED


def test_query_text_titan_v_legacy_ecc_all_na(smi_fixtures: Path) -> None:
    (s,) = _only(_load(smi_fixtures, "query-text/titan-v__legacy-ecc-layout__560.35.03.txt"))
    assert s.name == "NVIDIA TITAN V"
    for name in ("ecc_corrected_volatile", "ecc_uncorrected_volatile", "ecc_uncorrected_aggregate"):
        assert getattr(s, name) == NOT_SUPPORTED
    assert s.remapped_rows_pending == NOT_SUPPORTED


def test_legacy_ecc_layout_with_counts_reads_the_totals() -> None:
    text = (
        "==============NVSMI LOG==============\n\nAttached GPUs : 1\nGPU 00000000:01:00.0\n"
        "    Product Name : Tesla V100\n    ECC Errors\n        Volatile\n            Single Bit\n"
        "                Device Memory : 3\n                Total : 5\n            Double Bit\n"
        "                Device Memory : 1\n                Total : 2\n"
        "    FB Memory Usage\n        Total : 16160 MiB\n    Utilization\n        Gpu : 5 %\n"
        "    Temperature\n        GPU Current Temp : 40 C\n    Clocks\n        SM : 1380 MHz\n"
    )
    rec = parse_recording_text(text)
    (s,) = rec.snapshots[0].samples
    assert (s.ecc_corrected_volatile, s.ecc_uncorrected_volatile) == (5, 2)
    assert rec.problems == []


def test_malformed_truncated_gives_what_it_can_and_problems(smi_fixtures: Path) -> None:
    rec = _load(smi_fixtures, "query-text/h100__malformed-truncated__535.183.01.txt")
    (s,) = _only(rec)
    assert s.name == "NVIDIA H100 80GB HBM3"
    assert s.pcie_replay_count == 120
    text = " ".join(p.message for p in rec.problems)
    assert "8 GPUs" in text
    assert "invalid hw slowdown" in text
    assert all(p.source.endswith("h100__malformed-truncated__535.183.01.txt") for p in rec.problems)


def test_tables_fan_err_and_8x_h100(smi_fixtures: Path) -> None:
    (g,) = _only(_load(smi_fixtures, "table/geforce__fan-err__525.125.06.txt"))
    assert g.fan_speed_pct == Failed("ERR!")
    assert g.temperature_c == 38.0
    assert g.power_limit_watts == 450.0
    assert g.memory_total_bytes == 23028 * MIB
    assert g.compute_mode == "E. Process"
    rec = _load(smi_fixtures, "table/8x-h100__idle__550.90.07.txt")
    samples = _only(rec)
    assert [s.index for s in samples] == list(range(8))
    assert all(s.memory_used_bytes == 1 * MIB and s.util_gpu_pct == 0.0 for s in samples)
    assert all(s.processes == () for s in samples)
    assert rec.snapshots[0].cuda_driver_version == "12.4"


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("errors/device-handle-unknown-error.stdout.txt", ErrorKind.GPU_LOST),
        ("errors/driver-not-communicating.stdout.txt", ErrorKind.DRIVER_MISSING),
        ("errors/no-devices-found.stdout.txt", ErrorKind.NO_DEVICES),
        ("errors/nvml-init-unknown-error.stdout.txt", ErrorKind.NVML_INIT),
    ],
)
def test_error_texts(smi_fixtures: Path, rel: str, kind: str) -> None:
    rec = _load(smi_fixtures, rel)
    (snap,) = rec.snapshots
    assert classify_error_text(snap.errors[0]) == kind
    if kind == ErrorKind.GPU_LOST:
        (s,) = snap.samples
        assert s.lost and s.bus_id == "0000:0B:00.0"
        assert isinstance(s.util_gpu_pct, Failed)
    else:
        assert snap.samples == ()


def test_library_mismatch_text() -> None:
    rec = parse_recording_text("Failed to initialize NVML: Driver/library version mismatch\n")
    assert classify_error_text(rec.snapshots[0].errors[0]) == ErrorKind.LIBRARY_MISMATCH


def test_kernel_log_xid_119(smi_fixtures: Path) -> None:
    rec = _load(smi_fixtures, "kernel-log/h100__xid-119-gsp-rpc-timeout.dmesg.log")
    assert len(rec.xid_events) == 5
    first = rec.xid_events[0]
    assert (first.pci_bus_id, first.xid, first.pid, first.process_name) == (
        "00000000:9B:00.0",
        119,
        2024380,
        "nvidia-smi",
    )
    assert first.message.startswith("Timeout after 6s")
    assert first.timestamp == "Sun Feb 23 16:24:18 2025"


def test_xid_line_variants() -> None:
    events = parse_xid_events(
        "[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.\n"
        "Feb 23 16:24:18 host kernel: NVRM: Xid (0000:03:00): 13, Graphics Exception\n"
    )
    assert [(e.pci_bus_id, e.xid, e.pid) for e in events] == [
        ("00000000:3B:00.0", 79, None),
        ("00000000:03:00.0", 13, None),
    ]
    assert events[0].message == "GPU has fallen off the bus."


def test_captures_idle_then_load(smi_fixtures: Path) -> None:
    rec = _load(smi_fixtures, "captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt")
    idle, load = rec.snapshots
    assert idle.samples[0].timestamp_s < load.samples[0].timestamp_s
    assert idle.samples[0].util_gpu_pct == 0.0
    assert load.samples[0].util_gpu_pct == 100.0
    assert load.samples[0].compute_capability == "9.0"  # only the CSV has it: merged in
    assert load.driver_version == "590.48.01"
    assert load.cuda_driver_version == "13.1"
    assert "capabilities :: version" in rec.sections
    assert "NVML version" in rec.sections["capabilities :: version"]
    assert isinstance(load.samples[0].processes, tuple) and len(load.samples[0].processes) == 3


def test_captures_mig_and_encoder(smi_fixtures: Path) -> None:
    mig = (
        _load(smi_fixtures, "captures/linux-x86_64__nvidia-h100-mig__590.48.01.txt").snapshots[-1].samples[0]
    )
    assert mig.mig_mode is True
    assert mig.util_gpu_pct == NOT_SUPPORTED
    assert isinstance(mig.mig_devices, tuple) and len(mig.mig_devices) == 4
    l40s = _load(smi_fixtures, "captures/linux-x86_64__nvidia-l40s__595.80.txt").snapshots[-1].samples[0]
    assert isinstance(l40s.util_gpu_pct, float) and l40s.util_gpu_pct < 15
    assert isinstance(l40s.util_encoder_pct, float) and l40s.util_encoder_pct > 50
    desk = _load(
        smi_fixtures, "captures/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt"
    ).snapshots[0]
    procs = desk.samples[0].processes
    assert isinstance(procs, tuple)
    assert {p.kind for p in procs} >= {"graphics", "compute+graphics"}
    assert desk.samples[0].fan_speed_pct == 0.0


def test_directory_of_recordings(smi_fixtures: Path) -> None:
    rec = load_recording(smi_fixtures / "xml")
    assert rec.format == "directory"
    assert len(rec.snapshots) == 5
    times = [s.samples[0].timestamp_s for s in rec.snapshots]
    assert times == sorted(times)


def test_directory_attaches_xids_to_matching_gpus(smi_fixtures: Path, tmp_path: Path) -> None:
    (tmp_path / "dmesg.log").write_text(
        (smi_fixtures / "kernel-log/h100__xid-119-gsp-rpc-timeout.dmesg.log").read_text()
    )
    table = (smi_fixtures / "table/8x-h100__idle__550.90.07.txt").read_text()
    (tmp_path / "smi.txt").write_text(table)
    rec = load_recording(tmp_path)
    by_bus = {s.bus_id: s for s in rec.snapshots[0].samples}
    assert by_bus["00000000:9B:00.0"].xid_errors == 5
    assert by_bus["00000000:9B:00.0"].xid_last == 119
    assert by_bus["00000000:19:00.0"].xid_errors == NOT_SUPPORTED


@pytest.mark.parametrize("content", ["", "hello\n", "# just a comment\n", '{"json": true}\n'])
def test_not_a_recording_is_replay_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "x.txt"
    path.write_text(content)
    with pytest.raises(ReplayError) as info:
        load_recording(path)
    assert info.value.exit_code == 2
    assert "To fix:" in info.value.render()


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(ReplayError):
        load_recording(tmp_path / "nope")
    with pytest.raises(ReplayError):
        load_recording(tmp_path)


def test_truncated_xml_keeps_complete_gpus(smi_fixtures: Path) -> None:
    text = (smi_fixtures / "xml/2x-rtx-a5000__idle__590.44.01.xml").read_text()
    cut = text[: text.index('<gpu id="00000000:C1:00.0">') + 200]
    rec = parse_recording_text(cut, source="cut.xml")
    assert rec.format == "xml"
    assert rec.problems
    (s,) = rec.snapshots[0].samples
    assert s.bus_id == "00000000:81:00.0"


def test_traces(trace_fixtures: Path) -> None:
    rec = load_recording(trace_fixtures / "landct_desktop_bursts_1s.csv")
    assert rec.format == "csv"
    assert len(rec.snapshots) == 434
    rec2 = load_recording(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv")
    assert len(rec2.snapshots) == 464
    rec3 = load_recording(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.csv")  # the W&B export
    assert rec3.format == "csv"
    assert len(rec3.snapshots) == 464


_ALL_TEXTS: list[tuple[str, str]] = []


def _texts(smi_fixtures: Path) -> list[tuple[str, str]]:
    if not _ALL_TEXTS:
        _ALL_TEXTS.extend((rel, (smi_fixtures / rel).read_text()) for rel in sorted(EXPECTED_FORMATS))
    return _ALL_TEXTS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_recordings_never_raise_anything_but_replay_error(
    smi_fixtures: Path, data: st.DataObject
) -> None:
    """Cut anywhere, lines dropped or indentation mangled: what parses comes back, or a ReplayError —
    never a traceback (the doctor turns problems into replay.unparsed)."""
    rel, text = data.draw(st.sampled_from(_texts(smi_fixtures)))
    lines = text.splitlines(keepends=True)
    cut = data.draw(st.integers(0, len(text)))
    mode = data.draw(st.sampled_from(["truncate", "drop", "dedent"]))
    if mode == "truncate":
        damaged = text[:cut]
    else:
        i = data.draw(st.integers(0, max(0, len(lines) - 1)))
        j = data.draw(st.integers(i, min(len(lines), i + 20)))
        middle = [] if mode == "drop" else [ln.lstrip() for ln in lines[i:j]]
        damaged = "".join(lines[:i] + middle + lines[j:])
    try:
        rec = parse_recording_text(damaged, source=rel)
    except ReplayError:
        return
    for snap in rec.snapshots:
        for s in snap.samples:
            assert isinstance(s, Sample)


_ENCODINGS = {
    "utf-8": lambda t: t.encode("utf-8"),
    "utf-8-bom": lambda t: t.encode("utf-8-sig"),
    "utf-16": lambda t: t.encode("utf-16"),  # a Windows PowerShell redirect
    "crlf": lambda t: t.replace("\n", "\r\n").encode("utf-8"),
    "blank-lines": lambda t: ("\n\n" + t.replace("\n", "\n\n")).encode("utf-8"),
}


def _all_texts(smi_fixtures: Path, trace_fixtures: Path) -> list[tuple[str, str]]:
    traces = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(trace_fixtures.glob("*.csv"))]
    return _texts(smi_fixtures) + traces


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_prefix_of_any_fixture_in_any_encoding_loads_or_is_a_replay_error(
    smi_fixtures: Path, trace_fixtures: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """A recording copied off a machine may be cut anywhere — even mid-character of a UTF-16 file — and
    be in any of the encodings and line ends Windows and Linux write. load_recording gives readings (and
    ParseProblems) or a ReplayError, never another exception."""
    rel, text = data.draw(st.sampled_from(_all_texts(smi_fixtures, trace_fixtures)))
    encoding = data.draw(st.sampled_from(sorted(_ENCODINGS)))
    raw = _ENCODINGS[encoding](text[:200_000])  # the traces are long; their head is enough
    cut = data.draw(st.integers(0, len(raw)))
    path = tmp_path_factory.mktemp("cut") / Path(rel).name
    path.write_bytes(raw[:cut])
    try:
        rec = load_recording(path)
    except ReplayError as exc:
        assert exc.message  # one clear message
        return
    for snap in rec.snapshots:
        for s in snap.samples:
            assert isinstance(s, Sample)
            for name in ("util_gpu_pct", "memory_used_bytes", "power_draw_watts", "temperature_c"):
                got = getattr(s, name)
                assert isinstance(got, int | float | NotSupported | Failed), (name, got)
