"""`gpuwise bench task -- CMD`: units from --units or the command's own lines, the GPUs sampled through a
replay probe, the limit that stops the whole process group, and bad input that leaves nothing written."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gpuwise.bench.usertask import Readings, decide_bound, parse_units
from gpuwise.cli.main import main
from gpuwise.gpu.replay import parse_recording_text

REPO = Path(__file__).resolve().parents[2]
TRAINING = REPO / "tests" / "fixtures" / "monitor" / "8x-h100__training__constructed.csv"
NO_CLOUD = ["--metadata-url", "http://127.0.0.1:9"]
PY = sys.executable
# A user task with a known amount of work: 3 units of 4 frames, printed as they are done.
WORK = (
    "import json,time\n"
    "for _ in range(3):\n"
    "    time.sleep(0.05)\n"
    "    print(json.dumps({'gpuwise_units': 4}), flush=True)\n"
)


def _task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any] | None, str]:
    out = tmp_path / "task.json"
    config = tmp_path / "config.toml"
    config.write_text('[machine]\nprovider = "aws"\ninstance_type = "p5.48xlarge"\n', encoding="utf-8")
    code = main(
        ["bench", "task", "--out", str(out), "--config", str(config), "--interval", "0.05", *NO_CLOUD, *args]
    )
    err = capsys.readouterr().err
    return code, (json.loads(out.read_text(encoding="utf-8")) if out.exists() else None), err


def test_units_from_the_commands_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = _task(tmp_path, capsys, "--unit", "frames", "--", PY, "-c", WORK)
    assert code == 0 and doc is not None
    task = doc["task"]
    assert task["units"] == 12 and task["unit"] == "frames" and task["units_source"] == "gpuwise_units lines"
    assert task["seconds_per_unit"] == pytest.approx(task["seconds"] / 12, rel=1e-3)
    assert task["seconds"] >= 0.15 and task["exit_code"] == 0
    assert doc["machine"]["provider"] == "aws" and doc["machine"]["instance_type"] == "p5.48xlarge"
    assert set(doc) >= {"machine", "task", "started_at", "gpuwise_version"}
    assert '{"gpuwise_units": 4}' in err, "the command's stdout is passed on to stderr"


HEADER = ", ".join(
    [
        "timestamp",
        "index",
        "name",
        "utilization.gpu [%]",
        "utilization.memory [%]",
        "memory.used [MiB]",
        "memory.total [MiB]",
    ]
)


def _recording(gpu_pct: int, mem_pct: int, used_mib: int, seconds: int = 5) -> str:
    """A constructed one-GPU poll per second (nvidia-smi --query-gpu CSV)."""
    rows = [
        f"2026/08/01 04:00:{i:02d}.000, 0, NVIDIA H100 80GB HBM3, {gpu_pct} %, {mem_pct} %, "
        f"{used_mib + i} MiB, 81559 MiB"
        for i in range(seconds)
    ]
    return "\n".join([HEADER, *rows]) + "\n"


def test_units_option_wins_and_replay_gives_gpu_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "compute.csv"
    recording.write_text(_recording(95, 30, 40960), encoding="utf-8")
    code, doc, _ = _task(tmp_path, capsys, "--units", "100", "--replay", str(recording), "--", PY, "-c", WORK)
    assert code == 0 and doc is not None
    task, machine = doc["task"], doc["machine"]
    assert task["units"] == 100 and task["units_source"] == "--units"
    assert machine["gpu"] == "H100" and machine["gpus"] == 1
    assert task["samples"] >= 1
    assert task["gpu_util_mean_pct"] == 95 and task["memory_util_mean_pct"] == 30
    assert task["bound"] == "compute"
    assert 40 <= task["peak_memory_gib"] < 40.01


def test_a_gpu_reader_that_fails_is_said_not_passed_off_as_no_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken driver (here nvidia-smi's own message, recorded) made the result a silent "no GPU": the
    reader's message is on stderr before the run; a recording that reads is not flagged."""
    broken = REPO / "tests" / "fixtures" / "recordings" / "nvidia-smi" / "errors"
    broken /= "driver-not-communicating.stdout.txt"
    code, doc, err = _task(tmp_path, capsys, "--units", "1", "--replay", str(broken), "--", PY, "-c", "pass")
    assert code == 0 and doc is not None and doc["machine"]["gpu"] is None
    flat = " ".join(err.split())
    assert "no GPU could be read (NVIDIA-SMI has failed because it couldn't communicate" in flat
    _, _, err = _task(tmp_path, capsys, "--units", "1", "--replay", str(TRAINING), "--", PY, "-c", "pass")
    assert "no GPU could be read" not in err


def test_eight_gpus_of_a_recording_are_all_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = _task(tmp_path, capsys, "--units", "1", "--replay", str(TRAINING), "--", PY, "-c", "pass")
    assert code == 0 and doc is not None
    assert doc["machine"]["gpu"] == "H100" and doc["machine"]["gpus"] == 8
    assert doc["machine"]["gpu_memory_gib"] == pytest.approx(81559 / 1024, abs=0.01)


def test_memory_bound_from_what_was_sampled() -> None:
    readings = Readings()
    for snap in parse_recording_text(_recording(90, 75, 30000, seconds=3)).snapshots:
        readings.add(snap)
    assert decide_bound(readings)[0] == "memory_bandwidth"
    assert readings.peak_memory_bytes == 30002 * 2**20


@pytest.mark.parametrize(
    ("gpu", "mem", "bound"),
    [
        ([95.0], [30.0], "compute"),
        ([80.0], [40.0], "memory_bandwidth"),
        ([10.0], [9.0], "unknown"),
        ([], [], "unknown"),
    ],
)
def test_bound_rule(gpu: list[float], mem: list[float], bound: str) -> None:
    assert decide_bound(Readings(util_gpu=gpu, util_memory=mem))[0] == bound


@pytest.mark.parametrize(
    ("line", "units"),
    [
        ('{"gpuwise_units": 128}', 128.0),
        ('  {"gpuwise_units": 0.5, "loss": 2.1}\n', 0.5),
        ('{"gpuwise_units": -1}', None),
        ('{"gpuwise_units": true}', None),
        ('{"gpuwise_units": "12"}', None),
        ("gpuwise_units: 12", None),
        ('{"gpuwise_units": 1e999}', None),
        ("[1, 2]", None),
    ],
)
def test_parse_units(line: str, units: float | None) -> None:
    assert parse_units(line) == units


def test_failing_command_is_recorded_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = _task(tmp_path, capsys, "--units", "5", "--", PY, "-c", "import sys; sys.exit(3)")
    assert code == 1 and doc is not None
    assert doc["task"]["exit_code"] == 3
    assert "exited with code 3" in err and "recorded" in err


def test_no_units_is_recorded_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = _task(tmp_path, capsys, "--", PY, "-c", "print('hello')")
    assert code == 1 and doc is not None and doc["task"]["units"] is None
    assert "no units" in err


def test_the_limit_stops_the_whole_process_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A task that starts a child and sleeps: at --max-seconds both are gone, and the units done count."""
    pidfile = tmp_path / "child.pid"
    script = (
        "import json,subprocess,sys,time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "print(json.dumps({'gpuwise_units': 2}), flush=True)\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    code, doc, _ = _task(tmp_path, capsys, "--max-seconds", "1.5", "--", PY, "-c", script)
    assert time.monotonic() - started < 20
    assert code == 0 and doc is not None
    assert doc["task"]["stopped_at_limit"] is True and doc["task"]["units"] == 2
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), "the command's own child was stopped too"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie waiting for its (gone) parent to be reaped by init is not running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--max-seconds", "0", "--", PY, "-c", "pass"], "--max-seconds must be more than 0"),
        (["--units", "-3", "--", PY, "-c", "pass"], "--units must be more than 0"),
        (["--max-seconds", "inf", "--", PY, "-c", "pass"], "--max-seconds must be more than 0"),
        (["--unit", " ", "--", PY, "-c", "pass"], "is not a unit name"),
        (["--", "no-such-command-gpuwise"], "'no-such-command-gpuwise' was not found"),
        (["--", "/etc/hostname"], "Command '/etc/hostname'"),  # root may "execute" it: either message
        ([], "Missing argument"),
        (["--replay", "/etc/hostname", "--", PY, "-c", "pass"], "hostname"),
    ],
)
def test_bad_task_input_exits_2_and_writes_nothing(
    args: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc, err = _task(tmp_path, capsys, *args)
    assert code == 2 and doc is None
    assert words in err and "Traceback" not in err


def test_a_failed_out_write_shows_the_results_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills up during a long run: the write of --out fails at the end. The results are shown
    first and the failure is one error with its reason (exit 1), where it was a traceback and nothing."""
    import errno

    import gpuwise.files

    def full_disk(path: Path, data: str | bytes, *, private: bool = False) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gpuwise.files, "write_atomic", full_disk)
    out = tmp_path / "task.json"
    code = main(
        ["bench", "task", "--out", str(out), *NO_CLOUD, "--units", "3", "--json", "--", PY, "-c", "pass"]
    )
    printed = capsys.readouterr()
    assert code == 1 and not out.exists()
    assert json.loads(printed.out)["task"]["units"] == 3
    err = printed.err
    flat = " ".join(err.split())
    assert "Cannot write the results to" in flat and "No space left on device" in flat
    assert "Traceback" not in err
