"""`gpuwise … | head`: a reader that stops early is no failure. Every command exits 0 with nothing on
stderr (no traceback, no "Exception ignored" from the interpreter), through real pipes in a subprocess."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwise.cli import output

REPO = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    env = dict(os.environ, LANGUAGE="en", COLUMNS="80")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return env


def test_a_reader_that_stops_after_one_line_ends_the_command_quietly() -> None:
    """`gpuwise catalog offers --limit 0 | head -1`: a rich table of ~600 kB, far more than a pipe holds,
    so the reader leaves mid-stream. Before: exit 1 (typer's answer to BrokenPipeError), silently."""
    with subprocess.Popen(
        [sys.executable, "-m", "gpuwise", "catalog", "offers", "--limit", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=REPO,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()  # what `head -1` reads; the rest cannot fit in the pipe
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, err
    assert err == ""


@pytest.mark.parametrize(
    "args",
    [["plan", "--help"], ["presets", "--json"], ["presets"]],
    ids=["typer-help", "json", "table"],
)
def test_a_reader_gone_before_the_first_byte_ends_the_command_quietly(args: list[str]) -> None:
    """typer catches the BrokenPipeError itself and exits 1; typer's help console (rich) does the same."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the first byte: the first write fails
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpuwise", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=_env(),
            cwd=REPO,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode() == ""


def _exit_after_broken_pipe() -> SystemExit:
    try:
        try:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        except OSError:
            sys.exit(1)  # what typer does with it
    except SystemExit as exc:
        return exc
    raise AssertionError("unreachable")  # pragma: no cover


def test_only_a_broken_stdout_counts_as_the_reader_going_away(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken pipe elsewhere (a socket whose peer left) stays a fault: stdout itself must be broken."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        exit_ = _exit_after_broken_pipe()
        assert not output.closed_pipe(exit_)  # stdout's reader is still there
        assert not output.closed_pipe(SystemExit(1))
        os.close(read_end)
        assert output.closed_pipe(exit_)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="/dev/full is Linux's always-full device")
@pytest.mark.parametrize(
    "args", [["presets", "--json"], ["presets"], ["plan", "--help"]], ids=["json", "table", "typer-help"]
)
def test_a_full_disk_behind_stdout_is_one_paragraph_not_a_traceback(args: list[str]) -> None:
    """`gpuwise plan --json > plan.json` on a full disk. Before: a traceback ending in OSError ENOSPC."""
    with Path("/dev/full").open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "gpuwise", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            env=_env(),
            cwd=REPO,
            timeout=120,
            check=False,
        )
    err = done.stderr.decode()
    assert done.returncode == 1
    assert err.startswith("Error: A write failed: No space left on device."), err
    assert "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.skipif(not Path("/bin/sh").exists(), reason="closes stdout with a POSIX shell")
def test_a_closed_stdout_is_silence_not_a_traceback() -> None:
    """`gpuwise presets --json >&-`: Python makes sys.stdout None, and print_json failed (AttributeError)."""
    done = subprocess.run(
        ["/bin/sh", "-c", 'exec "$0" -m gpuwise presets --json >&-', sys.executable],
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode() == ""
