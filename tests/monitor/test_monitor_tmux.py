"""Done-when: `gpuwise monitor --replay …` driven in a real terminal (tmux) shows every GPU."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from monitor_fakes import EIGHT_GPU_CSV

pytestmark = pytest.mark.timeout(90)


def _tmux(tmux: str, sock: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tmux, "-L", sock, *args], capture_output=True, text=True, timeout=10, check=False)


def _screen_ready(screen: str, series: bool) -> bool:
    every_gpu = all(f"GPU {i} NVIDIA H100" in screen for i in range(8))
    return every_gpu and (not series or "gpu_idle_while_peers_busy" in screen)


@pytest.mark.parametrize("recording", ["constructed-series", "shared-8x-h100-table"])
def test_live_view_shows_every_gpu(
    recording: str, need_program: Callable[[str], str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    tmux = need_program("tmux")
    series = recording == "constructed-series"
    if series:
        replay = EIGHT_GPU_CSV
    else:  # nvidia-smi's default table of 8 idle H100s, copied from a public repository (recordings/)
        smi: Path = request.getfixturevalue("smi_fixtures")
        replay = smi / "table" / "8x-h100__idle__550.90.07.txt"
    sock = f"gpuwise-test-{os.getpid()}-{recording}"
    env = {
        "GPUWISE_DATA_DIR": str(tmp_path / "data"),
        "GPUWISE_CONFIG_DIR": str(tmp_path / "config"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }
    cmd = " ".join(
        [
            "env",
            "-u",
            "COLUMNS",  # pytest's environment carries 80x24; the pane's real size must win
            "-u",
            "LINES",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-c",
            shlex.quote("from gpuwise.cli.main import run; run()"),
            "monitor",
            "--replay",
            shlex.quote(str(replay)),
            "--interval",
            "0.5",
        ]
    )
    started = _tmux(tmux, sock, "new-session", "-d", "-s", "mon", "-x", "200", "-y", "60", cmd)
    assert started.returncode == 0, started.stderr
    screen = ""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            screen = _tmux(tmux, sock, "capture-pane", "-p", "-t", "mon").stdout
            if _screen_ready(screen, series):
                break
            time.sleep(0.3)
    finally:
        _tmux(tmux, sock, "kill-server")
    for i in range(8):
        assert f"GPU {i} NVIDIA H100 80GB HBM3" in screen, screen
    assert "8 GPU(s)" in screen
    assert "Traceback" not in screen
    if series:
        assert "sw_thermal_slowdown" in screen  # GPU 3's throttle reason
        assert "gpu_idle_while_peers_busy" in screen  # GPU 7 idles while the others train
    else:
        assert "no bottleneck seen" in screen
