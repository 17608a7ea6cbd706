"""`gpuwise idle run`'s one-daemon lock: bad input leaves nothing behind, and the systemd unit's daemon waits
for a running one instead of being refused and restarted every RestartSec."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from gpuwise import paths
from gpuwise.cli.main import main
from gpuwise.idle.lock import lock_path
from gpuwise.idle.state import load_state, state_path

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


def _hold_lock() -> IO[str]:
    lock = lock_path(paths.data_dir())
    lock.parent.mkdir(parents=True, exist_ok=True)
    held = lock.open("w", encoding="utf-8")
    held.write("4242 gpu-box\n")
    held.flush()
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return held


def _dry_run(*extra: str) -> list[str]:
    trace = str(FIXTURES / "multi_gpu_8x_one_busy_30s.csv")
    return ["idle", "run", "--dry-run", "--replay", trace, "--max-steps", "1", "--interval-s", "0.05", *extra]


def test_the_unit_waits_for_a_running_daemon_instead_of_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The unit (Restart=always) restarted a daemon refused by the lock every RestartSec, an error in the
    journal each time, until the hand-started one exited; its daemon now waits for the lock and takes over."""
    assert main(["idle", "install", "--dry-run", "--unit-dir", str(tmp_path)]) == 0
    (exec_start,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("ExecStart=")]
    assert exec_start.endswith('"idle" "run" "--wait-for-other"')
    held = _hold_lock()
    released_at: list[float] = []

    def first_daemon_exits() -> None:
        time.sleep(1.0)
        released_at.append(time.time())
        held.close()

    exits = threading.Thread(target=first_daemon_exits)
    exits.start()
    assert main(_dry_run("--wait-for-other")) == 0  # neither refused (exit 2) nor running beside the first
    exits.join()
    state = load_state(state_path(paths.data_dir()))
    assert state is not None and state["updated_at"] >= released_at[0]  # it observed only after taking over
    assert "waiting for it to exit, then taking over" in capsys.readouterr().err


def test_by_hand_a_second_daemon_is_still_refused_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    with _hold_lock():
        assert main(_dry_run()) == 2
    err = capsys.readouterr().err
    assert "already running here (pid 4242 on gpu-box)" in err and "add --wait-for-other" in err


def test_install_refuses_a_config_whose_token_file_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The unit was written and 'enabled and started', then failed at every restart on the token file."""
    config = _jupyter(tmp_path, tmp_path / "no-such-token")
    assert main(["idle", "install", "--config", config, "--unit-dir", str(tmp_path / "units")]) == 2
    assert "cannot read jupyter_token_file" in capsys.readouterr().err
    assert not (tmp_path / "units").exists()
