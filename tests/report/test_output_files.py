"""Output paths (gpuwise.files): a device, FIFO, socket or directory is refused as bad input, a symlink is
written through only when safe, a full disk leaves the old file and no temporary file, and the CLI writers
(`plan --html`, `monitor --record`) go through it."""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from gpuwise import files
from gpuwise.cli.main import main
from gpuwise.errors import UsageError
from gpuwise.monitor.record import Recorder

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "fixtures" / "plan" / "llama3-8b-lora.toml"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        yield path


@pytest.fixture
def device(tmp_path: Path) -> Path:
    """A character device (the null device's numbers) inside tmp_path, so replacing it harms nothing."""
    if not IS_ROOT:
        pytest.skip("making a device node needs root")
    path = tmp_path / "null"
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return path


def _same_node(path: Path, kind: int) -> None:
    assert stat.S_IFMT(path.lstat().st_mode) == kind  # still there, not replaced by a file


def test_write_atomic_refuses_a_fifo_socket_and_directory(
    fifo: Path, unix_socket: Path, tmp_path: Path
) -> None:
    for path, kind, word in (
        (fifo, stat.S_IFIFO, "named pipe"),
        (unix_socket, stat.S_IFSOCK, "socket"),
        (tmp_path, stat.S_IFDIR, "directory"),
    ):
        with pytest.raises(files.UnsafeOutputError) as info:
            files.write_atomic(path, "x")
        assert info.value.exit_code == 2
        assert word in info.value.message and "not a regular file" in info.value.message
        _same_node(path, kind)
    assert not list(tmp_path.glob(".*.tmp"))


def test_write_atomic_refuses_a_device(device: Path) -> None:
    with pytest.raises(files.UnsafeOutputError, match="is a device, not a regular file"):
        files.write_atomic(device, "<html>")
    _same_node(device, stat.S_IFCHR)


def test_symlink_to_a_regular_file_is_written_through_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to("real.html")  # relative, as `ln -s` makes it
    files.write_atomic(link, "new")
    assert link.is_symlink() and link.readlink() == Path("real.html")
    assert real.read_text() == "new"


def test_symlink_to_a_device_or_nowhere_is_refused(fifo: Path, tmp_path: Path) -> None:
    to_fifo = tmp_path / "to-fifo"
    to_fifo.symlink_to(fifo)
    with pytest.raises(files.UnsafeOutputError, match=r"a symlink to .*named pipe"):
        files.write_atomic(to_fifo, "x")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "missing")
    with pytest.raises(files.UnsafeOutputError, match="does not exist"):
        files.write_atomic(dangling, "x")
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    with pytest.raises(files.UnsafeOutputError, match="loop"):
        files.write_atomic(loop, "x")
    assert to_fifo.is_symlink() and dangling.is_symlink() and loop.is_symlink()
    assert not (tmp_path / "missing").exists()


@pytest.mark.skipif(not IS_ROOT, reason="giving a symlink to another user needs root")
def test_symlink_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0\n")
    link = tmp_path / "plan.html"
    link.symlink_to(victim)
    os.lchown(link, 65534, 65534)  # planted by "nobody"
    with pytest.raises(files.UnsafeOutputError, match="owned by another user"):
        files.write_atomic(link, "<html>")
    assert victim.read_text() == "root:x:0:0\n"


def test_full_disk_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    target.write_text("old report")

    def full_disk(fh: IO[bytes], payload: bytes) -> None:
        fh.write(payload[:10])  # half written, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_write_all", full_disk)
    with pytest.raises(OSError) as info:
        files.write_atomic(target, "new report " * 1000)
    assert info.value.errno == errno.ENOSPC
    assert target.read_text() == "old report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_plan_html_full_disk_is_a_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full_disk(fh: IO[bytes], payload: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_write_all", full_disk)
    out = tmp_path / "plan.html"
    assert main(["plan", str(WORKLOAD), "--html", str(out), "--json"]) == 1
    err = capsys.readouterr().err
    assert "Cannot write the HTML report" in err and "No space left" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_plan_html_to_a_fifo_is_bad_input_before_any_work(
    fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", str(WORKLOAD), "--html", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert f"--html {fifo} is a named pipe (FIFO), not a regular file" in err
    assert "To fix:" in err
    _same_node(fifo, stat.S_IFIFO)


def test_plan_html_to_a_device_is_bad_input(device: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(WORKLOAD), "--html", str(device)]) == 2
    assert "is a device, not a regular file" in capsys.readouterr().err
    _same_node(device, stat.S_IFCHR)


def test_monitor_record_into_a_fifo_is_bad_input_not_a_hang(
    fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before the fix this blocked forever in open(): nobody reads the FIFO.
    assert main(["monitor", "--once", "--replay", str(_a_recording()), "--record", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert "--record" in err and "named pipe" in err


def test_recorder_refuses_a_path_swapped_for_a_fifo_after_the_check(fifo: Path) -> None:
    with pytest.raises(UsageError, match="named pipe"):
        Recorder(fifo)


def test_recorder_appends_through_an_own_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.touch()
    link = tmp_path / "run.csv"
    link.symlink_to(real)
    Recorder(link).close()
    Recorder(link).close()
    assert link.is_symlink()
    assert len(real.read_text().splitlines()) == 1  # the header, once


def _a_recording() -> Path:
    found = sorted((REPO / "tests" / "fixtures" / "monitor").glob("*.csv"))
    if not found:
        pytest.skip("no CSV recording in tests/fixtures/monitor")
    return found[0]


def test_recorder_full_disk_leaves_no_half_row_and_is_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuwise.errors import StorageError
    from gpuwise.gpu.sample import Sample

    path = tmp_path / "run.csv"
    rec = Recorder(path, with_host=False)
    before = path.read_bytes()

    def full_disk(fd: int, data: memoryview) -> int:
        os.write(fd, bytes(data[:7]))  # part of the row reaches the disk, then it is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_write_fd", full_disk)
    with pytest.raises(StorageError, match="No space left on device"):
        rec.write((Sample(index=0, timestamp_s=1_700_000_000.0),))
    rec.close()
    assert path.read_bytes() == before  # the header, whole; no half row


_KILL_CHILD = """
import sys
from pathlib import Path
from gpuwise.files import write_atomic
target = Path(sys.argv[1])
pages = [("<html>" + c * (4 << 20) + "</html>").encode() for c in "ab"]  # ~4 MB, as a plan report
print("ready", flush=True)
while True:
    for page in pages:
        write_atomic(target, page)
"""


def test_a_kill_at_random_points_leaves_the_old_or_the_new_report(tmp_path: Path) -> None:
    import random
    import signal
    import subprocess
    import sys
    import time

    target = tmp_path / "plan.html"
    first = b"<html>first</html>"
    files.write_atomic(target, first)
    pages = {first, *(("<html>" + c * (4 << 20) + "</html>").encode() for c in "ab")}
    rng = random.Random(7)
    deadline = time.monotonic() + 30
    for _ in range(20):
        if time.monotonic() > deadline:
            break  # bounded on a loaded machine; the kills done still count
        child = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, str(target)], stdout=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        assert target.read_bytes() in pages  # a whole report, old or new, never a part
    # the killed writers' temporaries are removed by the next write
    files.write_atomic(target, first)
    assert [p.name for p in tmp_path.iterdir()] == ["plan.html"]


def test_idle_state_and_unit_writer_refuses_a_fifo(fifo: Path) -> None:
    from gpuwise.idle.state import write_atomic as idle_write

    with pytest.raises(files.UnsafeOutputError, match="named pipe"):
        idle_write(fifo, "[Unit]\n")
    _same_node(fifo, stat.S_IFIFO)
