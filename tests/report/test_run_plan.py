"""`gpuwise run --plan PLAN.json`: the chosen option's planned hours and cost are kept with the run, so the
report can set them against the actual ones; a bad plan file is bad input before anything starts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gpuwise import paths
from gpuwise.cli.main import main
from gpuwise.errors import ConfigError
from gpuwise.run.planref import planned_from_plan


def _plan() -> dict[str, Any]:
    """The parts of `gpuwise plan --json` a run reads: two options, the picks and the workload."""
    option = {"provider": "aws", "instance_type": "p4d.24xlarge", "pricing": "on_demand", "currency": "USD"}
    return {
        "workload": {"name": "llama-lora", "task": "finetune"},
        "options": [
            {**option, "gpu": "A100-80GB", "gpus_per_node": 8, "nodes": 1, "hours": 2.5, "cost_usd": 82.0},
            {**option, "gpu": "H100", "gpus_per_node": 4, "nodes": 2, "hours": 1.5, "cost_usd": 99.0},
        ],
        "picks": {"cheapest": 0, "fastest": 1, "balanced": 0},
    }


def test_the_pick_or_row_chosen() -> None:
    balanced = planned_from_plan(_plan(), "balanced", "plan.json")
    assert (balanced.gpu, balanced.gpus, balanced.planned_hours, balanced.planned_cost_usd) == (
        "A100-80GB", 8, 2.5, 82.0,
    )  # fmt: skip
    assert (balanced.task, balanced.workload) == ("finetune", "llama-lora")
    fastest = planned_from_plan(_plan(), "fastest", "plan.json")
    assert (fastest.gpu, fastest.gpus) == ("H100", 8)  # 4 per node x 2 nodes
    assert planned_from_plan(_plan(), "2", "plan.json").gpu == "H100"


def test_a_plan_in_another_currency_has_no_usd_cost() -> None:
    plan = _plan()
    plan["options"][0]["currency"] = "CNY"
    assert planned_from_plan(plan, "1", "plan.json").planned_cost_usd is None  # never converted


@pytest.mark.parametrize(
    ("data", "pick", "message"),
    [
        ({"options": []}, "balanced", "not a plan with options"),
        ([1, 2], "balanced", "not a plan with options"),
        (_plan(), "7", r"has 2 option\(s\)"),
        (_plan(), "best", "neither a pick nor a row number"),
        ({**_plan(), "picks": {}}, "cheapest", "has no cheapest pick"),
        ({**_plan(), "options": [{"gpu": "H100", "hours": "soon"}]}, "1", "no hours or GPU"),
        ({**_plan(), "options": [{"gpu": "H100", "hours": 1.0}]}, "1", "no GPU count"),
    ],
)
def test_bad_plans_are_refused(data: Any, pick: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        planned_from_plan(data, pick, "plan.json")


def test_run_keeps_the_plan_and_the_report_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # `run` watches ./checkpoints by default: not the repository's
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_plan()), encoding="utf-8")
    args = ["run", "--preemption", "off", "--project", "p", "--plan", str(plan), "--plan-pick", "fastest"]
    assert main([*args, "--", "true"]) == 0
    with sqlite3.connect(paths.history_db()) as db:
        rows = db.execute(
            "SELECT ledger_id, plan_file, pick, task, gpu, gpus, planned_hours FROM run_plans"
        ).fetchall()
    assert rows == [(1, "plan.json", "fastest", "finetune", "H100", 8, 1.5)]
    capsys.readouterr()
    assert main(["report", "--json", "--since", "1d"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["planned_vs_actual"]["runs"]
    assert (run["gpu"], run["task"], run["planned_hours"]) == ("H100", "finetune", 1.5)
    assert run["actual_hours"] is not None and run["hours_ratio"] is not None and run["hours_ratio"] < 0.01


def test_a_bad_plan_file_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text("{not json", encoding="utf-8")
    marker = tmp_path / "ran"
    assert main(["run", "--preemption", "off", "--plan", str(bad), "--", "touch", str(marker)]) == 2
    assert "is not JSON" in capsys.readouterr().err
    assert not marker.exists() and not paths.history_db().exists()  # nothing ran, nothing recorded
    assert main(["run", "--preemption", "off", "--plan", str(tmp_path / "none.json"), "--", "true"]) == 2
    assert "none.json" in capsys.readouterr().err
