"""`--help` is rendered with rich markup, which swallows a bracketed word: "[train] framework" printed as
"( framework)". Every command's help and every option's help must write such words escaped (\\[train]) or
in other words."""

from __future__ import annotations

import re
from typing import Any

import typer

from gpuwise.cli.main import full_app

# a lowercase bracketed word not preceded by a backslash: what rich takes for a style tag and drops
_EATEN = re.compile(r"(?<!\\)\[[a-z][a-z_.-]*\]")


def _texts(command: Any, path: str) -> list[tuple[str, str]]:
    """(where, text) of the command's help and each option's, then of every sub-command (typer vendors
    click, so a group is known by its `commands`, not by click's class)."""
    out = [(path, command.help or "")]
    for param in command.params:
        out.append((f"{path} {param.name}", getattr(param, "help", None) or ""))
    for name, sub in getattr(command, "commands", {}).items():
        out.extend(_texts(sub, f"{path} {name}"))
    return out


def test_no_help_text_loses_a_bracketed_word_to_markup() -> None:
    texts = _texts(typer.main.get_command(full_app()), "gpuwise")
    assert len(texts) > 100  # every command and option was walked
    eaten = [(where, m.group(0)) for where, text in texts for m in _EATEN.finditer(text)]
    assert eaten == []


def test_the_pattern_catches_what_rich_swallows() -> None:
    assert _EATEN.findall("same training stack ([train] framework)") == ["[train]"]
    assert _EATEN.findall(r"escaped \[train], --gpu H100:8, [default: 1]") == []
