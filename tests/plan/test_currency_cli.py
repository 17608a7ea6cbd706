"""`gpuwise plan --currency`: every amount in the chosen currency, with the rate, its date and its source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuwise.cli.main import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "plan"


@pytest.fixture(scope="module")
def cn_workload(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The LoRA fixture limited to cn-* regions (one sequence per micro batch, so cn GPUs fit it)."""
    text = (
        (FIXTURES / "llama3-8b-lora.toml")
        .read_text(encoding="utf-8")
        .replace("micro_batch = 4", "micro_batch = 1")
    )
    path = tmp_path_factory.mktemp("cn") / "cn.toml"
    path.write_text(text + '\n[constraints]\nregions = ["cn-*"]\n', encoding="utf-8")
    return str(path)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["plan", *args, "--json", "--top", "100"])
    return code, json.loads(capsys.readouterr().out)


def test_yuan_plan_converts_at_the_bundled_rate_and_says_so(
    capsys: pytest.CaptureFixture[str], cn_workload: str
) -> None:
    code, doc = _json(capsys, cn_workload, "--currency", "cny")
    assert code == 0
    money = doc["money"]
    assert money["currency"] == "CNY"
    assert money["rate"]["per_usd"] == pytest.approx(7.2734)
    assert money["rate"]["as_of"] == "2025-02-28"
    assert "Federal Reserve" in money["rate"]["source"]
    assert doc["notes"][0].startswith("Money in CNY (¥): USD prices converted at 1 USD = 7.2734 CNY")
    o = doc["options"][0]
    assert o["currency"] == "CNY"  # the AWS China price, ranked at the bundled rate
    assert o["in_currency"]["cost"] == pytest.approx(o["cost_usd"] * 7.2734)
    assert any("bundled rate: 1 USD = 7.2734 CNY" in a for a in o["assumptions"])


def test_a_given_rate_overrides_the_bundled_one(capsys: pytest.CaptureFixture[str], cn_workload: str) -> None:
    code, doc = _json(capsys, cn_workload, "--currency", "CNY", "--exchange-rate", "CNY=0.125")
    assert code == 0
    assert doc["money"]["rate"] == {
        "per_usd": 8.0,
        "usd_per_unit": 0.125,
        "as_of": None,
        "source": "--exchange-rate",
        "given": True,
    }
    assert doc["money"]["ranking_rates"] == {}
    assert any("(given)" in a for a in doc["options"][0]["assumptions"])


def test_dollar_plan_with_currency_ranks_yuan_offers_and_names_the_rate(
    capsys: pytest.CaptureFixture[str], cn_workload: str
) -> None:
    code, doc = _json(capsys, cn_workload, "--currency", "USD")
    assert code == 0
    assert doc["money"]["rate"] is None
    assert doc["money"]["ranking_rates"]["CNY"]["as_of"] == "2025-02-28"
    assert "in_currency" not in doc["options"][0]
    assert doc["notes"][0].startswith("Offers priced in CNY ranked with the rest at the bundled rate")


def test_table_shows_yuan_and_the_rate_line(capsys: pytest.CaptureFixture[str], cn_workload: str) -> None:
    assert main(["plan", cn_workload, "--currency", "CNY", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "Money in CNY" in out and "2025-02-28" in out and "FRED EXCHUS" in out
    assert "¥" in out
    assert "$" not in out.split("top ", 1)[1].split("*", 1)[0]  # no dollar amount in the table itself


def test_an_unknown_currency_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(FIXTURES / "llama3-8b-lora.toml"), "--currency", "EUR"]) == 2
    err = capsys.readouterr().err
    assert "--currency 'EUR'" in err and "To fix" in err and "Traceback" not in err


def test_html_report_in_yuan(cn_workload: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("plotly")
    page = tmp_path / "plan.html"
    assert main(["plan", cn_workload, "--currency", "CNY", "--top", "2", "--html", str(page)]) == 0
    capsys.readouterr()
    text = page.read_text(encoding="utf-8")
    assert "<th>¥/h</th>" in text and "1 USD = 7.2734 CNY" in text


def test_nothing_qualifies_without_a_rate_names_currency_as_the_fix(
    capsys: pytest.CaptureFixture[str], cn_workload: str
) -> None:
    assert main(["plan", cn_workload]) == 1
    err = capsys.readouterr().err
    assert (
        "no --exchange-rate or --currency given" in err and "--currency CNY for the bundled dated rate" in err
    )


def test_unknown_costs_are_counted_as_zero_in_the_shown_currency(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A yuan plan said "unknown, counted as $0" under ¥ figures: --pick and the HTML legend now name ¥0,
    and the option's note, written before a currency is chosen, says zero."""
    workload = str(FIXTURES / "llama3-8b-lora.toml")
    code, doc = _json(capsys, workload, "--currency", "cny")
    assert code == 0
    rank = next(i for i, o in enumerate(doc["options"], 1) if o["unknown_costs"])
    assert any(a.startswith("unknown, counted as zero: ") for a in doc["options"][rank - 1]["assumptions"])
    assert main(["plan", workload, "--currency", "cny", "--top", "100", "--pick", str(rank)]) == 0
    shown = capsys.readouterr().out
    assert "unknown, counted as ¥0: " in shown and "$0" not in shown
    assert "(listed in " in shown  # the price's own currency, beside the converted figure
    page = tmp_path / "plan.html"
    assert main(["plan", workload, "--currency", "cny", "--html", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "counted as ¥0." in text and "counted as $0" not in text
