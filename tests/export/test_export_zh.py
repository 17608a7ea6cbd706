"""`gpuwise export` in Chinese (`--lang zh`): its errors are translated, the files it writes are not
(YAML, torchrun lines and Dockerfiles are read by programs and stay byte-identical)."""

from __future__ import annotations

import subprocess
import sys


def _gpuwise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuwise", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_export_error_in_chinese() -> None:
    done = _gpuwise("--lang", "zh", "export", "torchrun", "--gpu", "H100:12", "--nodes", "5")
    assert done.returncode == 2
    assert "--gpu H100:12 无法平均分到 5 个节点上" in done.stderr
    assert "给出 --nodes 整数倍的 GPU 数量，例如 --gpu H100:40" in done.stderr
    assert done.stdout == ""


def test_exported_file_is_the_same_in_every_language() -> None:
    args = ("export", "skypilot", "--gpu", "H100:16", "--spot")
    zh, en = _gpuwise("--lang", "zh", *args), _gpuwise("--lang", "en", *args)
    assert zh.returncode == en.returncode == 0, zh.stderr
    assert zh.stdout == en.stdout
    assert "accelerators:" in zh.stdout
