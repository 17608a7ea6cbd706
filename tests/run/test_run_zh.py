"""`gpuwise run`, `ledger` and `checkpoints` in Chinese (`--lang zh`): gpuwise's own lines and errors are
translated, the job's output and the JSON summary's keys are not. Real processes: the language is chosen
once per process, before the command modules are imported."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from run_fakes import run_gpuwise


def test_run_help_and_summary_speak_chinese_and_keep_the_json_keys(tmp_path: Path) -> None:
    helped = run_gpuwise("--lang", "zh", "run", "--help", env={**os.environ, "COLUMNS": "300"})
    assert helped.returncode == 0
    assert "收到 SIGTERM 后留给任务写最后一个检查点的秒数" in helped.stdout
    job = [sys.executable, "-c", "print('job says hello')"]
    zh = run_gpuwise("--lang", "zh", "run", "--json", "--no-ledger", "--", *job, cwd=tmp_path)
    en = run_gpuwise("--lang", "en", "run", "--json", "--no-ledger", "--", *job, cwd=tmp_path)
    assert zh.returncode == en.returncode == 0, zh.stderr
    assert "job says hello" in zh.stdout  # the job's own output is streamed untouched
    zh_summary, en_summary = json.loads(zh.stdout.splitlines()[-1]), json.loads(en.stdout.splitlines()[-1])
    assert sorted(zh_summary) == sorted(en_summary)
    assert zh_summary["exit_code"] == 0


def test_run_of_a_missing_command_is_a_chinese_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-job")
    done = run_gpuwise("--lang", "zh", "run", "--no-ledger", "--", missing, cwd=tmp_path)
    assert done.returncode == 2
    assert f"命令 '{missing}' 不存在" in done.stderr and "检查路径" in done.stderr
    assert "Traceback" not in done.stderr


def test_empty_ledger_and_budget_errors_in_chinese(tmp_path: Path) -> None:
    ledger = run_gpuwise("--lang", "zh", "ledger", "--since", "7d")
    assert ledger.returncode == 0
    assert ledger.stdout.strip() == "最近 7d 内没有记录任何运行。"
    budget = run_gpuwise("--lang", "zh", "run", "--budget-usd", "10", "--", "true", cwd=tmp_path)
    assert budget.returncode == 2
    assert "--budget-usd 需要配合 --project 使用" in budget.stderr
    listing = run_gpuwise("--lang", "zh", "checkpoints", "list", (tmp_path / "none").as_uri())
    assert listing.returncode == 0
    assert "处没有完整的检查点。" in listing.stdout
