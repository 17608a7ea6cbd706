"""Shapes of nvidia-smi output met in real recordings that are not among tests/fixtures/recordings.

Each text here is a minimal reproduction written for this test (not a copy of a recording): it keeps only
the lines that show the shape — a newer driver's renamed labels, Windows' driver-model column, a
pre-410 table, a vGPU guest's zero sensors — and the test states what must come out of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.errors import ReplayError
from gpuwise.gpu import _values as v
from gpuwise.gpu.replay import load_recording, parse_recording_text
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, NotSupported
from gpuwise.gpu.smi_csv import parse_query_csv, read_query_csv

MIB = 2**20

# Drivers 610+ relabel the banner ("KMD Version", "CUDA UMD Version"); on Windows the first cell ends with
# the driver model instead of persistence mode, and per-process memory is N/A under WDDM.
TABLE_610_WINDOWS = """\
Mon Jan  5 09:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 612.10                 KMD Version: 612.10        CUDA UMD Version: 13.4     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 3060      WDDM  |   00000000:01:00.0  On |                  N/A |
| 30%   41C    P8             12W /  170W |     900MiB /  12288MiB |      3%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA RTX A4000              TCC  |   00000000:02:00.0 Off |                  Off |
| 41%   50C    P2             70W /  140W |    4000MiB /  16376MiB |     88%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A            1111    C+G   C:\\Windows\\explorer.exe               N/A      |
|    1   N/A  N/A            2222      C   ...\\python.exe                        3900MiB |
+-----------------------------------------------------------------------------------------+
"""

# Before driver 410 the banner has no CUDA version, a GPU block has two lines (no MIG row), and the
# process table has no GI/CI columns.
TABLE_PRE_410 = """\
Tue Mar  6 10:00:00 2018
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 390.48                 Driver Version: 390.48                    |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 108...  Off  | 00000000:03:00.0  On |                  N/A |
| 25%   40C    P2    60W / 250W |   5000MiB / 11178MiB |     71%      Default |
+-------------------------------+----------------------+----------------------+
|   1  Tesla K80           On   | 00000000:04:00.0 Off |                    0 |
| N/A   33C    P8    26W / 149W |      0MiB / 11439MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID   Type   Process name                             Usage      |
|=============================================================================|
|    0      1234      G   /usr/lib/xorg/Xorg                           200MiB |
|    0      5678      C   python3                                     4790MiB |
+-----------------------------------------------------------------------------+
"""

# `-q` of drivers 610+: the old version labels carry a deprecation note, the new ones come after; the power
# limits moved into a "GPU Ceiling Power Limit" group; WDDM has no per-process memory.
QUERY_610 = """\

==============NVSMI LOG==============

Timestamp                                 : Mon Jan  5 09:00:00 2026
Driver Version                            : 612.10 [Deprecated; use KMD Version instead]
CUDA Version                              : 13.4 [Deprecated; use CUDA UMD Version instead]
KMD Version                               : 612.10
CUDA UMD Version                          : 13.4

Attached GPUs                             : 1
GPU 00000000:01:00.0
    Product Name                          : NVIDIA GeForce RTX 3060
    Persistence Mode                      : N/A
    FB Memory Usage
        Total                             : 12288 MiB
        Used                              : 900 MiB
    Utilization
        GPU                               : 3 %
    Temperature
        GPU Current Temp                  : 41 C
    GPU Power Readings
        Average Power Draw                : N/A
        Instantaneous Power Draw          : 12.50 W
        GPU Ceiling Power Limit
            Current Power Limit           : 170.00 W
            Default Power Limit           : 170.00 W
        Min Power Limit                   : 100.00 W
    Clocks
        SM                                : 210 MHz
    Max Clocks
        SM                                : 2100 MHz
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 1111
            Type                          : C+G
            Name                          : C:\\Windows\\explorer.exe
            Used GPU Memory               : Not available in WDDM driver model
"""

# A vGPU guest (GRID profile) cannot read the board's sensors and reports 0 C and 0 MHz, not N/A.
XML_VGPU_GUEST = """\
<?xml version="1.0" ?>
<nvidia_smi_log>
\t<driver_version>511.00</driver_version>
\t<gpu id="00000000:00:0B.0">
\t\t<product_name>GRID T4-2Q</product_name>
\t\t<gpu_virtualization_mode>
\t\t\t<virtualization_mode>VGPU</virtualization_mode>
\t\t</gpu_virtualization_mode>
\t\t<utilization><gpu_util>5 %</gpu_util></utilization>
\t\t<temperature><gpu_temp>0 C</gpu_temp></temperature>
\t\t<clocks><sm_clock>0 MHz</sm_clock><mem_clock>0 MHz</mem_clock></clocks>
\t\t<max_clocks><sm_clock>0 MHz</sm_clock><mem_clock>0 MHz</mem_clock></max_clocks>
\t</gpu>
</nvidia_smi_log>
"""


def test_table_of_driver_610_on_windows() -> None:
    rec = parse_recording_text(TABLE_610_WINDOWS)
    assert rec.format == "table"
    assert rec.problems == []
    snap = rec.snapshots[0]
    assert (snap.driver_version, snap.cuda_driver_version) == ("612.10", "13.4")
    gpu0, gpu1 = snap.samples
    assert gpu0.name == "NVIDIA GeForce RTX 3060"
    assert gpu0.persistence_mode is NOT_SUPPORTED  # Windows has no persistence mode
    assert gpu0.extra["driver_model"] == "WDDM" and gpu1.extra["driver_model"] == "TCC"
    assert gpu1.util_gpu_pct == 88.0 and gpu1.memory_used_bytes == 4000 * MIB
    assert isinstance(gpu0.processes, tuple) and isinstance(gpu1.processes, tuple)
    (explorer,) = gpu0.processes
    assert explorer.pid == 1111 and explorer.used_memory_bytes is NOT_SUPPORTED
    (python,) = gpu1.processes
    assert python.used_memory_bytes == 3900 * MIB


def test_table_before_driver_410() -> None:
    rec = parse_recording_text(TABLE_PRE_410)
    assert rec.format == "table"
    snap = rec.snapshots[0]
    assert snap.driver_version == "390.48"
    assert snap.cuda_driver_version is NOT_SUPPORTED  # not printed, not invented
    gpu0, gpu1 = snap.samples
    assert gpu0.util_gpu_pct == 71.0 and gpu1.fan_speed_pct is NOT_SUPPORTED
    assert gpu1.persistence_mode is True and gpu1.ecc_uncorrected_volatile == 0
    assert isinstance(gpu0.processes, tuple)
    assert [(p.pid, p.kind, p.used_memory_bytes) for p in gpu0.processes] == [
        (1234, "graphics", 200 * MIB),
        (5678, "compute", 4790 * MIB),
    ]
    assert gpu1.processes == ()


def test_query_text_of_driver_610() -> None:
    rec = parse_recording_text(QUERY_610)
    snap = rec.snapshots[0]
    # the version without its deprecation note, so version comparisons work
    assert (snap.driver_version, snap.cuda_driver_version) == ("612.10", "13.4")
    (gpu,) = snap.samples
    assert gpu.power_limit_watts == 170.0 and gpu.power_default_limit_watts == 170.0
    assert gpu.power_draw_watts == 12.5
    assert isinstance(gpu.processes, tuple)
    (proc,) = gpu.processes
    assert proc.used_memory_bytes is NOT_SUPPORTED  # "Not available in WDDM driver model" is no failure


def test_vgpu_guest_zero_sensors_are_not_readings() -> None:
    (gpu,) = parse_recording_text(XML_VGPU_GUEST).snapshots[0].samples
    assert gpu.util_gpu_pct == 5.0
    for name in (
        "temperature_c",
        "sm_clock_mhz",
        "memory_clock_mhz",
        "sm_clock_max_mhz",
        "memory_clock_max_mhz",
    ):
        assert getattr(gpu, name) is NOT_SUPPORTED, name


def test_zero_max_clock_is_never_a_reading_but_zero_temperature_outside_vgpu_is_kept() -> None:
    text = XML_VGPU_GUEST.replace("VGPU", "None")
    (gpu,) = parse_recording_text(text).snapshots[0].samples
    assert gpu.sm_clock_max_mhz is NOT_SUPPORTED  # nothing can divide by it
    assert gpu.temperature_c == 0.0  # a bare-metal reading stays what nvidia-smi said


@pytest.mark.parametrize("lead", ["\n", "\n\n  ", "\ufeff", "\r\n"])
def test_xml_after_blank_lines_or_bom_is_not_damaged(lead: str, tmp_path: Path) -> None:
    rec = parse_recording_text(lead + XML_VGPU_GUEST)
    assert rec.format == "xml" and rec.problems == []
    path = tmp_path / "gpu.xml"
    path.write_bytes((lead + XML_VGPU_GUEST).encode("utf-8"))
    assert load_recording(path).problems == []


def test_xml_of_driver_610_prefers_the_new_version_tags() -> None:
    text = XML_VGPU_GUEST.replace(
        "<driver_version>511.00</driver_version>",
        "<driver_version>612.10 [Deprecated]</driver_version><kmd_version>612.10</kmd_version>"
        "<cuda_version>13.4 [Deprecated]</cuda_version><cuda_umd_version>13.4</cuda_umd_version>",
    )
    snap = parse_recording_text(text).snapshots[0]
    assert (snap.driver_version, snap.cuda_driver_version) == ("612.10", "13.4")


def test_csv_memory_in_old_mb_units_is_binary() -> None:
    text = (
        "timestamp, utilization.gpu [%], memory.used [MB], memory.total [MB]\n"
        "2016/05/01 10:00:00.000, 50 %, 1024 MB, 12206 MB\n"
    )
    (s,) = parse_query_csv(text)
    assert s.memory_used_bytes == 1024 * MIB and s.memory_total_bytes == 12206 * MIB


@pytest.mark.parametrize(
    "text",
    [
        "2026/08/01 03:59:40.361, 0, 90 %, 10549 MiB\n2026/08/01 03:59:41.361, 0, 91 %, 10549 MiB\n",
        "0, 45, 1024\n1, 50, 2048\n",  # noheader,nounits without a timestamp
    ],
)
def test_csv_without_header_says_to_keep_it(text: str, tmp_path: Path) -> None:
    with pytest.raises(ReplayError) as caught:
        parse_recording_text(text)
    assert "header" in caught.value.message and "noheader" in (caught.value.fix or "")
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(ReplayError, match="header"):
        read_query_csv(path)  # what `gpuwise idle replay` reads


@pytest.mark.parametrize(
    ("stamp", "text"),
    [
        ("2026/08/01 03:59:40", "2026-08-01T03:59:40"),  # no milliseconds
        ("2026-08-01T03:59:40.5", "2026-08-01T03:59:40.500"),  # ISO with a T
        ("2026/08/01 03:59:40.361", "2026-08-01T03:59:40.361"),
    ],
)
def test_csv_timestamp_variants(stamp: str, text: str) -> None:
    (s,) = parse_query_csv(f"timestamp, utilization.gpu [%]\n{stamp}, 7 %\n")
    assert v.format_trace_time(s.timestamp_s) == text


def test_csv_crlf_blank_lines_and_a_truncated_last_line(tmp_path: Path) -> None:
    body = (
        "timestamp, index, utilization.gpu [%], memory.used [MiB]\r\n\r\n"
        "2026/08/01 03:59:40.361, 0, 90 %, 100 MiB\r\n\r\n"
        "2026/08/01 03:59:41.361, 0, 80 %, 100 MiB\r\n"
        "2026/08/01 03:59:4"
    )
    path = tmp_path / "trace.csv"
    path.write_bytes(body.encode("utf-16"))
    rec = load_recording(path)
    assert [s.samples[0].util_gpu_pct for s in rec.snapshots] == [90.0, 80.0]


@pytest.mark.parametrize(
    ("cell", "kind"),
    [
        ("[Unknown Error]", Failed),
        ("[GPU requires reset]", Failed),
        ("ERR!", Failed),
        ("[Not Supported]", NotSupported),
        ("[Function Not Found]", NotSupported),  # a field newer than the driver's NVML
        ("Not available in WDDM driver model", NotSupported),
    ],
)
def test_cells_that_hold_no_value(cell: str, kind: type) -> None:
    assert isinstance(v.to_float(cell), kind)
    assert isinstance(v.to_bytes(cell), kind)


def test_string_fields_keep_their_words() -> None:
    text = (
        "timestamp, utilization.gpu [%], pstate, compute_mode, persistence_mode, ecc.mode.current\n"
        "2026/08/01 03:59:40.361, 1 %, P0, Exclusive_Process, Enabled, Disabled\n"
    )
    (s,) = parse_query_csv(text)
    assert (s.pstate, s.compute_mode, s.persistence_mode, s.ecc_mode_enabled) == (
        "P0",
        "Exclusive_Process",
        True,
        False,
    )


def test_query_text_key_touching_its_colon() -> None:
    # driver 610 aligns values at column 55; a longer key touches the colon
    text = QUERY_610.replace(
        "        GPU Current Temp                  : 41 C\n",
        "        Memory Max Operating T.Limit Temp Specification: 0 C\n        GPU Current Temp: 41 C\n",
    )
    (gpu,) = parse_recording_text(text).snapshots[0].samples
    assert gpu.temperature_c == 41.0


def test_csv_without_index_tells_gpus_apart_by_bus_id() -> None:
    # nvidia-smi stamps each GPU's row separately, so two GPUs of one instant differ by a few ms
    text = (
        "timestamp, pci.bus_id, utilization.gpu [%], utilization.memory [%]\n"
        "2026/08/01 03:59:40.361, 00000000:01:00.0, 90 %, 10 %\n"
        "2026/08/01 03:59:40.364, 00000000:02:00.0, 5 %, 1 %\n"
        "2026/08/01 03:59:41.361, 00000000:01:00.0, 91 %, 11 %\n"
        "2026/08/01 03:59:41.365, 00000000:02:00.0, 6 %, 1 %\n"
    )
    rec = parse_recording_text(text)
    assert [[(s.index, s.util_gpu_pct) for s in snap.samples] for snap in rec.snapshots] == [
        [(0, 90.0), (1, 5.0)],
        [(0, 91.0), (1, 6.0)],
    ]


def test_csv_header_repeated_by_appended_runs_and_units_without_a_space() -> None:
    header = "timestamp, index, utilization.gpu[%], memory.used[MiB]\n"
    text = header + "2026/08/01 03:59:40.361, 0, 90, 1000\n" + header + "2026/08/01 04:10:00.000, 0, 0, 0\n"
    samples = parse_query_csv(text)
    assert [(s.util_gpu_pct, s.memory_used_bytes) for s in samples] == [(90.0, 1000 * MIB), (0.0, 0)]


@pytest.mark.parametrize(
    "stamp",
    ["2026-08-01T03:59:40.361Z", "2026-08-01T03:59:40.361+02:00", "2026-08-01T03:59:40.361000123"],
)
def test_csv_iso_timestamps_from_loggers_keep_their_wall_clock(stamp: str) -> None:
    (s,) = parse_query_csv(f"timestamp, utilization.gpu [%]\n{stamp}, 7 %\n")
    assert v.format_trace_time(s.timestamp_s) == "2026-08-01T03:59:40.361"


def test_csv_snapshot_without_timestamp_replays_as_one_snapshot_but_not_as_a_trace(tmp_path: Path) -> None:
    text = (
        "index, name, utilization.gpu [%], memory.used [MiB]\n"
        "0, NVIDIA GeForce RTX 3090, 1 %, 963 MiB\n"
        "1, NVIDIA GeForce RTX 3090, 0 %, 1 MiB\n"
    )
    rec = parse_recording_text(text)
    assert rec.format == "csv" and len(rec.snapshots) == 1
    assert [s.index for s in rec.snapshots[0].samples] == [0, 1]
    path = tmp_path / "snap.csv"
    path.write_text(text)
    with pytest.raises(ReplayError, match="no timestamp"):
        read_query_csv(path)  # `idle replay` needs the clock


def test_query_text_display_subset_is_not_damage() -> None:
    # `nvidia-smi -q -d MEMORY` prints the chosen sections only
    text = (
        "\n==============NVSMI LOG==============\n\n"
        "Timestamp                                 : Mon Jan  5 09:00:00 2026\n"
        "Driver Version                            : 550.54.15\n\n"
        "Attached GPUs                             : 1\n"
        "GPU 00000000:01:00.0\n"
        "    FB Memory Usage\n"
        "        Total                             : 24576 MiB\n"
        "        Used                              : 100 MiB\n"
    )
    rec = parse_recording_text(text)
    assert rec.problems == []
    assert rec.snapshots[0].samples[0].memory_used_bytes == 100 * MIB


def test_query_text_and_xml_of_drivers_before_340() -> None:
    # early nvidia-smi: "Memory Usage" / <memory_usage>, and "Gpu : 45 C" for the temperature
    text = (
        "\n==============NVSMI LOG==============\n\n"
        "Timestamp                       : Tue Mar  5 10:00:00 2013\n"
        "Driver Version                  : 310.44\n\n"
        "Attached GPUs                   : 1\n"
        "GPU 0000:02:00.0\n"
        "    Product Name                : Tesla M2090\n"
        "    Memory Usage\n"
        "        Total                   : 5375 MB\n"
        "        Used                    : 10 MB\n"
        "    Utilization\n"
        "        Gpu                     : 0 %\n"
        "    Temperature\n"
        "        Gpu                     : 45 C\n"
        "    Clocks\n"
        "        Graphics                : 50 MHz\n"
    )
    rec = parse_recording_text(text)
    assert rec.problems == []
    (gpu,) = rec.snapshots[0].samples
    assert (gpu.memory_total_bytes, gpu.memory_used_bytes, gpu.temperature_c) == (5375 * MIB, 10 * MIB, 45.0)
    xml = (
        '<?xml version="1.0" ?>\n<nvidia_smi_log><driver_version>270.41</driver_version>'
        '<gpu id="0:1:0"><product_name>GeForce 9800 GTX</product_name>'
        "<memory_usage><total>511 MB</total><used>100 MB</used></memory_usage>"
        "<utilization><gpu_util>N/A</gpu_util></utilization></gpu></nvidia_smi_log>\n"
    )
    (old,) = parse_recording_text(xml).snapshots[0].samples
    assert old.memory_used_bytes == 100 * MIB and old.util_gpu_pct is NOT_SUPPORTED


def test_csv_with_nvidia_smi_messages_between_rows() -> None:
    text = (
        "timestamp, index, utilization.gpu [%]\n"
        "2026/08/01 03:59:40.361, 0, 90 %\n"
        "2026/08/01 03:59:40.362, 1, 80 %\n"
        "Unable to determine the device handle for GPU0000:02:00.0: Unknown Error\n"
        "2026/08/01 03:59:41.361, 0, 91 %\n"
    )
    samples = parse_query_csv(text)
    assert [(s.index, s.util_gpu_pct) for s in samples] == [(0, 90.0), (1, 80.0), (0, 91.0)]
    with pytest.raises(ReplayError, match="row 4"):
        parse_query_csv(text.replace("Unable to determine", "garbage"))


def test_xml_with_its_dtd_embedded() -> None:
    # `nvidia-smi -q -x --dtd` puts the DTD inline
    text = XML_VGPU_GUEST.replace(
        '<?xml version="1.0" ?>\n',
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log [\n'
        "<!ELEMENT nvidia_smi_log (driver_version, gpu)>\n"
        "<!ELEMENT driver_version (#PCDATA)>\n]>\n",
    )
    rec = parse_recording_text(text)
    assert rec.format == "xml" and rec.problems == []
    assert rec.snapshots[0].samples[0].util_gpu_pct == 5.0


def test_table_process_row_it_cannot_read_makes_the_list_unknown() -> None:
    # GeForce cards under drivers of the 340 era listed processes without pid or memory
    text = TABLE_PRE_410.replace(
        "|    0      5678      C   python3                                     4790MiB |",
        "|    1                 C   Not Supported                                        |",
    )
    gpu0, gpu1 = parse_recording_text(text).snapshots[0].samples
    assert isinstance(gpu0.processes, tuple) and len(gpu0.processes) == 1
    assert gpu1.processes is NOT_SUPPORTED


def test_kernel_log_line_variants() -> None:
    from gpuwise.gpu.kernel_log import parse_xid_events

    text = (
        "Dec  6 17:49:03 h kernel: [ 8659.726062] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off.\n"
        "[6085126.134786] NVRM: Xid (PCI:0002:00:00): 79, pid=1582259, name=nvc:[driver], fell off.\n"
        "kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1234\n"
        "2024-03-05T10:00:00.123456+0000 h kernel: NVRM: Xid (PCI:0000:02:00.0): 154, recovery action\n"
    )
    events = parse_xid_events(text)
    assert [(e.pci_bus_id, e.xid, e.pid) for e in events] == [
        ("00000000:01:00.0", 79, None),
        ("00000002:00:00.0", 79, 1582259),
        ("00000000:01:00.0", 79, 1234),
        ("00000000:02:00.0", 154, None),
    ]
    assert events[1].process_name == "nvc:[driver]"
    assert events[3].timestamp_s is not None
    assert v.format_trace_time(events[3].timestamp_s) == "2024-03-05T10:00:00.123456"


def test_csv_with_comment_lines_above_the_header() -> None:
    text = (
        "# nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv -l 1\n"
        "# host: trainer-3\n"
        "timestamp, utilization.gpu [%]\n"
        "2026/08/01 03:59:40.361, 7 %\n"
    )
    rec = parse_recording_text(text)
    assert rec.format == "csv"
    assert rec.snapshots[0].samples[0].util_gpu_pct == 7.0


def test_table_pasted_with_kernel_log_lines_keeps_the_xids() -> None:
    text = (
        TABLE_PRE_410
        + "$ dmesg | grep Xid\n"
        + "[ 8659.7] NVRM: Xid (PCI:0000:03:00): 79, pid=42, name=python3, GPU has fallen off the bus.\n"
    )
    path_text = parse_recording_text(text)
    assert path_text.format == "table"
    assert [(e.pci_bus_id, e.xid) for e in path_text.xid_events] == [("00000000:03:00.0", 79)]


def test_table_pasted_with_kernel_log_lines_counts_the_xid_on_its_gpu(tmp_path: Path) -> None:
    path = tmp_path / "bundle.txt"
    path.write_text(TABLE_PRE_410 + "[ 8659.7] NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus.\n")
    gpu0, gpu1 = load_recording(path).snapshots[0].samples
    assert (gpu0.xid_errors, gpu0.xid_last) == (1, 79)
    assert gpu1.xid_errors is NOT_SUPPORTED


def test_xml_of_driver_610_power_limit_in_its_ceiling_group() -> None:
    text = XML_VGPU_GUEST.replace(
        "\t\t<utilization>",
        "\t\t<gpu_power_readings><instant_power_draw>40.0 W</instant_power_draw>"
        "<gpu_ceiling_power_limit><current_power_limit>200.00 W</current_power_limit>"
        "<default_power_limit>250.00 W</default_power_limit></gpu_ceiling_power_limit>"
        "</gpu_power_readings>\n"
        "\t\t<fb_memory_usage><total>8 GiB</total><used>1 GiB</used></fb_memory_usage>\n"
        "\t\t<utilization>",
    )
    (gpu,) = parse_recording_text(text).snapshots[0].samples
    assert (gpu.power_draw_watts, gpu.power_limit_watts, gpu.power_default_limit_watts) == (
        40.0,
        200.0,
        250.0,
    )
    assert gpu.memory_total_bytes == 8 * 2**30


LOST_LINE = "Unable to determine the device handle for GPU0000:07:00.0: Unknown Error\n"


@pytest.mark.parametrize("shape", ["xml", "query-text", "table"])
def test_a_gpu_nvidia_smi_could_not_reach_is_reported_lost_beside_the_others(shape: str) -> None:
    # with one GPU fallen off the bus, nvidia-smi prints this line and then the others' readings
    body = {"xml": XML_VGPU_GUEST, "query-text": QUERY_610, "table": TABLE_PRE_410}[shape]
    rec = parse_recording_text(LOST_LINE + body)
    assert rec.format == shape and rec.problems == []
    snap = rec.snapshots[0]
    lost = [s for s in snap.samples if s.lost]
    assert len(lost) == 1 and lost[0].bus_id == "0000:07:00.0"
    assert lost[0].extra["index_known"] == "no"
    assert lost[0].index not in {s.index for s in snap.samples if not s.lost}
    assert len([s for s in snap.samples if not s.lost]) >= 1  # the others are still read
    assert any("device handle" in e for e in snap.errors)


def test_a_lost_line_for_a_gpu_that_is_listed_adds_no_second_sample() -> None:
    text = LOST_LINE.replace("0000:07:00.0", "0000:03:00.0") + TABLE_PRE_410
    snap = parse_recording_text(text).snapshots[0]
    assert [s.lost for s in snap.samples] == [False, False]
    assert snap.errors  # the message is still kept for the doctor


def test_zero_attached_gpus_is_an_answer_not_damage() -> None:
    xml = '<?xml version="1.0" ?>\n<nvidia_smi_log><attached_gpus>0</attached_gpus></nvidia_smi_log>\n'
    rec = parse_recording_text(xml)
    assert rec.problems == [] and rec.snapshots[0].samples == ()
    text = "\n==============NVSMI LOG==============\n\nDriver Version : 550.54.15\n\nAttached GPUs : 0\n"
    rec = parse_recording_text(text)
    assert rec.problems == [] and rec.snapshots[0].samples == ()
    damaged = parse_recording_text(xml.replace(">0<", ">2<"))
    assert damaged.problems  # says two, shows none


@pytest.mark.parametrize("cell", ["1e400", "-1e400", "nan", "inf"])
def test_cells_that_are_no_finite_number_fail_without_an_exception(cell: str) -> None:
    for conv in (v.to_float, v.to_int, v.to_bytes, v.to_rate):
        assert isinstance(conv(cell, ""), Failed)


def test_readings_no_gpu_can_have_are_not_passed_on_as_numbers() -> None:
    text = (
        "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.total [MiB], power.limit [W], "
        "clocks.max.sm [MHz], clocks.sm [MHz], temperature.gpu\n"
        "2026/08/01 03:59:40.361, 0, -5 %, 250 %, 0 MiB, 0.00 W, 0 MHz, 0 MHz, 0\n"
    )
    (s,) = parse_query_csv(text)
    assert isinstance(s.util_gpu_pct, Failed) and isinstance(s.util_memory_pct, Failed)
    assert s.memory_total_bytes is NOT_SUPPORTED and s.power_limit_watts is NOT_SUPPORTED
    assert s.sm_clock_max_mhz is NOT_SUPPORTED
    # a current clock or a temperature of 0 may be what a bare-metal GPU reported: kept
    assert (s.sm_clock_mhz, s.temperature_c) == (0.0, 0.0)
    table = TABLE_PRE_410.replace("60W / 250W", "60W /   0W")
    assert parse_recording_text(table).snapshots[0].samples[0].power_limit_watts is NOT_SUPPORTED


def test_query_csv_without_utilization_says_what_is_missing() -> None:
    text = (
        "uuid, name, driver_version, fan.speed [%], memory.used [MiB], pci.bus_id, index\n"
        "GPU-0, NVIDIA GeForce RTX 2080 SUPER, 466.63, 38 %, 575 MiB, 00000000:01:00.0, 0\n"
    )
    with pytest.raises(ReplayError) as caught:
        parse_recording_text(text)
    assert "utilization.gpu" in (caught.value.why or "") + caught.value.message


def test_csv_without_any_gpu_id_tells_gpus_of_one_poll_apart_by_their_ms_stamps() -> None:
    # NVIDIA's own example query has no index; a 3-GPU poll is stamped .210, .211, .211
    text = (
        "timestamp, name, utilization.gpu [%]\n"
        "2026/08/01 03:59:40.210, A100, 90 %\n"
        "2026/08/01 03:59:40.211, A100, 5 %\n"
        "2026/08/01 03:59:40.211, A100, 7 %\n"
        "2026/08/01 03:59:41.210, A100, 91 %\n"
        "2026/08/01 03:59:41.212, A100, 6 %\n"
        "2026/08/01 03:59:41.213, A100, 8 %\n"
    )
    rec = parse_recording_text(text)
    assert [[(s.index, s.util_gpu_pct) for s in snap.samples] for snap in rec.snapshots] == [
        [(0, 90.0), (1, 5.0), (2, 7.0)],
        [(0, 91.0), (1, 6.0), (2, 8.0)],
    ]


def test_csv_of_one_gpu_logged_every_100_ms_stays_one_gpu() -> None:
    rows = "".join(f"2026/08/01 03:59:40.{ms:03d}, {ms // 100} %\n" for ms in range(0, 1000, 100))
    samples = parse_query_csv("timestamp, utilization.gpu [%]\n" + rows)
    assert {s.index for s in samples} == {0} and len(samples) == 10


def test_gzipped_recordings_load_and_a_damaged_one_is_a_replay_error(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "trace.csv.gz"
    path.write_bytes(gzip.compress(b"timestamp, utilization.gpu [%]\n2026/08/01 03:59:40.361, 7 %\n"))
    assert load_recording(path).snapshots[0].samples[0].util_gpu_pct == 7.0
    path.write_bytes(gzip.compress(QUERY_610.encode())[:40])
    with pytest.raises(ReplayError, match="gzip"):
        load_recording(path)
    csv_path = tmp_path / "idle.csv.gz"
    csv_path.write_bytes(gzip.compress(b"timestamp, utilization.gpu [%]\n2026/08/01 03:59:40.361, 7 %\n"))
    assert [s.util_gpu_pct for s in read_query_csv(csv_path)] == [7.0]  # what `idle replay` reads
