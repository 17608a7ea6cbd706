"""`gpuwise --lang zh idle …`: verdicts, status, providers and errors in Chinese; JSON unchanged."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from idle_fakes import FakeClock, make_stubs, stub_env

from gpuwise.cli.main import main
from gpuwise.gpu.probe import ReplayProbe
from gpuwise.gpu.replay import load_recording
from gpuwise.idle.actions import Runner
from gpuwise.idle.daemon import IdleDaemon
from gpuwise.idle.policy import PolicyConfig
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.signals import SshSessions
from gpuwise.idle.state import load_state, state_path
from gpuwise.locale import use_language

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle"
HELD = FIXTURES / "hung_job_memory_held_3h_h100_30s.csv"


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    """--lang zh switches the whole process: give the next test English back."""
    yield
    use_language("en")


def test_replay_explains_its_verdict_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "zh", "idle", "replay", str(HELD)]) == 0
    out = capsys.readouterr().out
    assert "策略：利用率 ≤ 5%" in out
    assert "将在 2026-05-05T00:30:00.007 停机" in out
    # the policy's own reason: memory held, so the 120-minute window applies
    assert "停机：这块 GPU 已空闲" in out and "显存被占用（GPU 0：已用 70100 MiB" in out
    assert "5 分钟或更长的空闲时段：" in out
    assert "结束原因：停机" in out
    assert "would stop" not in out and "last activity" not in out


def test_replay_json_is_the_same_in_both_languages_but_for_the_sentences(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["idle", "replay", "--json", str(HELD)]) == 0
    english = json.loads(capsys.readouterr().out)
    assert main(["--lang", "zh", "idle", "replay", "--json", str(HELD)]) == 0
    chinese = json.loads(capsys.readouterr().out)
    assert chinese.keys() == english.keys()
    assert chinese["reason"].startswith("停机：") and english["reason"].startswith("stop: ")
    for key in english.keys() - {"reason"}:
        assert chinese[key] == english[key], key  # numbers, ids and the fixed `ended_by` values included
    assert english["idle_stretches"][-1]["ended_by"] == "stop"


def test_a_bad_idle_option_is_one_chinese_message(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--lang", "zh", "idle", "replay", "--window-min", "5", "--warn-min", "10", str(HELD)])
    assert code == 2
    err = capsys.readouterr().err
    assert "空闲选项 warn_min = 10.0 无效" in err and "比 window_min（5）短的值" in err
    assert "Traceback" not in err


def test_status_without_a_daemon_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "zh", "idle", "status"]) == 0
    out = capsys.readouterr().out
    assert "这里还没有运行过 `gpuwise idle run`" in out
    assert "节省的钱：未知" in out


def test_providers_in_chinese_keep_their_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "zh", "idle", "providers"]) == 0
    out = capsys.readouterr().out
    assert 'runpod（action = "runpod"）' in out
    assert "  停止计费：是。" in out and "  保留磁盘：否。" in out
    assert "实例存储丢失" in out  # aws: the table's own sentences, not only the labels
    assert main(["--lang", "zh", "idle", "providers", "--json"]) == 0
    aws = next(p for p in json.loads(capsys.readouterr().out) if p["provider"] == "aws")
    assert aws["disk"] == "EBS kept; instance store lost"  # the JSON is the same in every language


def test_idle_help_in_chinese() -> None:
    env = {**os.environ, "COLUMNS": "200", "LANGUAGE": "", "LC_ALL": "", "LANG": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-m", "gpuwise", "--lang", "zh", "idle", "replay", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    assert "停机前需要连续空闲的分钟数（默认 60）。" in done.stdout
    assert "--window-min" in done.stdout


_CJK = re.compile(r"[\u4e00-\u9fff]")


def test_a_daemon_under_zh_logs_and_saves_english_and_tells_people_in_chinese(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """Logs, the state file and webhooks are read by programs and stay English; the wall message and
    `idle status` are read by people and are in their language, from the same decision."""
    use_language("zh")
    clock = FakeClock()
    make_stubs(tmp_path / "bin", tmp_path / "calls.log")
    data_dir = Path(os.environ["GPUWISE_DATA_DIR"])
    settings = IdleSettings(action="shutdown", policy=PolicyConfig(window_min=20, held_window_min=30))
    daemon = IdleDaemon(
        settings,
        ReplayProbe(load_recording(HELD), clock=clock, retime=True),
        [SshSessions(users=list)],
        state_path(data_dir),
        clock=clock,
        sleep=clock.sleep,
        runner=Runner(env=stub_env(tmp_path / "bin"), timeout_s=20),
        host="gpu-box",
        boot_time=lambda: 1_000.0,
    )
    with caplog.at_level(logging.DEBUG, logger="gpuwise.idle"):
        daemon.run(max_steps=int(115 * 60 / 30))  # idle from +90 min: the warning comes at +110
    assert "this machine will be stopped in 10 min. warning: the GPU idle" in caplog.text
    assert "no SSH sessions" in caplog.text and not _CJK.search(caplog.text)
    saved = load_state(daemon.state_file)
    assert saved is not None and saved["decision"]["reason"].startswith("warning: the GPU idle")
    assert not _CJK.search(json.dumps(saved, ensure_ascii=False))
    (wall,) = [
        c for c in (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines() if c.startswith("wall")
    ]
    assert "这台机器将在 10 分钟后停机。警告：这块 GPU 已空闲" in wall and "没有 SSH 会话" in wall
    assert "last activity" not in wall

    assert main(["--lang", "zh", "idle", "status"]) == 0
    out = capsys.readouterr().out
    assert "状态：warning" in out and "警告：这块 GPU 已空闲" in out and "没有 SSH 会话" in out
    assert "last activity" not in out
    assert main(["--lang", "zh", "idle", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reason"].startswith("warning: the GPU idle")
    use_language("en")
    assert main(["idle", "status"]) == 0
    assert "warning: the GPU idle" in capsys.readouterr().out
