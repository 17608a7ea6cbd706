"""The checks every command runs on the paths and numbers a user types speak the user's language."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuwise.cli import output
from gpuwise.cli.output import check_at_least, check_input_file, check_output_file
from gpuwise.errors import ConfigError
from gpuwise.locale import use_language


@pytest.fixture
def zh() -> None:
    use_language("zh")  # the conftest puts English back after the test


def _render(call: Callable[..., None], *args: object, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as caught:
        call(*args, **kwargs)
    return caught.value.render()


@pytest.mark.usefixtures("zh")
def test_output_file_messages_in_chinese(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "r.html"
    assert _render(check_output_file, missing, "--html", name="report.html") == (
        f"--html {missing}：文件夹 {missing.parent} 不存在。"
        f"解决方法：先创建它（mkdir -p {missing.parent}），或换一个路径。"
    )
    assert _render(check_output_file, tmp_path, "--html", name="report.html") == (
        f"--html {tmp_path} 是一个目录。解决方法：请给出文件名，例如 --html {tmp_path / 'report.html'}。"
    )


@pytest.mark.usefixtures("zh")
def test_an_unwritable_folder_in_chinese(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    # root may write into any folder, so the folder is made unwritable at our own check, not by its mode
    monkeypatch.setattr(output, "folder_writable", lambda path: path != folder)
    text = _render(check_output_file, folder / "x.csv", "--record", name="gpu.csv")
    assert text == f"--record {folder / 'x.csv'}：文件夹 {folder} 不可写。解决方法：换一个路径。"


@pytest.mark.usefixtures("zh")
def test_number_and_input_checks_in_chinese(tmp_path: Path) -> None:
    assert _render(check_at_least, 0, 1, "--top", example="--top 10") == (
        "--top 必须大于或等于 1，而不是 0。解决方法：例如使用 --top 10。"
    )
    assert _render(check_at_least, float("inf"), 1, "--top", example="--top 10") == (
        "--top 必须是有限的数，而不是 inf。解决方法：例如使用 --top 10。"
    )
    binary = tmp_path / "w.toml"
    binary.write_bytes(b"ab\xff")
    assert _render(check_input_file, binary, "工作负载文件", fix="换一个文件", text=True) == (
        f"工作负载文件 {binary} 不是文本文件。第 2 字节不是 UTF-8（这是二进制文件，或其他编码的文件）。"
        "解决方法：换一个文件。"
    )
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert _render(check_input_file, fifo, "工作负载文件", fix="换一个文件").startswith(
        f"工作负载文件 {fifo} 是命名管道（FIFO）。读取它会一直等待写入方"
    )


def test_english_stays_as_it_was(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "r.html"
    assert _render(check_output_file, missing, "--html", name="report.html") == (
        f"--html {missing}: the folder {missing.parent} does not exist. "
        f"To fix: create it first (mkdir -p {missing.parent}) or choose another path."
    )
    assert _render(check_at_least, 0.5, 1, "--hours", example="--hours 2") == (
        "--hours must be 1 or more, not 0.5. To fix: use e.g. --hours 2."
    )
