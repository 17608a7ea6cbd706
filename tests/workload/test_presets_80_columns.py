"""`gpuwise presets` at 80 columns (a terminal's default, and rich's width when piped): a source column
folded repository names mid-word ('meta-llama/Llama-2-7b' / '-hf') and took ~7 lines a preset. Each preset
is now its name line (never split) and its source wrapped at spaces beneath."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _presets(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "80"}
    command = [sys.executable, "-m", "gpuwise", "presets", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return done.stdout


def test_presets_read_at_80_columns_names_and_repositories_whole() -> None:
    rows = json.loads(_presets("--json"))["presets"]
    lines = _presets().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) <= 4 * len(rows) + 2  # was ~7 a preset
    words = {word for line in lines for word in line.split()}
    for row in rows:
        assert row["name"] in words  # never folded
        repo = row["source"].split()[0]
        if "/" in repo and len(repo) < 70:
            assert repo in words, repo  # 'meta-llama/Llama-2-7b-hf' whole, not folded at the column edge
