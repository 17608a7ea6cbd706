"""Serving latency targets in `plan`: `[constraints] max_latency_s` / `max_ttft_s` reject slower
configurations under their own reason ids, and the nothing-qualifies answer says what target would admit
them. The planner core is driven with a fake estimator; one end-to-end run uses the 2-second example."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from plan_fakes import TODAY, FakeEstimator, offer

from gpuwise.cli.main import main
from gpuwise.estimate.models import Estimate
from gpuwise.estimate.serving import Latency
from gpuwise.plan.models import Constraints, DataNeeds, Settings
from gpuwise.plan.planner import plan
from gpuwise.plan.startup import StartupRates

REPO = Path(__file__).resolve().parents[2]
NO_STARTUP = StartupRates("*", 0.0, 0.0, math.inf, math.inf, 0.0, "test: no start-up")
# GPU -> (request_s, ttft_s) of one serving request on it
SPEED = {"H100": (1.5, 0.2), "A100-80GB": (2.6, 0.4), "L40S": (4.1, 0.9)}


class ServingEstimator(FakeEstimator):
    """The fake estimate with a serving latency per GPU (the same at every count: one replica's figure)."""

    def __call__(self, gpu: str, count: int, nodes: int) -> Estimate | None:
        est = super().__call__(gpu, count, nodes)
        if est is None:
            return None
        request_s, ttft_s = SPEED[gpu]
        return replace(est, latency=Latency(8, "continuous", ttft_s, (request_s - ttft_s) / 99, request_s))


OFFERS = [
    offer(gpu="H100", price=3.0),
    offer(gpu="A100-80GB", instance_type="gpu_1x_a100", price=1.8),
    offer(gpu="L40S", instance_type="gpu_1x_l40s", price=1.0),
]


def _plan(constraints: Constraints):  # type: ignore[no-untyped-def]
    return plan(
        OFFERS,
        ServingEstimator(),
        constraints=constraints,
        data=DataNeeds(),
        settings=Settings(today=TODAY, startup_overrides={"*": NO_STARTUP}),
    )


def test_latency_target_rejects_slower_gpus_under_its_own_reason() -> None:
    result = _plan(Constraints(max_latency_s=2.0))
    assert [o.gpu for o in result.options] == ["H100"]
    assert result.rejected == {"over_latency": 2}
    assert result.options[0].latency == {"ttft_s": 0.2, "tpot_s": pytest.approx(1.3 / 99), "request_s": 1.5}


def test_ttft_target_is_checked_apart() -> None:
    result = _plan(Constraints(max_ttft_s=0.5))
    assert sorted(o.gpu for o in result.options) == ["A100-80GB", "H100"]
    assert result.rejected == {"over_ttft": 1}


def test_without_targets_latency_constrains_nothing() -> None:
    assert len(_plan(Constraints()).options) == 3


def test_nothing_qualifies_says_which_latency_would_admit_options() -> None:
    result = _plan(Constraints(max_latency_s=1.0))
    assert not result.options
    (relax,) = result.relaxations
    assert relax.constraint == "max_latency_s"
    assert relax.suggestion == "raising max_latency_s to 1.5 s would allow 1 option, to 4.1 s all 3"


def test_a_configuration_missing_two_targets_is_counted_once_and_not_offered_as_one_relaxation() -> None:
    result = _plan(Constraints(max_latency_s=1.0, max_ttft_s=0.1))
    assert result.rejected == {"over_latency": 3}
    assert result.relaxations == ()


def test_the_2s_chat_example_plans_only_configurations_that_meet_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """End to end on the bundled catalog: every option meets the file's 2 s and 0.5 s targets, says its
    latency and its price per 1M output tokens, and the slower configurations are counted as rejected."""
    assert main(["plan", str(REPO / "examples/llama3-70b-chat-2s.toml"), "--json", "--top", "50"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["workload"]["constraints"]["max_latency_s"] == 2.0
    assert doc["rejected"].get("over_latency", 0) > 0
    assert doc["options"]
    for o in doc["options"]:
        assert o["latency"]["request_s"] <= 2.0
        assert o["latency"]["ttft_s"] <= 0.5
        assert o["usd_per_1m_output_tokens"] == pytest.approx(o["cost_per_unit_usd"]["per 1M output tokens"])
        assert o["usd_per_1m_output_tokens"] > 0


def test_prototype_phase_is_not_held_to_the_services_latency_targets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The smoke test runs one request at a time on one GPU (3 s per 100-token answer for a 70B model on
    one H100): holding it to the service's 2 s would reject every single GPU and plan nothing."""
    example = str(REPO / "examples/llama3-70b-chat-2s.toml")
    assert main(["plan", example, "--phase", "prototype", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["options"]
    assert "over_latency" not in doc["rejected"]
    assert any("latency targets apply to the service" in a for a in doc["notes"])


def test_table_and_pick_show_what_one_request_sees(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(REPO / "examples/llama3-70b-chat-2s.toml")
    assert main(["plan", example, "--top", "2"]) == 0
    table = capsys.readouterr().out
    assert "s/req" in table
    assert "TTFT" in table
    assert main(["plan", example, "--pick", "1"]) == 0
    assert "per request: first token" in capsys.readouterr().out
