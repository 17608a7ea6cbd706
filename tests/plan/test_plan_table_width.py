"""`gpuwise plan`'s table at 80 columns (a terminal's default, and rich's width when output is piped) shows
every column of every row whole, in English and in Chinese.

The table used to be wider than 80 on most workloads: rich then cropped the right-hand `free/bound` column
away without a mark, and on serving and pre-training plans (ranges such as '110 h (4.6 days)–147 h (6.1
days)') it dropped the offer column altogether, so the reader could not tell what to rent.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _plan_table(workload: Path, lang: str) -> tuple[list[str], int]:
    """The table's lines at COLUMNS=80 and how many rows the JSON says it shows."""
    env = {**os.environ, "COLUMNS": "80"}
    argv = [sys.executable, "-m", "gpuwise", "--lang", lang, "plan", str(workload), "--top", "5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("top 5", "按费用")))
    end = next(i for i, line in enumerate(lines) if line.startswith(("* on the Pareto", "*：")))
    rows = sum(1 for line in lines[start:end] if re.match(r"^ {0,6}\d+\*?[CFB]*  \S", line))
    return lines[start:end], rows


@pytest.mark.parametrize(
    ("name", "lang"),
    [
        ("llama3-70b-serving.toml", "en"),  # a month of serving: ranges in days
        ("llama3-8b-pretrain.toml", "en"),  # multi-node, weeks at the high end
        ("llama3-8b-lora.toml", "en"),
        ("llama3-70b-serving.toml", "zh"),  # "US$" and 2026年5月20日 are wider than "$" and an ISO date
    ],
)
def test_every_column_of_every_row_fits_80_columns(name: str, lang: str) -> None:
    table, rows = _plan_table(EXAMPLES / name, lang)
    text = "\n".join(table)
    assert rows >= 5, text
    headings = (
        ("offer", "pricing", "hours", "total", "bound") if lang == "en" else ("报价", "计价", "总计", "瓶颈")
    )
    for heading in headings:
        assert heading in text, text
    # each row's first line ends with the free memory: the right-hand column was not cropped away
    assert sum(1 for line in table if re.match(r"^ {0,6}\d+\*?[CFB]*  \S.*\d\sGiB\s*$", line)) == rows, text
    assert not re.search(r"[\d$]…", text), text  # no number cut short
