"""`gpuwise init` in Chinese (`--lang zh`): what it prints is translated, the project it writes is not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _gpuwise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuwise", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_init_prints_chinese_and_writes_the_english_template(tmp_path: Path) -> None:
    zh = _gpuwise("--lang", "zh", "init", str(tmp_path / "zh"), "--name", "demo")
    en = _gpuwise("--lang", "en", "init", str(tmp_path / "en"), "--name", "demo")
    assert zh.returncode == en.returncode == 0, zh.stderr
    assert "已写入" in zh.stdout and "下一步：cd" in zh.stdout and "之后的步骤见 README.md。" in zh.stdout
    written = sorted(p.relative_to(tmp_path / "zh") for p in (tmp_path / "zh").rglob("*") if p.is_file())
    assert written == sorted(
        p.relative_to(tmp_path / "en") for p in (tmp_path / "en").rglob("*") if p.is_file()
    )
    for rel in written:
        assert (tmp_path / "zh" / rel).read_bytes() == (tmp_path / "en" / rel).read_bytes(), rel


def test_init_errors_and_json_keys(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine\n", encoding="utf-8")
    refused = _gpuwise("--lang", "zh", "init", str(tmp_path / "full"))
    assert refused.returncode == 2
    assert "不是空目录" in refused.stderr and "--force" in refused.stderr
    done = _gpuwise("--lang", "zh", "init", str(tmp_path / "j"), "--json")
    assert done.returncode == 0
    assert sorted(json.loads(done.stdout)) == ["directory", "kept", "name", "written"]
