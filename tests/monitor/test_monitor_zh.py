"""`gpuwise --lang zh monitor / exporter`: Chinese headings, hints and errors; JSON keys unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from monitor_fakes import EIGHT_GPU_CSV

from gpuwise.cli.main import main
from gpuwise.locale import use_language


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    """--lang zh switches the whole process: give the next test English back."""
    yield
    use_language("en")


def _keys(value: Any) -> Any:
    """The shape of a JSON document: every key, no values."""
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys(v) for v in value]
    return None


def test_once_speaks_chinese_with_lang_zh(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "zh", "monitor", "--replay", str(EIGHT_GPU_CSV), "--once"]) == 0
    out = capsys.readouterr().out
    for heading in ("利用率", "显存", "降频", "提示", "主机："):
        assert heading in out
    # the idle-while-peers-busy hint of the eight-GPU capture, in Chinese
    assert "GPU 7 空闲，而 GPU" in out
    assert "looks" not in out and "is idle while" not in out


def test_once_stays_english_without_lang(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["monitor", "--replay", str(EIGHT_GPU_CSV), "--once"]) == 0
    out = capsys.readouterr().out
    assert "recent util" in out and "GPU 7 is idle while" in out
    assert "利用率" not in out


def test_json_keys_and_hint_ids_do_not_change_with_the_language(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["monitor", "--replay", str(EIGHT_GPU_CSV), "--json"]
    assert main(args) == 0
    english = json.loads(capsys.readouterr().out)
    assert main(["--lang", "zh", *args]) == 0
    chinese = json.loads(capsys.readouterr().out)
    english.pop("host"), chinese.pop("host")  # live host readings differ between two runs
    assert _keys(chinese) == _keys(english)
    assert [h["id"] for h in chinese["hints"]] == [h["id"] for h in english["hints"]]
    assert chinese["gpus"] == english["gpus"]


def test_bad_since_is_one_chinese_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "zh", "monitor", "--since", "soon"]) == 2
    err = capsys.readouterr().err
    assert "不是一个时长" in err and "--since 2h、30m 或 1d" in err
    assert "Traceback" not in err


def test_exporter_refuses_an_open_bind_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--lang", "zh", "exporter", "--bind", "0.0.0.0", "--replay", str(EIGHT_GPU_CSV)])
    assert code == 2
    err = capsys.readouterr().err
    assert "拒绝在没有令牌的情况下在 0.0.0.0 上提供 GPU 指标" in err


def _help(*command: str) -> str:
    env = {**os.environ, "COLUMNS": "200", "LANGUAGE": "", "LC_ALL": "", "LANG": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-m", "gpuwise", "--lang", "zh", *command, "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    return done.stdout


def test_monitor_and_exporter_help_in_chinese() -> None:
    monitor_help = _help("monitor")
    assert "输出一次快照（含提示）后退出。" in monitor_help
    assert "--since" in monitor_help and "--once" in monitor_help  # option names stay
    assert "监听的地址（默认 127.0.0.1，仅回环）。" in _help("exporter")
