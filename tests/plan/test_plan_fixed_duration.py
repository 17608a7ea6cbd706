"""A service planned for a fixed duration: every option runs the same hours, so "fastest" and "balanced"
name a tie. The answer says so and names only the cheapest; --json keeps every pick key and says
`same_hours`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVING = str(EXAMPLES / "llama3-70b-serving.toml")  # duration_hours = 720


def test_a_fixed_duration_service_names_no_fastest_pick(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", SERVING, "--top", "3"]) == 0
    out = capsys.readouterr().out
    head = out.split("top 3 choices")[0]
    assert "cheapest" in head and "fixed duration" in head
    assert "fastest" not in head and "balanced" not in head
    assert "CBF" not in out and "CFB" not in out


def test_json_keeps_the_picks_and_says_same_hours(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", SERVING, "--top", "3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["picks"]) == {"cheapest", "fastest", "balanced"}
    assert doc["same_hours"] is True
    assert main(["plan", str(EXAMPLES / "llama3-8b-lora.toml"), "--top", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["same_hours"] is False


def test_same_hours_reads_the_planners_numbers_not_every_option() -> None:
    """Deciding whether every option takes the same hours built every option (1.3 s of a 36k-offer plan
    whose planner took 0.3 s): it reads the span the planner kept."""
    from datetime import date

    from gpuwise.plan.models import PlanResult
    from gpuwise.plan.options import OptionList
    from gpuwise.plan.output import same_hours

    def never(i: int) -> object:
        raise AssertionError(f"option {i} was built")

    def result(span: tuple[float, float]) -> PlanResult:
        options = OptionList(list(range(5000)), never)  # type: ignore[arg-type]
        return PlanResult(options, 5000, {}, (), {"aws": date(2026, 1, 1)}, (), "cost", hours_span=span)

    assert same_hours(result((720.0, 720.0))) is True
    assert same_hours(result((1.0, 2.0))) is False
