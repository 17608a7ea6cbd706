"""Hostile recordings (issue 10): every reader in gpu/ is bounded in size, depth and time, and a value no GPU
can have is a failed reading, never a number. Each test names the input that once crashed, hung or ran
away with memory.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuwise.errors import ReplayError
from gpuwise.gpu import replay, smi_csv
from gpuwise.gpu.replay import load_recording, parse_recording_text
from gpuwise.gpu.sample import Failed
from gpuwise.gpu.smi_csv import parse_query_csv, read_query_csv

HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
ROW = "2026/01/01 00:00:00.000, 0, 5 %, 2 MiB\n"
XML_HEAD = '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<driver_version>550.90.07</driver_version>\n'
XML_GPU = (
    '<gpu id="00000000:18:00.0"><product_name>NVIDIA H100</product_name>'
    "<utilization><gpu_util>{util}</gpu_util></utilization></gpu>\n"
)


def _within(seconds: float, fn: Callable[[], Any]) -> Any:
    """`fn()` run in a thread that must finish in `seconds` (a hang is a failure, not a stuck test run)."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed back to the test below
            out["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_csv_field_over_128_kib_is_bad_input_not_a_traceback() -> None:
    """An unbalanced quote makes one cell of the rest of the file; Python's csv raised _csv.Error."""
    text = HEADER + '2026/01/01 00:00:00.000, 0, "' + "x" * 200_000 + "\n" + ROW
    with pytest.raises(ReplayError, match=r"line 2.*field larger"):
        parse_query_csv(text)
    with pytest.raises(ReplayError):
        parse_recording_text(text)


def test_a_csv_with_more_rows_than_a_replay_holds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smi_csv, "MAX_CSV_ROWS", 50)
    assert len(parse_query_csv(HEADER + ROW * 40)) == 40
    with pytest.raises(ReplayError, match="more than 50 rows"):
        parse_query_csv(HEADER + ROW * 60)


def test_a_header_thousands_of_columns_wide_is_refused_before_any_row_is_read() -> None:
    """A 2.9 KB gzip (fuzz) unpacked to a 300,000-cell first line; judging it cell by cell took over 10 s of
    CPU under the fuzz runner. The width alone says it is not a recording."""
    wide = "index, " + ", ".join(["x"] * (smi_csv.MAX_CSV_COLUMNS + 10)) + "\n" + "0, 1\n" * 40
    with pytest.raises(ReplayError, match=r"2,059 columns in its first row"):
        parse_query_csv(wide)
    at_limit = HEADER.rstrip("\n") + ", x" * (smi_csv.MAX_CSV_COLUMNS - HEADER.count(",") - 1) + "\n" + ROW
    assert len(parse_query_csv(at_limit)) == 1


def test_gzip_bomb_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """A 1.2 MB gzip once drove `idle replay` to 23 GB: the unpacked bound was 512 MiB, and 512 MiB of CSV
    rows take far more memory parsed. Now both the file and its unpacked text are bounded."""
    path = tmp_path / "bomb.csv.gz"
    rows = (ROW * 100_000).encode()
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(HEADER.encode())
        for _ in range(smi_csv.MAX_RECORDING_BYTES // len(rows) + 1):
            f.write(rows)
    assert path.stat().st_size < 2**20
    with pytest.raises(ReplayError, match="too large to replay"):
        read_query_csv(path)
    with pytest.raises(ReplayError, match="too large to replay"):
        load_recording(path)


def test_idle_replay_of_a_gzip_bomb_stays_under_1_gib(tmp_path: Path) -> None:
    """The red-team case through the CLI, in a child process that may not map more than 1 GiB."""
    path = tmp_path / "bomb.csv.gz"
    rows = (ROW * 100_000).encode()
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(HEADER.encode())
        for _ in range(200 * 2**20 // len(rows)):  # 200 MiB of rows: inside the old bound
            f.write(rows)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
        "from gpuwise.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, "idle", "replay", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "too large to replay" in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - started < 60


def test_a_file_over_the_bound_is_refused_from_its_size(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with path.open("wb") as f:  # a sparse file: its size is checked before a byte is read
        f.truncate(smi_csv.MAX_RECORDING_BYTES + 1)
    with pytest.raises(ReplayError, match="too large to replay"):
        _within(5, lambda: smi_csv.read_recording_bytes(path))


def test_a_link_to_a_device_is_refused_up_front(tmp_path: Path) -> None:
    link = tmp_path / "zero.csv"
    link.symlink_to("/dev/zero")
    with pytest.raises(ReplayError, match="not a regular file"):
        _within(5, lambda: load_recording(link))
    with pytest.raises(ReplayError, match="not a regular file"):
        _within(5, lambda: read_query_csv(link))


def test_a_fifo_nobody_writes_to_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    with pytest.raises(ReplayError, match="empty"):
        _within(5, lambda: load_recording(fifo))


def test_a_folder_of_recordings_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "zero.xml").symlink_to("/dev/zero")  # skipped, never opened
    os.mkfifo(tmp_path / "pipe.xml")  # skipped, never opened
    (tmp_path / "gpu.xml").write_text(XML_HEAD + XML_GPU.format(util="40 %") + "</nvidia_smi_log>\n")
    rec = _within(5, lambda: load_recording(tmp_path))
    assert rec.snapshots[0].samples[0].util_gpu_pct == 40.0
    monkeypatch.setattr(replay, "_MAX_FILES", 2)
    (tmp_path / "more.xml").write_text("x")
    (tmp_path / "again.xml").write_text("x")
    with pytest.raises(ReplayError, match="more than 2"):
        load_recording(tmp_path)


def test_xml_entities_are_never_expanded() -> None:
    """nvidia-smi never declares entities; a file that does is not read (the "billion laughs" shape)."""
    text = (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY busy "97 %">]>\n<nvidia_smi_log>\n'
        + XML_GPU.format(util="&busy;")
        + "</nvidia_smi_log>\n"
    )
    rec = parse_recording_text(text)
    assert rec.snapshots[0].samples == ()
    assert any("declares entities" in p.message for p in rec.problems)


def test_deeply_nested_xml_is_read_without_recursion_error() -> None:
    deep = "<a>" * 5000 + "1" + "</a>" * 5000
    text = XML_HEAD + XML_GPU.format(util="30 %").replace("</gpu>", deep + "</gpu>") + "</nvidia_smi_log>\n"
    (sample,) = parse_recording_text(text).snapshots[0].samples
    assert sample.util_gpu_pct == 30.0


def test_deeply_indented_query_text_is_read_without_recursion_error() -> None:
    lines = ["==============NVSMI LOG==============", "", "Attached GPUs : 1", "GPU 00000000:18:00.0"]
    lines += [" " * (i + 4) + f"Level {i}" for i in range(3000)]
    rec = parse_recording_text("\n".join(lines) + "\n")
    assert rec.format == "query-text"


def test_damaged_xml_with_many_unclosed_gpu_tags_is_salvaged_in_linear_time() -> None:
    """The salvage regex `<gpu\\b.*?</gpu>` rescanned the rest of the file from every `<gpu`."""
    text = XML_HEAD + XML_GPU.format(util="12 %") + "<gpu>" * 60_000
    rec = _within(5, lambda: parse_recording_text(text))
    assert [s.util_gpu_pct for s in rec.snapshots[0].samples] == [12.0]


@pytest.mark.parametrize(
    ("column", "cell", "field"),
    [
        ("utilization.gpu [%]", "1e308 %", "util_gpu_pct"),
        ("memory.used [MiB]", "1e308 MiB", "memory_used_bytes"),
        ("memory.total [MiB]", "1e300 MiB", "memory_total_bytes"),
        ("power.draw [W]", "1e308 W", "power_draw_watts"),
        ("temperature.gpu", "-1e308", "temperature_c"),
        ("clocks.sm [MHz]", "1e308 MHz", "sm_clock_mhz"),
        ("pcie.link.width.current", "1e308", "pcie_width_current"),
        ("ecc.errors.corrected.volatile.total", "1e308", "ecc_corrected_volatile"),
    ],
)
def test_values_no_gpu_can_have_are_failed_readings(column: str, cell: str, field: str) -> None:
    """`1e308 MiB` raised OverflowError (inf bytes to int); `1e308 W` was kept as a number."""
    text = f"timestamp, index, utilization.gpu [%], {column}\n2026/01/01 00:00:00.000, 0, 5 %, {cell}\n"
    if column.startswith("utilization"):
        text = f"timestamp, index, {column}\n2026/01/01 00:00:00.000, 0, {cell}\n"
    (sample,) = parse_query_csv(text)
    assert isinstance(getattr(sample, field), Failed)


def test_monitor_and_idle_replay_of_1e308_values_exit_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuwise.cli.main import main

    path = tmp_path / "huge.csv"
    rows = [f"2026/01/01 00:{m:02d}:00.000, 0, 1e308 %, 1e308 MiB, 1e308 W" for m in range(60)]
    path.write_text(
        "timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n" + "\n".join(rows)
    )
    assert main(["monitor", "--once", "--json", "--replay", str(path)]) == 0
    assert main(["idle", "replay", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1e+308" not in out.split("failed", 1)[0]  # never shown as a value
    assert '"stop_at": null' in out  # failed readings count as busy


def test_a_folder_given_as_a_csv_trace_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="is a folder"):
        read_query_csv(tmp_path)


def test_a_csv_naming_thousands_of_gpus_is_refused_not_replayed_in_quadratic_time() -> None:
    """20,000 distinct GPU indices took `idle replay` 80 s of CPU (every observation checks every GPU ever
    seen); at the row bound it would take hours."""
    rows = [f"2026/01/01 00:00:{k % 60:02d}.{k // 60:03d}, {k}, 0 %, 2 MiB" for k in range(300)]
    with pytest.raises(ReplayError, match="names GPU 299"):
        _within(5, lambda: parse_query_csv(HEADER + "\n".join(rows) + "\n"))
    with pytest.raises(ReplayError, match="names GPU -1"):
        parse_query_csv(HEADER + "2026/01/01 00:00:00.000, -1, 0 %, 2 MiB\n")
    # without an index column, GPUs are numbered by their bus id: 300 distinct ones are as many GPUs
    bus = [f"2026/01/01 00:00:00.{k:03d}, 0000:{k:04X}:00.0, 0 %" for k in range(300)]
    with pytest.raises(ReplayError, match="names GPU 2"):
        parse_query_csv("timestamp, pci.bus_id, utilization.gpu [%]\n" + "\n".join(bus) + "\n")
