"""`gpuwise report --currency CNY`: the spend in yuan with the rate printed; JSON amounts stay in USD."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpuwise.cli.main import main


def test_text_report_in_yuan_prints_the_rate_first(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--since", "10d"]) == 0
    in_dollars = capsys.readouterr().out
    assert main(["report", "--since", "10d", "--currency", "CNY", "--exchange-rate", "CNY=0.125"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("Money in CNY (¥): USD prices converted at 1 USD = 8 CNY")
    assert "$" not in out and "¥" in out
    spend = re.search(r"Spend: \$([\d,.]+)", in_dollars)
    assert spend is not None
    dollars = float(spend.group(1).replace(",", ""))
    yuan = re.search(r"Spend: ¥([\d,.]+)", out)
    assert yuan is not None and float(yuan.group(1).replace(",", "")) == pytest.approx(dollars * 8, rel=0.01)


def test_json_report_names_the_currency_and_rate(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--json", "--since", "10d", "--currency", "CNY"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["money"]["currency"] == "CNY"
    assert doc["money"]["rate"]["as_of"] == "2025-02-28"
