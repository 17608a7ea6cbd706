"""config.py: the checks every config file passes before a command in it may run.

Red-team findings: a config.toml owned by another user, or writable by others, still had its hook and
alert command run as root; an unbalanced quote in an alert command was accepted, then crashed `monitor`
(and silently stopped the exporter's history and alerts); `inf`/`nan` thresholds were accepted.
Tests run as root, so another owner is simulated with os.chown.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from gpuwise.config import INSECURE_ENV, check_command_line, load_config
from gpuwise.errors import ConfigError
from gpuwise.monitor.alerts import AlertDelivery, alerts_config

ALERT = '[alerts]\ncommand = "logger gpuwise"\n'
HOOK = '[idle]\npre_stop_hook = "aws s3 sync /ckpt s3://bucket/ckpt"\n'
STOP = '[idle]\naction = "command"\ncommand = "poweroff"\n'
# Giving a file to another user or group takes root (the tests' usual user here and in CI).
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="os.chown to another owner needs root")
OTHER_UID = 54321  # no such user on the test machine; any uid but ours and root's
OTHER_GID = 54321


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(INSECURE_ENV, raising=False)
    d = tmp_path / "cfg"
    d.mkdir(mode=0o700)
    return d


def _write(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "config.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


@needs_root
@needs_root
@pytest.mark.parametrize("text", [ALERT, HOOK, STOP], ids=["alert", "hook", "stop-command"])
@pytest.mark.parametrize("mode", [0o666, 0o602, 0o620], ids=oct)
def test_a_command_in_a_file_others_can_write_is_refused(folder: Path, text: str, mode: int) -> None:
    path = _write(folder, text, mode)
    os.chown(path, -1, OTHER_GID)  # a group that is not the owner's own private group
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = caught.value.render()
    assert "others can write to it" in message
    assert f"To fix: chmod go-w {path}" in message
    assert INSECURE_ENV in message


@needs_root
def test_a_command_in_a_file_of_another_user_is_refused(folder: Path) -> None:
    path = _write(folder, ALERT)
    os.chown(path, OTHER_UID, -1)
    with pytest.raises(ConfigError, match=f"belongs to uid {OTHER_UID}") as caught:
        load_config(path)
    assert "chown root" in caught.value.render()


def test_a_folder_others_can_write_is_refused_unless_sticky(folder: Path) -> None:
    path = _write(folder, HOOK)
    folder.chmod(0o777)
    with pytest.raises(ConfigError, match="others can write to its folder") as caught:
        load_config(path)
    assert f"chmod go-w {folder}" in caught.value.render()
    folder.chmod(0o1777)  # like /tmp: nobody can replace a file they do not own
    assert load_config(path).section("idle")["pre_stop_hook"].startswith("aws")


@needs_root
def test_a_folder_of_another_user_is_refused(folder: Path) -> None:
    path = _write(folder, ALERT)
    os.chown(folder, OTHER_UID, -1)
    with pytest.raises(ConfigError, match=r"its folder .* belongs to"):
        load_config(path)


def test_owner_only_and_private_group_files_load(folder: Path) -> None:
    """0600 and 0644 always; 0664 when the group is the owner's own (Debian/Ubuntu's umask 002)."""
    for mode in (0o600, 0o644, 0o664):
        path = _write(folder, ALERT, mode)
        os.chown(path, -1, os.getegid())  # root's own group, with no other members in it
        assert load_config(path).section("alerts")["command"] == "logger gpuwise"


@needs_root
def test_a_file_without_commands_is_not_judged(folder: Path) -> None:
    path = _write(folder, "[monitor]\ninterval_s = 2\n", 0o666)
    os.chown(path, OTHER_UID, OTHER_GID)
    assert load_config(path).section("monitor") == {"interval_s": 2}


def test_the_override_runs_it_with_a_loud_warning(
    folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(folder, ALERT, 0o666)
    monkeypatch.setenv(INSECURE_ENV, "1")
    with caplog.at_level(logging.WARNING, logger="gpuwise.config"):
        assert load_config(path).section("alerts")["command"] == "logger gpuwise"
    assert any("SECURITY" in r.getMessage() and INSECURE_ENV in r.getMessage() for r in caplog.records)
    monkeypatch.setenv(INSECURE_ENV, "yes")  # only the exact value 1 overrides
    with pytest.raises(ConfigError):
        load_config(path)


def test_a_symlinked_config_is_judged_by_its_target(folder: Path, tmp_path: Path) -> None:
    target = _write(folder, ALERT, 0o666)
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="others can write"):
        load_config(link)


# ------------------------------------------------------------------------------------------ command lines


@pytest.mark.parametrize(
    ("text", "position", "problem"),
    [
        ("notify-send 'GPU hot", 13, "unclosed single quote"),
        ('notify-send "GPU hot', 13, "unclosed double quote"),
        ('echo "a\\" b', 6, "unclosed double quote"),
        ("echo trailing\\", 14, "backslash at the end"),
    ],
)
def test_an_unsplittable_alert_command_is_refused_at_load(
    folder: Path, text: str, position: int, problem: str
) -> None:
    path = _write(folder, "")
    path.write_text("[alerts]\ncommand = '''" + text + "'''\n")
    with pytest.raises(ConfigError, match=f"alerts.command: an? {problem}.* at character {position} "):
        load_config(path)
    with pytest.raises(ConfigError, match=f"at character {position} "):
        alerts_config({"command": text})


def test_an_unsplittable_idle_hook_is_refused_at_load(folder: Path) -> None:
    path = _write(folder, '[idle]\npre_stop_hook = "aws s3 sync /ckpt \'s3://b/ckpt"\n')
    with pytest.raises(ConfigError, match=r"idle\.pre_stop_hook: an unclosed single quote at character 19 "):
        load_config(path)


def test_shell_comments_may_hold_apostrophes() -> None:
    assert check_command_line("sync.sh # don't wait", "x", shell=True) == ["sync.sh"]
    assert check_command_line("""echo "it's" 'a "b"' c\\'d""", "x") == ["echo", "it's", 'a "b"', "c'd"]


def test_delivery_never_meets_an_unsplittable_command(caplog: pytest.LogCaptureFixture) -> None:
    """A config that skipped alerts_config (built by hand) gets its alert logged, not a crash."""
    from gpuwise.monitor.alerts import AlertEvent, AlertsConfig

    cfg = AlertsConfig.model_construct(command="notify-send 'x", command_timeout_s=5.0, webhook_url=None)
    with caplog.at_level(logging.ERROR, logger="gpuwise.monitor.alerts"):
        AlertDelivery(cfg).deliver(AlertEvent("temperature", 0, "firing", 90.0, "GPU 0 hot", 0.0))
    assert any("cannot be split" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    "text",
    [
        "[alerts]\ntemperature_c = inf\n",
        "[alerts]\ntemperature_clear_c = nan\n",
        "[machine]\nprice_usd_per_hour = inf\n",
        "[idle]\nthreshold_pct = nan\n",
        "[exporter]\nidle_threshold_pct = -inf\n",
        "[machine]\nextra = [1.0, nan]\n",
    ],
)
def test_inf_and_nan_are_bad_input(folder: Path, text: str) -> None:
    path = _write(folder, text)
    with pytest.raises(ConfigError, match="is not a finite number"):
        load_config(path)


def test_alert_thresholds_refuse_inf_without_the_file_too() -> None:
    with pytest.raises(ConfigError, match=r"alerts\.temperature_c"):
        alerts_config({"temperature_c": float("inf")})
