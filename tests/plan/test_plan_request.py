"""The plan room's one entry point, `gpuwise.plan.run(PlanRequest)`: what the CLI calls between parsing
its options and rendering, usable without the CLI (issue 14)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from gpuwise import plan as plan_room
from gpuwise.cli.main import main
from gpuwise.errors import NotFoundError
from gpuwise.plan.output import result_to_dict
from gpuwise.plan.request import PlanRequest

ROOT = Path(__file__).resolve().parents[2]
LORA = ROOT / "examples" / "llama3-8b-lora.toml"
TIGHT = ROOT / "tests" / "fixtures" / "plan" / "tight-budget.toml"


def test_run_gives_the_plan_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = plan_room.run(PlanRequest(workload=LORA, today=date.today(), providers=("aws", "gcp")))
    result = outcome.result
    assert outcome.workload.name == "llama3-8b-lora"
    assert result.options and {o.provider for o in result.options} <= {"aws", "gcp"}
    assert len(result.options) + sum(result.rejected.values()) == result.considered
    assert main(["plan", str(LORA), "--json", "--provider", "aws", "--provider", "gcp", "--top", "5"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ours = result_to_dict(result, outcome.workload.model_dump(mode="json"), top=5, extra={"phase": None})
    assert printed == json.loads(json.dumps(ours))


def test_run_checks_the_request_against_the_catalog_before_planning() -> None:
    with pytest.raises(NotFoundError, match="nosuch") as caught:
        plan_room.run(PlanRequest(workload=LORA, today=date(2026, 12, 1), providers=("nosuch",)))
    assert caught.value.exit_code == 2


def test_nothing_qualifies_is_an_outcome_not_an_error() -> None:
    """Only the CLI turns "nothing qualifies" into exit 1: the room answers with the reasons."""
    outcome = plan_room.run(PlanRequest(workload=TIGHT, today=date(2026, 12, 1)))
    assert not outcome.result.options
    assert outcome.result.relaxations
