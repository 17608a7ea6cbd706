"""The plan invariants with the real estimator, the bundled example workloads and the bundled catalog.

Hypothesis draws a workload (an example, with its amount of work and data scaled) and constraints; every
option must respect every constraint, cost parts add up, spot options pay for interruptions, the front is
non-empty and the order follows the objective.
"""

from __future__ import annotations

import math
from datetime import date
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpuwise.catalog.models import Offer
from gpuwise.catalog.offers import load_catalog
from gpuwise.plan import inputs
from gpuwise.plan.models import Constraints, PlanResult, Settings
from gpuwise.plan.planner import plan
from gpuwise.plan.runnable import fabric_for
from gpuwise.workload import load_workload

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml"))
PROVIDERS = ("aws", "gcp", "azure", "lambda", "nebius", "vast", "verda", "primeintellect")
GPUS = ("H100", "H200", "A100-80GB", "A100", "L40S", "L4", "A10G", "T4", "RTX4090", "B200")


@cache
def _offers() -> tuple[Offer, ...]:
    # every 4th offer: all providers and GPU families stay represented, and each example runs fast
    return load_catalog().offers[::4]


@cache
def _workload(path: Path) -> Any:
    return load_workload(path)


def test_there_are_example_workloads() -> None:
    assert len(EXAMPLES) >= 3


constraints_st = st.builds(
    Constraints,
    deadline_hours=st.none() | st.floats(min_value=0.5, max_value=2000),
    budget_usd=st.none() | st.floats(min_value=1, max_value=50_000),
    interruptible=st.booleans(),
    providers=st.none() | st.lists(st.sampled_from(PROVIDERS), min_size=1, max_size=4).map(tuple),
    regions=st.none() | st.lists(st.sampled_from(("us-*", "eu*", "*east*", "asia*")), min_size=1).map(tuple),
    gpus=st.none() | st.lists(st.sampled_from(GPUS), min_size=1, max_size=4).map(tuple),
    max_gpus=st.none() | st.integers(min_value=1, max_value=16),
    max_nodes=st.integers(min_value=1, max_value=2),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    index=st.integers(min_value=0, max_value=100),
    constraints=constraints_st,
    objective=st.sampled_from(("cost", "time", "balanced")),
    data_scale=st.floats(min_value=0, max_value=50),
    prototype=st.booleans(),
)
def test_real_plans_keep_every_invariant(
    *, index: int, constraints: Constraints, objective: str, data_scale: float, prototype: bool
) -> None:
    work = _workload(EXAMPLES[index % len(EXAMPLES)])
    work = work.model_copy(
        update={
            "data": work.data.model_copy(
                update={"dataset_gb": 10 * data_scale, "egress_gb": data_scale, "checkpoint_every_hours": 0.5}
            )
        }
    )
    target = inputs.smoke_workload(work)[0] if prototype else work
    result = plan(
        _offers(),
        inputs.make_estimator(target),
        constraints=constraints,
        data=inputs.data_needs_from(work, smoke=prototype),
        settings=Settings(
            today=date(2026, 11, 30),
            objective=objective,
            single_gpu_only=prototype,
            service_hours=None if prototype else inputs.service_hours_from(work),
        ),
        spot_lookup=inputs.aws_spot_advisor_lookup,
        runnable=inputs.make_runnable(target),
    )
    opts = result.options
    event("some options qualify" if opts else "nothing qualifies")
    assert result.considered == len(opts) + sum(result.rejected.values())
    for o in opts:
        c = constraints
        assert c.deadline_hours is None or o.hours <= c.deadline_hours
        assert c.budget_usd is None or o.cost_usd <= c.budget_usd
        assert c.interruptible or o.pricing != "spot"
        assert c.providers is None or o.provider in c.providers
        assert c.regions is None or any(fnmatchcase(o.region.lower(), p.lower()) for p in c.regions)
        assert c.gpus is None or o.gpu in c.gpus
        assert c.max_gpus is None or o.gpus_per_node * o.nodes <= c.max_gpus
        assert o.nodes <= c.max_nodes
        assert o.currency == "USD"  # no exchange rate given
        assert o.fits and o.memory_per_gpu_gib <= o.memory_capacity_gib
        if prototype:
            assert o.gpus_per_node * o.nodes == 1
        parts = o.cost_breakdown_usd
        assert math.isclose(sum(parts.values()), o.cost_usd, rel_tol=1e-12, abs_tol=1e-9)
        assert (parts["interruption_overhead"] > 0) == (o.pricing == "spot")
        assert parts["startup"] > 0  # every hour paid: boot, set-up, downloads, upload
        if o.nodes > 1:  # only where the instances share a fabric, and it is named
            assert o.interconnect and fabric_for(o.provider, o.instance_type) is not None
        if o.gpu in NO_BF16 and "bf16" in (getattr(target.train, "precision", None), _weights(target)):
            assert o.dtype_fallback == "fp16"
            assert any("costed as fp16" in a or "served as fp16" in a for a in o.assumptions)
    if opts:
        assert any(o.pareto for o in opts)
        key = {
            "cost": lambda o: o.cost_usd,
            "time": lambda o: o.hours,
            "balanced": lambda o: o.cost_usd * o.hours,
        }[objective]
        assert [key(o) for o in opts] == sorted(key(o) for o in opts)
        check_picks(result)
    else:
        assert result.picks == {}


NO_BF16 = frozenset({"V100", "V100-32GB", "T4", "P100", "K80", "P4", "M60"})


def _weights(work: Any) -> str | None:
    return None if work.inference is None else str(work.inference.weights_precision)


def check_picks(result: PlanResult) -> None:
    """The Done-when lines of issue 12: picks exist, balanced is on the front, and no headline pick is more
    than 10× slower than the fastest option costing at most 1.5× as much."""
    opts = list(result.options)
    assert set(result.picks) == {"cheapest", "fastest", "balanced"}
    assert opts[result.picks["balanced"]].pareto
    for rank in result.picks.values():
        pick = opts[rank]
        near = min(o.hours for o in opts if o.cost_usd <= 1.5 * pick.cost_usd * (1 + 1e-12))
        assert pick.hours <= 10 * near * (1 + 1e-9)
    assert opts[result.picks["fastest"]].hours == min(o.hours for o in opts)
