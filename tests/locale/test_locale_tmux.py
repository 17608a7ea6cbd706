"""Done-when (issue 20): `LANG=zh_CN.UTF-8 gpuwise plan …` in a real terminal (tmux) lines its table up, and
the Chinese help's boxes close at the same column on every line: rich's CJK widths (2 cells for 中文)
agree with the terminal's. Display columns are measured here with the Unicode East Asian Width property,
not with rich's own function."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from locale_support import REPO, display_width

pytestmark = pytest.mark.timeout(120)

_RULE = "─"


def _tmux(tmux: str, sock: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tmux, "-L", sock, *args], capture_output=True, text=True, timeout=10, check=False)


def _capture(tmux: str, name: str, args: list[str], tmp_path: Path, ready: Callable[[str], bool]) -> str:
    """The pane (160 × 200) after `LANG=zh_CN.UTF-8 python -m gpuwise ARGS` has printed what `ready` wants."""
    sock = f"gpuwise-locale-{os.getpid()}-{name}"
    env = {
        "GPUWISE_DATA_DIR": str(tmp_path / "data"),
        "GPUWISE_CONFIG_DIR": str(tmp_path / "config"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "LANG": "zh_CN.UTF-8",
    }
    command = " ".join(
        [
            "env",
            "-i",  # nothing of pytest's environment (COLUMNS, LINES, LANGUAGE) but what is listed
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m",
            "gpuwise",
            *(shlex.quote(a) for a in args),
            "; sleep 60",
        ]
    )
    started = _tmux(
        tmux, sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "200", "-c", str(REPO), command
    )
    assert started.returncode == 0, started.stderr
    screen = ""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = _tmux(tmux, sock, "capture-pane", "-p", "-t", "t", "-S", "0", "-E", "199").stdout
            if ready(screen):
                break
            time.sleep(0.3)
    finally:
        _tmux(tmux, sock, "kill-server")
    assert "Traceback" not in screen, screen
    return screen


def _table(screen: str) -> tuple[list[str], int, int]:
    """The lines of the first rich table under a header rule ('────'), with the rule's start and end."""
    lines = screen.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() and set(line.strip()) == {_RULE})
    rule = lines[at]
    start = display_width(rule[: len(rule) - len(rule.lstrip())])
    end = display_width(rule.rstrip())
    top = at
    while top > 0 and lines[top - 1].strip():
        top -= 1
    bottom = at + 1
    while bottom < len(lines) and lines[bottom].strip():
        bottom += 1
    return lines[top:bottom], start, end


def test_the_chinese_plan_table_lines_up(need_program: Callable[[str], str], tmp_path: Path) -> None:
    tmux = need_program("tmux")
    args = ["plan", "examples/llama3-8b-lora.toml", "--top", "8"]
    screen = _capture(tmux, "plan", args, tmp_path, lambda s: s.count("/h") >= 8)
    table, _start, end = _table(screen)
    widths = [display_width(line.rstrip()) for line in table]
    # Every line of the table ends inside the rule's span; the right-aligned last column puts the lines
    # that fill it (the headings' last line and each row's first) exactly on the rule's end. A cell whose
    # CJK text rich measured at one cell per character would push its line past the end.
    assert max(widths) <= end, "\n".join(table)
    assert widths.count(end) >= 1 + 8, "\n".join(table)


def _box_ends(screen: str) -> set[int]:
    boxed = [line.rstrip() for line in screen.splitlines() if line.strip().startswith(("╭", "│", "╰"))]
    return {display_width(line) for line in boxed}


def test_the_box_check_can_fail() -> None:
    """A panel padded as if 中文 took one cell per character closes two columns late on that line."""
    aligned = "╭─ 选项 ─╮\n│ 显示   │\n│ abcdef │\n╰────────╯"
    misaligned = "╭─ 选项 ─╮\n│ 显示     │\n│ abcdef │\n╰────────╯"
    assert len(_box_ends(aligned)) == 1
    assert len(_box_ends(misaligned)) == 2


def test_the_chinese_help_boxes_close_on_one_column(
    need_program: Callable[[str], str], tmp_path: Path
) -> None:
    """Every line of the option and command panels ends with its border at the same display column, with
    Chinese help text inside (the root help is translated in gpuwise's core catalog)."""
    tmux = need_program("tmux")
    screen = _capture(tmux, "help", ["--help"], tmp_path, lambda s: s.count("╰") >= 2)
    boxed = [line.rstrip() for line in screen.splitlines() if line.strip().startswith(("╭", "│", "╰"))]
    assert any("显示此帮助信息并退出" in line for line in boxed), screen
    assert len(_box_ends(screen)) == 1, "\n".join(boxed)
    assert all(line.endswith(("╮", "│", "╯")) for line in boxed), "\n".join(boxed)
