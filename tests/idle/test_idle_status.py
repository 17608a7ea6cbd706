"""The typed entry points behind `gpuwise idle status / run / install`: status, gatherers, unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.errors import ConfigError
from gpuwise.idle.actions import Runner
from gpuwise.idle.install import enable_unit, plan_install
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.signals import GpuwiseRunJobs, JupyterKernels, KeepAliveFile, gatherers_for
from gpuwise.idle.status import idle_status

NOW = 1_780_000_000.0
STATE = Path("/state.json")


def test_no_state_is_not_found_and_saves_nothing_known() -> None:
    st = idle_status(None, STATE, IdleSettings(), NOW)
    assert (st.found, st.daemon_running, st.state, st.age_s, st.stops) == (False, False, None, None, ())
    assert st.savings.saved_usd is None and st.savings.price_usd_per_hour is None


@pytest.mark.parametrize(
    ("interval_s", "age_s", "running"),
    [
        (30.0, 119.0, True),  # 3 intervals are 90 s, but never less than 2 min
        (30.0, 121.0, False),
        (60.0, 179.0, True),  # 3 intervals of 60 s
        (60.0, 181.0, False),
    ],
)
def test_the_daemon_runs_while_its_last_update_is_recent(
    interval_s: float, age_s: float, running: bool
) -> None:
    data = {"updated_at": NOW - age_s, "interval_s": interval_s, "stops": [], "boots": []}
    st = idle_status(data, STATE, IdleSettings(), NOW)
    assert st.daemon_running is running and st.age_s == pytest.approx(age_s)


def test_the_configured_price_wins_over_the_recorded_one_and_only_10_stops_are_kept() -> None:
    stops = [{"at": NOW - 3600 * (20 - i), "ok": True, "dry_run": False, "action": "x"} for i in range(12)]
    data = {"price_usd_per_hour": 3.0, "stops": stops, "boots": [{"system_boot": NOW - 1800}]}
    recorded = idle_status(data, STATE, IdleSettings(), NOW)
    assert recorded.savings.price_usd_per_hour == 3.0
    configured = idle_status(data, STATE, IdleSettings(price_usd_per_hour=10.0), NOW)
    assert configured.savings.price_usd_per_hour == 10.0
    assert configured.stops == tuple(stops[-10:])
    assert configured.to_json()["stops"] == stops[-10:]


def test_gatherers_follow_the_settings_order_under_the_data_dir(tmp_path: Path) -> None:
    settings = IdleSettings(signals=("keepalive", "gpuwise_run"))
    got = gatherers_for(settings, tmp_path)
    assert isinstance(got[0], KeepAliveFile) and got[0].path == tmp_path / "idle" / "keepalive"
    assert isinstance(got[1], GpuwiseRunJobs) and got[1].run_dir == tmp_path / "run"


def test_a_jupyter_token_is_read_from_its_file_and_an_unreadable_one_is_a_config_error(
    tmp_path: Path,
) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    settings = IdleSettings(
        signals=("jupyter",), jupyter_url="http://127.0.0.1:1", jupyter_token_file=str(token)
    )
    (kernels,) = gatherers_for(settings, tmp_path)
    assert isinstance(kernels, JupyterKernels) and kernels.token == "s3cret"
    missing = IdleSettings(
        signals=("jupyter",), jupyter_url="http://127.0.0.1:1", jupyter_token_file=str(tmp_path / "none")
    )
    with pytest.raises(ConfigError, match="jupyter_token_file"):
        gatherers_for(missing, tmp_path)


def test_enable_unit_runs_nothing_without_systemd(tmp_path: Path) -> None:
    plan = plan_install(tmp_path, None, tmp_path / "cfg", tmp_path / "data")
    assert plan.target == tmp_path / "gpuwise-idle.service"
    assert plan.commands[-1] == ("systemctl", "enable", "--now", "gpuwise-idle.service")
    assert enable_unit(plan, Runner(env={"PATH": str(tmp_path)}), tmp_path) is False  # no systemctl


def test_status_asks_the_daemons_lock_whether_it_runs(tmp_path: Path) -> None:
    """A daemon stopped a few seconds ago read as running for two more minutes (its file was fresh); a user
    who checked `idle status` then left a machine billing with nothing to stop it."""
    import fcntl

    from gpuwise.idle.lock import daemon_lock, lock_path
    from gpuwise.idle.state import save_state, state_path
    from gpuwise.idle.status import read_idle_status

    state = state_path(tmp_path)
    save_state(state, {"updated_at": NOW - 5, "interval_s": 30.0, "decision": {"state": "busy"}})
    assert read_idle_status(state, IdleSettings(), NOW).daemon_running is True  # no lock file: the file's age
    with daemon_lock(lock_path(tmp_path)):
        assert read_idle_status(state, IdleSettings(), NOW + 3600).daemon_running is True  # held: it runs
    assert read_idle_status(state, IdleSettings(), NOW).daemon_running is False  # released: it stopped
    with lock_path(tmp_path).open("rb") as other:  # status only looks: it never keeps the lock
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
