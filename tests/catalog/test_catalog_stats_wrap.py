"""`catalog stats` at 80 columns: a skipped-row reason too long for the line goes on under itself, indented
past the counts, not back at the margin where it reads as a line of its own."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from gpuwise.cli import output
from gpuwise.cli.main import main


def test_long_reasons_wrap_under_themselves_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, color_system=None, legacy_windows=False)
    monkeypatch.setattr(output, "console", console, raising=False)
    assert main(["catalog", "stats"]) == 0
    lines = buffer.getvalue().splitlines()
    start = lines.index("Rows skipped (never guessed)")
    block = lines[start + 1 : lines.index("Price fields dropped")]
    assert len(block) > 4  # the bundled aws reason is longer than one line at 80 columns
    for line in block:
        assert len(line) <= 80 and line == line.rstrip()
        assert line[:10].strip().isdigit() or not line[:10].strip(), line  # a count, or the indent
    assert any(not line[:10].strip() for line in block)  # a continuation line, indented
    assert "graphics GPUs…)" in " ".join(line.strip() for line in block)
