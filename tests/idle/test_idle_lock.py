"""`gpuwise idle run`'s one-daemon lock: bad input leaves nothing behind, and the systemd unit's daemon waits
for a running one instead of being refused and restarted every RestartSec."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise import paths
from gpuwise.cli.main import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle"


def _left_behind() -> list[str]:
    data = paths.data_dir()
    return sorted(str(p.relative_to(data)) for p in data.rglob("*")) if data.exists() else []


def _config(tmp_path: Path, body: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    return str(path)


def _jupyter(tmp_path: Path, token_file: Path) -> str:
    return _config(
        tmp_path,
        '[idle]\nsignals = ["jupyter"]\njupyter_url = "http://127.0.0.1:1/"\n'
        f'jupyter_token_file = "{token_file}"\n',
    )


BAD_INPUTS = {
    "missing token file": lambda tmp: ["--config", _jupyter(tmp, tmp / "no-such-token")],
    "token file is a folder": lambda tmp: ["--config", _jupyter(tmp, tmp)],
    "binary token file": lambda tmp: [
        "--config",
        _jupyter(tmp, (tmp / "token.bin", (tmp / "token.bin").write_bytes(b"\xff\xfe\x00"))[0]),
    ],
    "damaged config": lambda tmp: ["--config", _config(tmp, "[idle\nwindow_min = ")],
    "impossible setting": lambda _tmp: ["--window-min", "-1"],
    "missing recording": lambda tmp: ["--replay", str(tmp / "gone.csv")],
    "damaged recording": lambda tmp: [
        "--replay",
        str((tmp / "bad.csv", (tmp / "bad.csv").write_bytes(b"\x00\x01garbage" * 40))[0]),
    ],
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_leaves_the_data_directory_empty(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad Jupyter token file was reported after the lock was taken, leaving idle/daemon.lock behind (and a
    binary one was a traceback)."""
    argv = ["idle", "run", "--dry-run", "--max-steps", "1", "--interval-s", "0.05"]
    if "recording" not in case:
        argv += ["--replay", str(FIXTURES / "multi_gpu_8x_one_busy_30s.csv")]
    assert main([*argv, *BAD_INPUTS[case](tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Error:" in err and "Traceback" not in err
    assert _left_behind() == []
