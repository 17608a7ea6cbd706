"""`gpuwise --lang zh setup`: its errors in Chinese; the script and the JSON unchanged by the language (the
script's comments and the reasons are read by people on any machine and by programs)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gpuwise.cli.main import main
from gpuwise.locale import use_language


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    yield
    use_language("en")


def test_impossible_combination_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--lang", "zh", "setup", "--os", "ubuntu-22.04", "--gpu", "K80"])
    err = capsys.readouterr().err
    assert code == 2
    assert "setup 安装的驱动分支中，没有一个能驱动 K80" in err
    assert "换一块 GPU（Maxwell 或更新的架构）" in err


def test_nearest_choice_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--lang", "zh", "setup", "--os", "ubuntu-22.04", "--gpu", "B200", "--driver", "550"])
    err = capsys.readouterr().err
    assert code == 2
    assert "驱动分支 550 早于 Blackwell" in err
    assert "改用 --driver 570" in err and "这是最接近且可行的选择" in err


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["script", "json"])
def test_output_is_the_same_in_every_language(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["setup", "--os", "ubuntu-22.04", "--gpu", "H100", *extra]
    assert main(args) == 0
    english = capsys.readouterr().out
    assert main(["--lang", "zh", *args]) == 0
    chinese = capsys.readouterr().out
    assert chinese == english
    if extra:
        assert json.loads(chinese)["steps"]


def test_the_span_of_branches_is_said_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    """The branches an architecture runs on are words of the message, not English inside Chinese."""
    assert main(["--lang", "zh", "setup", "--os", "ubuntu-22.04", "--gpu", "K80"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "最高到 470" in err and "any" not in err and " to 470" not in err
