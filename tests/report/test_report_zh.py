"""`gpuwise report` in Chinese (`--lang zh`): headings and findings translated, the JSON document's keys the
same as in English, and the HTML pages say which language they are in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpuwise.locale import use_language
from gpuwise.report.text import render_text


def _gpuwise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuwise", *args], capture_output=True, text=True, timeout=120, check=False
    )


def _keys(doc: Any, at: str = "") -> set[str]:
    """Every key path of a JSON document (list items share their list's path)."""
    if isinstance(doc, dict):
        return {f"{at}.{k}" for k in doc} | {p for k, v in doc.items() for p in _keys(v, f"{at}.{k}")}
    if isinstance(doc, list):
        return {p for item in doc for p in _keys(item, f"{at}[]")}
    return set()


def test_text_report_in_chinese(history: Path) -> None:
    done = _gpuwise("--lang", "zh", "report", "--since", "10d")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("gpuwise 报告 ")
    assert any(line.startswith("花费：") for line in lines)
    assert any(line.startswith("已采样的 GPU 时间：") for line in lines)
    assert "Spend:" not in done.stdout and "GPU time sampled" not in done.stdout


def test_json_report_keys_do_not_change_with_the_language(history: Path) -> None:
    zh = _gpuwise("--lang", "zh", "report", "--json", "--since", "10d")
    en = _gpuwise("--lang", "en", "report", "--json", "--since", "10d")
    assert zh.returncode == en.returncode == 0, zh.stderr
    zh_doc, en_doc = json.loads(zh.stdout), json.loads(en.stdout)
    assert _keys(zh_doc) == _keys(en_doc)
    assert zh_doc["spend"]["totals"] == en_doc["spend"]["totals"]


def test_findings_and_headings_render_in_chinese(history: Path) -> None:
    done = _gpuwise("--lang", "en", "report", "--json", "--since", "10d")
    doc = json.loads(done.stdout)
    doc["findings"] = ["x"]
    environ: dict[str, str] = {}
    use_language("zh", environ)
    try:
        lines = render_text(doc)
    finally:
        use_language("en", environ)
    assert "发现：" in lines and "  - x" in lines
    assert any(line.startswith("  按项目：") for line in lines)
    assert render_text(doc)[-2] == "Findings:"  # English again once the language is back
