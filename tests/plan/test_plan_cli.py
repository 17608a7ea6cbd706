"""`gpuwise plan` end to end on the bundled catalog and the real estimator (CONTRACTS §3)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuwise.cli.main import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "plan"
LORA = str(FIXTURES / "llama3-8b-lora.toml")
TIGHT = str(FIXTURES / "tight-budget.toml")

OPTION_KEYS = {
    "provider",
    "instance_type",
    "region",
    "gpu",
    "gpus_per_node",
    "nodes",
    "pricing",
    "price_usd_per_hour",
    "price_as_of",
    "hours",
    "cost_usd",
    "cost_breakdown_usd",
    "unknown_costs",
    "assumptions",
    "fits",
    "memory_per_gpu_gib",
    "bottleneck",
    "pareto",
}


LAST_ERR: list[str] = []


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["plan", *args, "--json"])
    captured = capsys.readouterr()
    LAST_ERR[:] = [captured.err]
    return code, json.loads(captured.out)


def test_json_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, LORA)
    assert code == 0
    assert {"workload", "options", "considered", "rejected", "catalog"} <= set(doc)
    assert doc["workload"]["name"] == "llama3-8b-lora"
    assert doc["workload"]["train"]["micro_batch"] == 4  # parsed, defaults filled
    assert doc["workload"]["constraints"]["max_nodes"] == 1
    # the top 10, plus any headline pick ranked below them (picks are always kept)
    assert 0 < len(doc["options"]) <= 10 + 3
    assert set(doc["picks"]) == {"cheapest", "fastest", "balanced"}
    assert doc["considered"] == doc["qualifying"] + sum(doc["rejected"].values())
    assert len(doc["catalog"]["sources"]) >= 8
    costs = []
    for o in doc["options"]:
        assert set(o) >= OPTION_KEYS
        assert set(o["cost_breakdown_usd"]) == {
            "compute",
            "startup",
            "storage",
            "egress",
            "interruption_overhead",
        }
        assert o["cost_breakdown_usd"]["startup"] > 0
        assert math.isclose(sum(o["cost_breakdown_usd"].values()), o["cost_usd"], rel_tol=1e-9)
        assert o["pricing"] in ("on_demand", "spot", "reserved")
        assert o["fits"] is True
        assert o["currency"] == "USD"
        if o["pricing"] == "spot":
            assert o["cost_breakdown_usd"]["interruption_overhead"] > 0
        costs.append(o["cost_usd"])
    assert costs[:10] == sorted(costs[:10])
    assert any(o["pareto"] for o in doc["options"]) or doc["qualifying"] > 10


def test_top_and_time_objective(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, LORA, "--top", "3", "--objective", "time")
    assert 3 <= len(doc["options"]) <= 6  # the top 3 and the picks beyond them
    assert doc["picks"]["fastest"] == 0
    hours = [o["hours"] for o in doc["options"][:3]]
    assert hours == sorted(hours)
    assert doc["options"][0]["pareto"]  # the fastest option is always on the front


def test_constraints_from_the_command_line_workload(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (FIXTURES / "llama3-8b-lora.toml").read_text(encoding="utf-8")
    text += (
        '\n[constraints]\nproviders = ["aws", "gcp"]\ngpus = ["h100-sxm", "A100 80GB"]\n'
        "interruptible = false\n"
    )
    path = tmp_path / "w.toml"
    path.write_text(text, encoding="utf-8")
    code, doc = run_json(capsys, str(path), "--top", "100")
    assert code == 0
    assert doc["options"], doc["rejected"]
    for o in doc["options"]:
        assert o["provider"] in ("aws", "gcp")
        assert o["gpu"] in ("H100", "A100-80GB")
        assert o["pricing"] == "on_demand"
    assert doc["rejected"]["provider"] > 0
    assert doc["rejected"]["spot_not_allowed"] > 0


def test_currency_needs_an_exchange_rate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """AWS China prices (CNY) stay out of USD plans unless the user gives a rate; never converted silently."""
    text = (FIXTURES / "llama3-8b-lora.toml").read_text(encoding="utf-8")
    # One sequence per micro batch: with the HF stack's fp32 logits, 4 × 4096 tokens fit no GPU sold in cn-*.
    text = text.replace("micro_batch = 4", "micro_batch = 1")
    path = tmp_path / "cn.toml"
    path.write_text(text + '\n[constraints]\nregions = ["cn-*"]\n', encoding="utf-8")
    code, doc = run_json(capsys, str(path))
    assert code == 1
    assert doc["options"] == []
    assert doc["rejected"]["currency"] > 0
    assert "--exchange-rate" in LAST_ERR[0]
    code, doc = run_json(capsys, str(path), "--exchange-rate", "cny=0.14", "--top", "100")
    assert code == 0, doc["rejected"]
    assert "currency" not in doc["rejected"]
    assert {o["currency"] for o in doc["options"]} == {"CNY"}
    o = doc["options"][0]
    assert any("converted from CNY at 0.14" in a for a in o["assumptions"])
    assert (
        "storage" in o["unknown_costs"] or "boot_disk" in o["unknown_costs"]
    )  # China rates not in the table


def test_nothing_qualifies_exits_1_and_says_what_to_relax(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", TIGHT])
    err = capsys.readouterr().err
    assert code == 1
    assert "budget_usd removed the most" in err
    assert "raising budget_usd to $" in err and "would allow" in err


def test_prototype_is_one_gpu_and_says_what_the_smoke_test_is(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, LORA, "--phase", "prototype", "--top", "50")
    assert doc["phase"] == "prototype"
    assert "smoke test = 200 steps at micro batch 1" in doc["notes"][0]
    assert all(o["gpus_per_node"] * o["nodes"] == 1 for o in doc["options"])
    _, full = run_json(capsys, LORA, "--top", "1")
    assert doc["options"][0]["cost_usd"] < full["options"][0]["cost_usd"] * 10


def test_table_output_has_costs_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LORA, "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "top 5 choices by cost" in out
    lines = out.splitlines()
    # the three picks lead, each one line with cost, hours and why, before the table
    assert [line.split()[0] for line in lines[1:4]] == ["cheapest", "balanced", "fastest"]
    assert all(" — " in line and "$" in line for line in lines[1:4])
    assert "$" in out
    assert "Availability is not known" in out


def test_html_is_written_atomically(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "plan.html"
    assert main(["plan", LORA, "--html", str(target), "--top", "3"]) == 0
    page = target.read_text(encoding="utf-8")
    assert 'id="cost-time-chart"' in page
    assert [p.name for p in tmp_path.iterdir()] == ["plan.html"]  # no temp file left behind
    assert target.stat().st_mode & 0o044  # readable like any file the user writes, not mkstemp's 0600


def test_calibration_changes_the_calibrated_generation_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A bench result measured on an H100 (here: a slow one) must reach the estimates the plan ranks: the
    H100's directly, the H200's (same Hopper generation) by the measured ratio, the A100's not at all."""
    text = (FIXTURES / "llama3-8b-lora.toml").read_text(encoding="utf-8")
    path = tmp_path / "h.toml"
    path.write_text(text + '\n[constraints]\ngpus = ["H100", "H200", "A100-80GB"]\n', encoding="utf-8")

    def hours(*extra: str) -> dict[tuple[str, str, str], float]:
        _, doc = run_json(capsys, str(path), "--top", "1000", *extra)
        return {(o["gpu"], o["provider"], o["instance_type"]): o["hours"] for o in doc["options"]}

    plain = hours()
    slow = hours("--calibration", str(FIXTURES / "bench-h100-slow.json"))
    both = set(plain) & set(slow)
    assert {k[0] for k in both} == {"H100", "H200", "A100-80GB"}
    assert all(slow[k] > plain[k] for k in both if k[0] in ("H100", "H200"))
    assert all(slow[k] == plain[k] for k in both if k[0] == "A100-80GB")


@pytest.mark.parametrize(
    "args",
    [
        ["--objective", "price"],
        ["--phase", "production"],
        ["--exchange-rate", "CNY"],
        ["--exchange-rate", "CNY=-1"],
        ["--spot-interruptions-per-hour", "often"],
        ["--top", "0"],
        ["--calibration", "/nonexistent/bench.json"],
    ],
)
def test_bad_options_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    assert main(["plan", LORA, *args]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_misspelt_provider_exits_2_with_a_close_match(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (FIXTURES / "llama3-8b-lora.toml").read_text(encoding="utf-8")
    path = tmp_path / "p.toml"
    path.write_text(text + '\n[constraints]\nproviders = ["lamda"]\n', encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    assert "Did you mean 'lambda'" in capsys.readouterr().err


def test_missing_workload_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["plan", str(tmp_path / "nope.toml")]) == 2


def test_plan_without_html_does_not_import_plotly() -> None:
    """Start-up cost: plotly (~1 s to import) only for --html."""
    code = (
        "import sys\nfrom gpuwise.cli.main import main\n"
        f"rc = main(['plan', {LORA!r}, '--json'])\n"
        "print('PLOTLY' if 'plotly' in sys.modules else 'NO-PLOTLY', rc, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stderr.strip().splitlines()[-1] == "NO-PLOTLY 0"


def test_undated_price_sources_never_look_dated(capsys: pytest.CaptureFixture[str]) -> None:
    """A provider whose file carries no date of its own shows its collection date as such, in JSON and
    text: AWS and Azure prices are dated by their sources, Lambda's SkyPilot file is not."""
    _, doc = run_json(capsys, LORA, "--top", "2")
    exact = doc["catalog"]["sources_date_exact"]
    assert set(exact) == set(doc["catalog"]["sources"])
    assert exact["aws"] is True and exact["lambda"] is False
    assert main(["plan", LORA, "--top", "2"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "date unknown (collected" in text
    assert "aws 2026-01-21" in text
