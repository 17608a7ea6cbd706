"""`--help` wraps only where the terminal wraps it, in English and in Chinese: the line breaks a docstring
(or its translation) was wrapped at in the source never reach the screen, while lists, examples and code
lines stay as written.

Every help screen (the root, each command and sub-command) is rendered at 250 columns, and the root at 80,
in one process per language. A line is broken by a hard newline when the next line's first word would have
fitted after it: the terminal (rich) only wraps a line when that word does not fit.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from typing import Any

import pytest
import typer
from locale_support import REPO, zh_environment
from rich.cells import cell_len

from gpuwise.cli.localize import reflow, reflow_help

WIDE = 250
NARROW = 80

# Renders `gpuwise [PATH…] --help` for the root, every command and every sub-command at WIDE columns, and
# the root at NARROW, in one process whose language was chosen first (as the console script does).
_EVERY_HELP = r"""
import contextlib, io, json, os, sys
from gpuwise.cli.entry import apply_language
assert apply_language(sys.argv[3:]) is None
import typer
from gpuwise.cli import main
paths = []
def walk(command, path):
    paths.append(path)
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            walk(sub, [*path, name])
walk(typer.main.get_command(main.full_app()), [])
def render(path, columns):
    os.environ["COLUMNS"] = str(columns)  # rich reads it when typer makes the help's console
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main.main([*path, "--help"])
    assert code == 0, path
    return buffer.getvalue()
wide, narrow = int(sys.argv[1]), int(sys.argv[2])
screens = [[" ".join(["gpuwise", *p]), wide, render(p, wide)] for p in paths]
screens.append(["gpuwise", narrow, render([], narrow)])
print(json.dumps(screens))
"""


@pytest.fixture(scope="module", params=["en", "zh"])
def every_help(request: pytest.FixtureRequest) -> list[tuple[str, int, str]]:
    lang = request.param
    done = subprocess.run(
        [sys.executable, "-c", _EVERY_HELP, str(WIDE), str(NARROW), "--lang", lang],
        capture_output=True,
        text=True,
        env=zh_environment(LANG="zh_CN.UTF-8" if lang == "zh" else "en_US.UTF-8"),
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [(f"{lang}: {name} @{width}", width, text) for name, width, text in json.loads(done.stdout)]


# --- the check ------------------------------------------------------------------------------------------

# A line that starts on its own on purpose: a list item, a `$ ` line, typer's "[default: …]"/"[required]"
# (and an optional argument's "[NAME]"), an option's name.
_OWN_LINE = re.compile(r"(?:[-*+•]|\d{1,2}[.)])\s|\$ |\[|-")
_MARGIN = 2  # cells: rich's column widths may leave one unused


class _Line:
    """One screen line's text: where it starts, where it ends and how far it may reach (cells)."""

    def __init__(self, line: str, width: int) -> None:
        self.panel = line.startswith("│") and line.rstrip().endswith("│")
        inner = line.rstrip()[1:-1] if self.panel else line.rstrip()
        offset = 1 if self.panel else 0
        self.text = inner.strip()
        self.start = offset + len(inner) - len(inner.lstrip(" "))
        self.end = offset + cell_len(inner.rstrip())
        self.limit = cell_len(line.rstrip()) - 2 if self.panel else width - 1  # the border or the padding


def _hard_break(a: _Line, b: _Line) -> bool:
    if not (a.text and b.text) or a.panel != b.panel or a.text.endswith((":", "：")):
        return False
    if _OWN_LINE.match(b.text) or (a.panel and b.start < max(a.start, 3)):  # a new row of a panel
        return False
    if not a.panel and max(a.start, b.start) > 1:  # an indented example or code line (prose starts at 1)
        return False
    return a.end + 1 + cell_len(b.text.split()[0]) <= a.limit - _MARGIN


def hard_breaks(screen: str, width: int) -> list[str]:
    """The places where a line of `screen` ends although the next line's first word would have fitted."""
    lines = [_Line(line, width) for line in screen.splitlines()]
    return [f"{a.text[-40:]!r} / {b.text[:40]!r}" for a, b in itertools.pairwise(lines) if _hard_break(a, b)]


def test_no_help_screen_keeps_a_hard_line_break(every_help: list[tuple[str, int, str]]) -> None:
    assert len(every_help) > 30  # the root (twice), 17 commands and their sub-commands
    found = [f"{name}: {where}" for name, width, text in every_help for where in hard_breaks(text, width)]
    assert not found, f"{len(found)} hard line breaks in --help:\n" + "\n".join(found)


def test_examples_and_paragraphs_are_kept(every_help: list[tuple[str, int, str]]) -> None:
    lang = every_help[0][0].split(":")[0]
    screens = {name.split(": ", 1)[1]: text for name, _width, text in every_help}
    export = [line.strip() for line in screens[f"gpuwise export @{WIDE}"].splitlines()]
    assert "gpuwise export torchrun --gpu H100:16 --nodes 2" in export  # an example keeps its own line
    second = {"en": "gpuwise is wired in:", "zh": "其中已接入 gpuwise："}[lang]  # export's second paragraph
    starts = [i for i, line in enumerate(export) if line.startswith(second)]
    assert len(starts) == 1 and export[starts[0] - 1] == ""  # after the blank line that ends the first
    root = screens[f"gpuwise @{NARROW}"]
    assert max(cell_len(line) for line in root.splitlines()) <= NARROW


def test_the_check_finds_a_hard_break() -> None:
    soft = " Write the file an engine takes to run a plan option: a SkyPilot task YAML, a\n Kubernetes Job.\n"
    assert hard_breaks(soft, 80) == []  # "Kubernetes" does not fit in 80 columns: rich wrapped it
    hard = " Write the file an engine takes to run a plan option: a\n Kubernetes Job.\n"
    assert hard_breaks(hard, 80) == ["' an engine takes to run a plan option: a' / 'Kubernetes Job.'"]
    row = "│ export  Write the file, a Kubernetes Job (a".ljust(77) + "│"
    more = "│         JobSet for several nodes).".ljust(77) + "│"
    assert len(hard_breaks(f"{row}\n{more}\n", 80)) == 1
    assert hard_breaks(f"{row.replace('(a ', '(a:')}\n{more}\n", 80) == []  # a lead-in ending with a colon
    example = " Examples:\n\n   gpuwise plan job.toml\n   gpuwise export k8s\n"
    assert hard_breaks(example, 80) == []
    chinese = " 支持该 GPU 的驱动分支\n 框架构建所用的 CUDA 工具包。\n"
    assert len(hard_breaks(chinese, 80)) == 1
    chinese = " 支持该 GPU 的驱动分支 -> 框架构建所用的 CUDA 工具包\n 所依据的对照表，理由写在注释里。\n"
    assert hard_breaks(chinese, 80) == []  # rich breaks Chinese only at spaces: that word did not fit


# --- the reflow itself ----------------------------------------------------------------------------------


def test_prose_lines_are_joined_and_paragraphs_kept() -> None:
    text = "Run a job,\nand record it.\nThen stop.\n\nSecond\nparagraph."
    assert reflow(text) == "Run a job, and record it. Then stop.\n\nSecond paragraph."


def test_chinese_joins_without_a_space_except_beside_latin_words() -> None:
    assert reflow("在 CPU 上为核数 × 频率 × 向量\n宽度。") == "在 CPU 上为核数 × 频率 × 向量宽度。"
    assert reflow("峰值显存、GPU\n利用率") == "峰值显存、GPU 利用率"  # as translators write it
    assert reflow("venv 中的 PyTorch\n（或者用 --container）") == "venv 中的 PyTorch（或者用 --container）"
    assert reflow("任务包计时，\n`compare` 把结果并排比较") == "任务包计时，`compare` 把结果并排比较"


def test_lists_examples_and_code_are_kept_as_written() -> None:
    kept = [
        "Stops when:\n- nobody used it for 60 min\n- the memory is free",
        "Steps:\n1. install the driver\n2) reboot",
        "Examples:\n\n  gpuwise plan a.toml\n  gpuwise plan b.toml --json",
        "Run:\n$ gpuwise doctor\n$ gpuwise setup",
        "\b\nkept\nas\nwritten",
    ]
    for text in kept:
        assert reflow(text) == text
    assert reflow("- an item that\ngoes on\n- the next") == "- an item that goes on\n- the next"
    assert reflow("Tasks:\ngemm_fp32,\ngemm_bf16") == "Tasks:\ngemm_fp32, gemm_bf16"  # only a list is kept
    assert reflow("  code line\nprose after\nit") == "  code line\nprose after it"
    assert reflow("shown\nhere\n\fhidden\nby typer") == "shown here\n\fhidden\nby typer"


def test_reflow_is_idempotent() -> None:
    text = "A long\nline.\n\nExamples:\n\n  gpuwise x\n\n- a\n- b\n\n中文\n句子"
    assert reflow(reflow(text)) == reflow(text)


def _app_with_option_help(help_text: str) -> Any:
    app = typer.Typer()

    @app.command()
    def run(mode: str = typer.Option("a", help=help_text)) -> None:
        """Run it,
        now."""

    return typer.main.get_command(app)


def test_option_help_wraps_at_the_terminal_and_keeps_its_lists(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    command = _app_with_option_help("显存被占用时\n等待更久。\n\nModes:\n- fast\n- safe")
    reflow_help(command)
    reflow_help(command)  # twice: idempotent
    assert command.help == "Run it, now."
    assert command.params[0].help == "显存被占用时等待更久。\n\n\b\nModes:\n- fast\n- safe"
    monkeypatch.setenv("COLUMNS", "120")
    assert command.main(["--help"], prog_name="run", standalone_mode=False) == 0
    screen = capsys.readouterr().out
    assert "显存被占用时等待更久。" in screen  # typer would have set a space between the two characters
    assert re.search(r"│\s+- fast\s+│", screen) and re.search(r"│\s+- safe\s+│", screen)
