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
    assert "错误： " not in captured.err  # no space after a full-width colon, as every other error
    assert "结果已记录在" in captured.err
    problems = json.loads(out.read_text(encoding="utf-8"))["task"]["problems"]
    assert problems and problems[0].startswith("no units")


def test_bad_unit_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--lang", "zh", "bench", "task", "--units", "0", "--", "true"])
    assert code == 2
    assert "必须大于 0" in capsys.readouterr().err


def test_task_table_in_chinese_has_no_dangling_units(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], empty_config: Path
) -> None:
    """No GPU was read: the bound reason showed in English and the empty figures as "— GiB" and "— %";
    the reason is Chinese, an empty figure is "—" alone, and the results file keeps the English reason."""
    out = tmp_path / "task.json"
    code = main(
        [
            "--lang", "zh", "bench", "task", "--no-metadata", "--config", str(empty_config), "--units", "3",
            "--interval", "0.05", "--out", str(out), "--", sys.executable, "-c", "pass",
        ]
    )  # fmt: skip
    shown = capsys.readouterr().out
    assert code == 0
    assert "没有利用率读数" in shown and "no utilization readings" not in shown
    assert "— GiB" not in shown and "— %" not in shown
    task = json.loads(out.read_text(encoding="utf-8"))["task"]
    assert task["bound_reason"].startswith("no utilization readings")


@pytest.mark.parametrize(
    ("gpu", "mem", "bound", "chinese"),
    [
        (97.0, 20.0, "compute", "显存繁忙 20 %，kernel 运行 97 %（比值 0.21 < 0.5）"),
        (90.0, 60.0, "memory_bandwidth", "显存繁忙 60 %，kernel 运行 90 %（比值 0.67 ≥ 0.5）"),
        (10.0, 5.0, "unknown", "GPU 只有 10 % 的时间在运行 kernel：瓶颈在主机，不在 GPU"),
    ],
)
def test_the_bound_reason_is_shown_in_the_users_language(
    gpu: float, mem: float, bound: str, chinese: str
) -> None:
    from gpuwise.bench.usertask import Readings, bound_reason_shown, decide_bound

    readings = Readings()
    readings.util_gpu.append(gpu)
    readings.util_memory.append(mem)
    decided, english = decide_bound(readings)
    task = {"bound": decided, "bound_reason": english, "gpu_util_mean_pct": gpu, "memory_util_mean_pct": mem}
    assert decided == bound
    assert bound_reason_shown(task) == english  # English: the file's words, unchanged
    use_language("zh")
    assert bound_reason_shown(task) == chinese
    edited = {**task, "bound_reason": "measured by hand"}
    assert bound_reason_shown(edited) == "measured by hand"  # a reason the figures do not give back
