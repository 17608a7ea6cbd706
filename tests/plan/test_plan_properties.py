"""Invariants of a plan over random offers, workloads and constraints (hypothesis).

Guards: a plan never breaks a hard constraint; cost parts add up; spot options carry an interruption
overhead; a non-empty plan has a Pareto option and the front is exactly the non-dominated set; the order
follows the objective; every configuration is counted once; folding regions keeps every option, the
rank order and the Pareto flag, and a top N holds N distinct choices.
"""

from __future__ import annotations

import math
from fnmatch import fnmatchcase

from hypothesis import given, settings
from hypothesis import strategies as st
from plan_fakes import GPUS, TODAY, FakeEstimator, offer

from gpuwise.plan.models import Constraints, DataNeeds, Settings
from gpuwise.plan.output import group_options
from gpuwise.plan.planner import plan

PROVIDERS = ("aws", "gcp", "azure", "lambda", "nebius", "vast", "cudo", "shadeform")
REGIONS = ("us-east-1", "us-central1", "europe-west4", "eu-west-1", "asia-east1", "cn-north-1")
GPU_NAMES = (*GPUS, "MI300X")


@st.composite
def offers(draw: st.DrawFn) -> list:  # type: ignore[type-arg]
    n = draw(st.integers(min_value=1, max_value=25))
    out = []
    for i in range(n):
        region = draw(st.sampled_from(REGIONS))
        price = draw(st.none() | st.floats(min_value=0.05, max_value=120))
        spot = draw(st.none() | st.floats(min_value=0.02, max_value=60))
        out.append(
            offer(
                provider=draw(st.sampled_from(PROVIDERS)),
                instance_type=f"type-{i}",
                region=region,
                gpu=draw(st.sampled_from(GPU_NAMES)),
                gpus=draw(st.sampled_from((0.5, 1, 1, 2, 4, 8))),
                price=price,
                spot=spot,
                currency="CNY" if region.startswith("cn-") else "USD",
                gpu_only_price=draw(st.booleans()),
            )
        )
    return out


constraints_st = st.builds(
    Constraints,
    deadline_hours=st.none() | st.floats(min_value=0.5, max_value=500),
    budget_usd=st.none() | st.floats(min_value=1, max_value=5000),
    interruptible=st.booleans(),
    providers=st.none() | st.lists(st.sampled_from(PROVIDERS), min_size=1, max_size=4).map(tuple),
    regions=st.none()
    | st.lists(st.sampled_from(("us-*", "eu*", "*-east*", "asia-*")), min_size=1).map(tuple),
    gpus=st.none() | st.lists(st.sampled_from(GPU_NAMES), min_size=1, max_size=3).map(tuple),
    max_gpus=st.none() | st.integers(min_value=1, max_value=32),
    max_nodes=st.integers(min_value=1, max_value=3),
)

data_st = st.builds(
    DataNeeds,
    dataset_gb=st.floats(min_value=0, max_value=5000),
    checkpoint_gb=st.floats(min_value=0, max_value=500),
    checkpoints_kept=st.integers(min_value=1, max_value=3),
    checkpoint_every_hours=st.floats(min_value=0.1, max_value=12),
    egress_gb=st.floats(min_value=0, max_value=2000),
)

workload_st = st.tuples(st.floats(min_value=0.01, max_value=2000), st.floats(min_value=1, max_value=150))


@settings(max_examples=150, deadline=None)
@given(
    offer_list=offers(),
    constraints=constraints_st,
    data=data_st,
    workload=workload_st,
    objective=st.sampled_from(("cost", "time")),
    with_fx=st.booleans(),
    spot_rate=st.none() | st.floats(min_value=0.05, max_value=0.5),
)
def test_plan_invariants(  # type: ignore[no-untyped-def]
    *, offer_list, constraints, data, workload, objective, with_fx, spot_rate
) -> None:
    work, need = workload
    result = plan(
        offer_list,
        FakeEstimator(work_gpu_hours=work, need_gib=need),
        constraints=constraints,
        data=data,
        settings=Settings(
            today=TODAY,
            objective=objective,
            exchange_rates={"CNY": 0.14} if with_fx else {},
            spot_rate_overrides={} if spot_rate is None else {"*": spot_rate},
        ),
    )
    opts = result.options
    assert result.considered == len(opts) + sum(result.rejected.values())
    for o in opts:
        # every constraint holds
        if constraints.deadline_hours is not None:
            assert o.hours <= constraints.deadline_hours
        if constraints.budget_usd is not None:
            assert o.cost_usd <= constraints.budget_usd
        if not constraints.interruptible:
            assert o.pricing != "spot"
        if constraints.providers is not None:
            assert o.provider in constraints.providers
        if constraints.regions is not None:
            assert any(fnmatchcase(o.region.lower(), p.lower()) for p in constraints.regions)
        if constraints.gpus is not None:
            assert o.gpu in constraints.gpus
        if constraints.max_gpus is not None:
            assert o.gpus_per_node * o.nodes <= constraints.max_gpus
        assert 1 <= o.nodes <= constraints.max_nodes
        assert o.fits
        if o.currency != "USD":
            assert with_fx
        # cost parts add up, are non-negative, and spot pays for interruptions
        parts = o.cost_breakdown_usd
        assert math.isclose(sum(parts.values()), o.cost_usd, rel_tol=1e-12, abs_tol=1e-9)
        assert all(v >= 0 for v in parts.values())
        if o.pricing == "spot":
            assert parts["interruption_overhead"] > 0
            assert o.expected_interruptions > 0
        else:
            assert parts["interruption_overhead"] == 0
    if opts:
        assert any(o.pareto for o in opts)
        # the front is exactly the non-dominated set (brute force)
        for o in opts:
            dominated = any(
                p.cost_usd <= o.cost_usd
                and p.hours <= o.hours
                and (p.cost_usd < o.cost_usd or p.hours < o.hours)
                for p in opts
            )
            assert o.pareto == (not dominated)
        key = (lambda o: o.cost_usd) if objective == "cost" else (lambda o: o.hours)
        values = [key(o) for o in opts]
        assert values == sorted(values)
    # region groups: every option in exactly one group, same numbers and Pareto flag in a group,
    # groups in rank order, and a limit cuts choices, not regions
    groups = group_options(opts)
    assert sum(len(g.regions) for g in groups) <= len(opts)
    for o in opts:
        home = [
            g for g in groups if g.option.instance_type == o.instance_type and g.option.pricing == o.pricing
        ]
        assert any(o.region in g.regions and g.option.nodes == o.nodes for g in home)
    for g in groups:
        twins = [o for o in opts if o.instance_type == g.option.instance_type and o.region in g.regions]
        assert all(t.pareto == g.option.pareto for t in twins if t.cost_usd == g.option.cost_usd)
    firsts = [key(g.option) for g in groups] if opts else []
    assert firsts == sorted(firsts)
    for limit in (1, 3):
        cut = group_options(opts, limit)
        assert [g.option for g in cut] == [g.option for g in groups[:limit]]


@settings(max_examples=60, deadline=None)
@given(
    work=st.floats(min_value=0.05, max_value=500),
    longer=st.floats(min_value=1.01, max_value=10),
    rate=st.floats(min_value=0.001, max_value=0.5),
    higher=st.floats(min_value=1.01, max_value=10),
    checkpoint_every=st.floats(min_value=0.1, max_value=12),
)
def test_spot_overhead_grows_with_run_length_and_rate(
    work: float, longer: float, rate: float, higher: float, checkpoint_every: float
) -> None:
    def overhead(work_gpu_hours: float, per_hour: float) -> tuple[float, float]:
        result = plan(
            [offer(provider="gcp", price=None, spot=1.5)],
            FakeEstimator(work_gpu_hours=work_gpu_hours, need_gib=10),
            constraints=Constraints(),
            data=DataNeeds(checkpoint_every_hours=checkpoint_every),
            settings=Settings(today=TODAY, spot_rate_overrides={"gcp": per_hour}),
        )
        (o,) = result.options
        assert o.pricing == "spot"
        return o.cost_breakdown_usd["interruption_overhead"], o.expected_interruptions

    base, base_n = overhead(work, rate)
    assert base > 0
    longer_run, longer_n = overhead(work * longer, rate)
    assert longer_run > base and longer_n > base_n
    more_often, more_n = overhead(work, rate * higher)
    assert more_often > base and more_n > base_n
