"""`gpuwise idle run / install / status` and the [idle] settings, through the CLI entry point."""

from __future__ import annotations

import fcntl
import json
import math
import os
import time
from pathlib import Path

import pytest
from idle_fakes import make_stubs

from gpuwise import paths
from gpuwise.cli.main import main
from gpuwise.errors import ConfigError
from gpuwise.idle.lock import lock_path
from gpuwise.idle.settings import load_settings
from gpuwise.idle.state import load_state, save_state, state_path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle"


def test_run_dry_run_on_a_replay_writes_state(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "multi_gpu_8x_one_busy_30s.csv"
    code = main(
        [
            "idle",
            "run",
            "--dry-run",
            "--replay",
            str(path),
            "--max-steps",
            "2",
            "--interval-s",
            "0.05",
            "--max-gap-s",
            "60",
        ]
    )
    assert code == 0
    data = load_state(state_path(paths.data_dir()))
    assert data is not None and data["dry_run"] is True
    assert data["decision"]["state"] == "busy"
    assert "gpuwise idle dry run" in capsys.readouterr().err


def test_run_on_a_replay_never_stops_this_machine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A recording's GPUs are not this machine's: without --dry-run, `idle run --replay` once ran the real
    stop action when the recording looked idle, under whatever this machine's own GPUs were doing."""
    marker = tmp_path / "stopped"
    trace = tmp_path / "idle.csv"
    rows = [f"2026/05/04 21:00:{i:02d}.000, 0, 0 %, 1 MiB, 81559 MiB" for i in range(60)]
    trace.write_text(
        "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n" + "\n".join(rows),
        encoding="utf-8",
    )
    argv = ["idle", "run", "--replay", str(trace), "--interval-s", "0.05", "--window-min", "0.02"]
    argv += ["--warn-min", "0.01", "--action", "command", "--command", f"touch {marker}", "--max-steps", "60"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "judges a recording, not this machine's GPUs" in err and "To fix: add --dry-run" in err
    assert not marker.exists() and load_state(state_path(paths.data_dir())) is None


def _dry_run_argv() -> list[str]:
    trace = FIXTURES / "multi_gpu_8x_one_busy_30s.csv"
    return ["idle", "run", "--dry-run", "--replay", str(trace), "--max-steps", "1", "--interval-s", "0.05"]


def test_a_second_daemon_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Two daemons warned and stopped twice and overwrote each other's state file every interval."""
    lock = lock_path(paths.data_dir())
    lock.parent.mkdir(parents=True)
    with lock.open("w", encoding="utf-8") as held:
        held.write("4242 gpu-box\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(_dry_run_argv()) == 2
        err = capsys.readouterr().err
        assert "another gpuwise idle daemon is already running here (pid 4242 on gpu-box)" in err
        assert "To fix: keep one" in err and "Traceback" not in err
        assert load_state(state_path(paths.data_dir())) is None  # the running daemon's file is left alone
    # released when its holder ends: the next daemon starts, and its own lock goes with it
    assert main(_dry_run_argv()) == 0 and main(_dry_run_argv()) == 0


def test_a_lock_that_cannot_be_taken_does_not_stop_the_daemon(capsys: pytest.CaptureFixture[str]) -> None:
    lock_path(paths.data_dir()).mkdir(parents=True)  # not a file: cannot be opened for writing
    assert main(_dry_run_argv()) == 0
    assert "running without it" in capsys.readouterr().err


def test_run_rejects_bad_options() -> None:
    assert main(["idle", "run", "--action", "terminate", "--max-steps", "1"]) == 2
    assert main(["idle", "run", "--action", "command", "--max-steps", "1"]) == 2
    assert main(["idle", "run", "--webhook", "ftp://x", "--max-steps", "1"]) == 2
    assert main(["idle", "run", "--replay", "/nonexistent/trace.csv", "--max-steps", "1"]) == 2


def test_status_without_and_with_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["idle", "status", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["found"] is False and out["savings"]["saved_usd"] is None
    now = time.time()
    save_state(
        state_path(paths.data_dir()),
        {
            "updated_at": now,
            "interval_s": 30,
            "dry_run": False,
            "decision": {
                "state": "warning",
                "reason": "warning: the GPU idle for 52 min",
                "idle_s": 3120.0,
                "stop_due_s": now + 480,
            },
            "stops": [{"at": now - 10 * 3600, "ok": True, "dry_run": False, "action": "shutdown -h now"}],
            "boots": [
                {"daemon_start": now - 20 * 3600 + 60, "system_boot": now - 20 * 3600},
                {"daemon_start": now - 6 * 3600 + 60, "system_boot": now - 6 * 3600},
            ],
        },
    )
    cfg = tmp_path / "c.toml"
    cfg.write_text("[machine]\nprice_usd_per_hour = 24.5\n", encoding="utf-8")
    assert main(["idle", "status", "--json", "--config", str(cfg)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["daemon_running"] is True and out["state"] == "warning"
    assert out["savings"]["hours_off"] == pytest.approx(4.0, abs=0.01)
    assert out["savings"]["saved_usd"] == pytest.approx(98.0, abs=0.1)
    assert main(["idle", "status", "--config", str(cfg)]) == 0
    text = capsys.readouterr().out
    assert "money saved: $98.00" in text and "state: warning" in text


def test_status_tells_a_damaged_state_file_from_none(capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged state file read as no file: `idle status` said `gpuwise idle run` had never run here, on a
    machine whose daemon had written it."""
    state = state_path(paths.data_dir())
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text('{"version": ', encoding="utf-8")
    assert main(["idle", "status", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["found"] is False and out["unreadable"] is True
    assert main(["idle", "status"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "cannot be read" in text and "has not run here" not in text
    state.unlink()
    assert main(["idle", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unreadable"] is False


def test_install_dry_run_prints_the_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["idle", "install", "--dry-run", "--unit-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ExecStart=" in out and '"idle" "run"' in out and "Restart=always" in out
    assert f'Environment="GPUWISE_DATA_DIR={paths.data_dir().resolve()}"' in out
    assert not list(tmp_path.iterdir())


def test_install_without_systemd_writes_and_says_what_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unit_dir = tmp_path / "units"
    code = main(["idle", "install", "--unit-dir", str(unit_dir), "--systemd-root", str(tmp_path / "none")])
    assert code == 0
    unit = (unit_dir / "gpuwise-idle.service").read_text(encoding="utf-8")
    assert unit.startswith("[Unit]") and "WantedBy=multi-user.target" in unit
    assert "systemctl enable --now gpuwise-idle.service" in capsys.readouterr().out
    assert [p.name for p in unit_dir.iterdir()] == ["gpuwise-idle.service"]  # no temp file left


def test_install_with_systemd_enables_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    make_stubs(tmp_path / "bin", log, names=("systemctl",))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    root = tmp_path / "run-systemd"
    root.mkdir()
    assert main(["idle", "install", "--unit-dir", str(tmp_path / "u"), "--systemd-root", str(root)]) == 0
    assert log.read_text(encoding="utf-8").splitlines() == [
        "systemctl daemon-reload",
        "systemctl enable --now gpuwise-idle.service",
    ]


def test_install_into_an_unwritable_dir_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    assert main(["idle", "install", "--unit-dir", str(blocker / "sub")]) == 1
    assert "To fix" in capsys.readouterr().err


def test_settings_from_config_sections() -> None:
    s = load_settings(
        {
            "idle": {"window_min": 90, "signals": ["ssh", "keepalive"], "action": "aws"},
            "machine": {"price_usd_per_hour": 3},
        }
    )
    assert s.policy.window_min == 90 and s.signals == ("ssh", "keepalive") and s.action == "aws"
    assert s.price_usd_per_hour == 3.0
    assert s.with_cli(window_min=30).policy.window_min == 30
    with pytest.raises(ConfigError, match="Did you mean 'threshold_pct'"):
        load_settings({"idle": {"treshold_pct": 3}})
    with pytest.raises(ConfigError, match="Did you mean 'ssh'"):
        load_settings({"idle": {"signals": ["shh"]}})
    with pytest.raises(ConfigError, match="jupyter_url"):
        load_settings({"idle": {"signals": ["jupyter"]}})
    with pytest.raises(ConfigError):
        load_settings({"idle": {"window_min": "long"}})
    with pytest.raises(ConfigError):
        load_settings({"machine": {"price_usd_per_hour": -1}})


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("idle", "interval_s", math.inf),  # slept for ever
        ("idle", "hook_timeout_s", math.inf),
        ("idle", "process_cpu_pct", math.nan),  # compared false: a busy GPU process looked quiet
        ("idle", "process_io_kib_per_s", math.inf),
        ("idle", "threshold_pct", math.nan),
        ("idle", "window_min", math.inf),
        ("machine", "price_usd_per_hour", math.nan),
        ("machine", "price_usd_per_hour", math.inf),
    ],
)
def test_settings_refuse_inf_and_nan(section: str, key: str, value: float) -> None:
    """Issue 10: `inf`/`nan` (TOML spells them so) were accepted for intervals, thresholds and prices."""
    with pytest.raises(ConfigError, match=key):
        load_settings({section: {key: value}})
