"""`gpuwise --lang zh bench`: Chinese tables and errors; results files and JSON unchanged by the language."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.locale import use_language

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bench"


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    yield
    use_language("en")


def test_compare_table_in_chinese_json_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(FIXTURES / "task-h100-compute.json"), str(FIXTURES / "task-cpu.json")]
    assert main(["--lang", "zh", "bench", "compare", *files, "--price", "2.5"]) == 0
    out = capsys.readouterr().out
    assert "每单位秒数" in out and "每单位费用（$）" in out and "无 GPU" in out
    assert "seconds per unit" not in out
    assert main(["bench", "compare", *files, "--price", "2.5", "--json"]) == 0
    english = capsys.readouterr().out
    assert main(["--lang", "zh", "bench", "compare", *files, "--price", "2.5", "--json"]) == 0
    assert capsys.readouterr().out == english


def test_task_problems_in_chinese_but_english_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], empty_config: Path
) -> None:
    """A task that counts no units: the error line is Chinese; the results file keeps its problems in
    English, as every program that reads it expects."""
    out = tmp_path / "task.json"
    code = main(
        [
            "--lang", "zh", "bench", "task", "--no-metadata", "--config", str(empty_config),
            "--interval", "0.05", "--out", str(out), "--", sys.executable, "-c", "pass",
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert "错误：" in captured.err and "没有计到单位" in captured.err
    assert "结果已记录在" in captured.err
    problems = json.loads(out.read_text(encoding="utf-8"))["task"]["problems"]
    assert problems and problems[0].startswith("no units")


def test_bad_unit_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--lang", "zh", "bench", "task", "--units", "0", "--", "true"])
    assert code == 2
    assert "必须大于 0" in capsys.readouterr().err
