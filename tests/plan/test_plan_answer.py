"""`plan`'s first answer is one a user can act on (issue 12): picks, runnable options, start-up, reservations,
per-unit costs, readable small numbers and honest failure — on constructed catalogs and the fake estimator."""

from __future__ import annotations

import math
from dataclasses import replace as dataclass_replace
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_fakes import TODAY, FakeEstimator, offer

from gpuwise.catalog.reserved import ReservedRate, reserved_from_vantage
from gpuwise.estimate.models import Estimate
from gpuwise.plan.models import Constraints, DataNeeds, Settings
from gpuwise.plan.output import hours_text, money, result_to_dict
from gpuwise.plan.picks import SIMILAR_COST, SLOWER_LIMIT, choose_picks, pareto_flags
from gpuwise.plan.planner import plan
from gpuwise.plan.runnable import DtypeNeeds, Verdict, fabric_for, gpu_formats, verdict
from gpuwise.plan.startup import StartupRates

NO_STARTUP = StartupRates("*", 0.0, 0.0, math.inf, math.inf, 0.0, "test: no start-up")
FORMATS = {  # name -> (architecture, compute capability)
    "H100": ("Hopper", "9.0"),
    "A100-80GB": ("Ampere", "8.0"),
    "A100": ("Ampere", "8.0"),
    "L4": ("Ada Lovelace", "8.9"),
    "T4": ("Turing", "7.5"),
    "L40S": ("Ada Lovelace", "8.9"),
}


def runnable(needs: DtypeNeeds):  # type: ignore[no-untyped-def]
    def call(gpu: str) -> Verdict:
        arch, cc = FORMATS[gpu]
        return verdict(needs, gpu_formats(gpu, arch, cc, None, None))

    return call


def run(offers, *, constraints=None, data=None, estimator=None, runnable=None, reserved=None, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("startup_overrides", {"*": NO_STARTUP})
    return plan(
        offers,
        estimator or FakeEstimator(),
        constraints=constraints or Constraints(),
        data=data or DataNeeds(),
        settings=Settings(today=TODAY, **kw),
        runnable=runnable,
        reserved_lookup=reserved,
    )


# ------------------------------------------------------------------------------------------ picks


def test_a_far_slower_option_of_similar_cost_is_not_the_cheapest_pick() -> None:
    """Guards a 62-day run on one old GPU heading the plan beside a day-long run at a similar price."""
    est = FakeEstimator(work_gpu_hours=100.0, need_gib=10)  # T4: 667 h; 8×H100: 6.3 h
    offers = [
        offer(provider="aws", instance_type="slow", gpu="T4", price=0.05),  # $33 for 667 h
        offer(provider="aws", instance_type="p5.48xlarge", gpu="H100", gpus=8, price=6.0),  # $38 for 6.3 h
        offer(provider="aws", instance_type="mid", gpu="L4", price=0.30),  # $75 for 250 h
    ]
    result = run(offers, estimator=est)
    opts = list(result.options)
    assert opts[0].instance_type == "slow"  # the table still ranks by cost
    assert not opts[0].worth_renting
    cheapest = opts[result.picks["cheapest"]]
    assert cheapest.instance_type == "p5.48xlarge"
    assert result.passed_over == (0, result.picks["cheapest"])
    assert opts[result.picks["balanced"]].pareto
    doc = result_to_dict(result, {}, top=1)
    assert set(doc["picks"]) == {"cheapest", "fastest", "balanced"}
    # the picked options are kept past --top 1, and the indices point at them
    assert doc["options"][doc["picks"]["cheapest"]]["instance_type"] == "p5.48xlarge"


def test_balanced_is_the_front_option_with_the_smallest_cost_times_hours() -> None:
    points = [(10.0, 100.0), (12.0, 20.0), (30.0, 10.0), (100.0, 9.0)]
    picks = choose_picks(points, pareto_flags(points))
    assert (picks.cheapest, picks.fastest, picks.balanced) == (0, 3, 1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(min_value=0.01, max_value=1e5), st.floats(min_value=0.01, max_value=1e5)),
        min_size=1,
        max_size=40,
    )
)
def test_picks_hold_their_rules_on_any_points(points: list[tuple[float, float]]) -> None:
    pareto = pareto_flags(points)
    picks = choose_picks(points, pareto)
    assert picks.balanced is not None and pareto[picks.balanced]
    assert picks.cheapest is not None and pareto[picks.cheapest]
    for i in (picks.cheapest, picks.fastest, picks.balanced):
        assert i is not None
        cost, hours = points[i]
        near = min(h for c, h in points if c <= cost * SIMILAR_COST * (1 + 1e-12))
        assert hours <= SLOWER_LIMIT * near * (1 + 1e-9) <= 10 * near * (1 + 1e-9)
    assert points[picks.fastest][1] == min(h for _, h in points)


def test_objective_balanced_ranks_by_cost_times_hours() -> None:
    offers = [
        offer(instance_type=f"x{i}", gpu=g, price=p) for i, (g, p) in enumerate([("T4", 0.2), ("H100", 3)])
    ]
    result = run(offers, objective="balanced")
    keys = [o.cost_usd * o.hours for o in result.options]
    assert keys == sorted(keys)


# ------------------------------------------------------------------------------ runnable options


def test_bf16_on_a_gpu_without_it_is_costed_as_fp16_with_the_fallback_stated() -> None:
    needs = DtypeNeeds(dtype="bf16")
    offers = [offer(gpu="T4", instance_type="t4"), offer(gpu="H100")]
    result = run(offers, runnable=runnable(needs), estimator=FakeEstimator(need_gib=10))
    by = {o.gpu: o for o in result.options}
    assert by["T4"].dtype_fallback == "fp16"
    assert any("loss scaling" in a for a in by["T4"].assumptions)
    assert by["H100"].dtype_fallback is None


def test_pure_bf16_and_fp8_are_rejected_where_the_gpu_lacks_them() -> None:
    pure_needs = DtypeNeeds(dtype="bf16", pure_low_precision=True)
    pure = run([offer(gpu="T4")], runnable=runnable(pure_needs), estimator=FakeEstimator(need_gib=10))
    assert pure.options == () and pure.rejected == {"dtype": 1}
    assert "bf16" in pure.dtype_why["T4"]
    assert pure.blocked == {("dtype", "T4"): 1}
    fp8 = run([offer(gpu="A100"), offer(gpu="H100")], runnable=runnable(DtypeNeeds(dtype="fp8")))
    assert [o.gpu for o in fp8.options] == ["H100"]
    assert fp8.rejected == {"dtype": 1}


def test_flash_attention_2_asked_for_rejects_pre_ampere() -> None:
    needs = DtypeNeeds(dtype="fp16", flash_attention_2=True)
    assert not verdict(needs, gpu_formats("T4", "Turing", "7.5", None, None)).runs
    assert verdict(needs, gpu_formats("A100", "Ampere", "8.0", None, None)).runs


def test_no_multi_node_option_from_single_marketplace_vms() -> None:
    """Guards sixteen separate 4×V100 marketplace VMs priced as one 16-node cluster."""
    offers = [
        offer(provider="vast", instance_type="4x-V100", gpu="T4", gpus=4, price=0.8),
        offer(provider="aws", instance_type="p5.48xlarge", gpu="H100", gpus=8, price=30),
    ]
    result = run(offers, constraints=Constraints(max_nodes=16))
    multi = [o for o in result.options if o.nodes > 1]
    assert multi and all(o.provider == "aws" for o in multi)
    assert all(o.interconnect and "EFA" in o.interconnect for o in multi)
    assert any("EFA" in a for a in multi[0].assumptions)
    assert result.rejected["no_fabric"] == 15
    assert fabric_for("lambda", "gpu_8x_h100_sxm5") is None
    assert fabric_for("azure", "Standard_ND96isr_H100_v5") is not None


def test_a_multi_node_estimate_gets_the_instances_own_network() -> None:
    """The estimator learned per-instance bandwidth (EFA, InfiniBand, 25 Gigabit); plan must hand it over."""
    calls: list[tuple[str, int, int, float | None]] = []

    class NetworkAware(FakeEstimator):
        def __call__(
            self, gpu: str, count: int, nodes: int, network_gbps: float | None = None
        ) -> Estimate | None:  # type: ignore[override]
            calls.append((gpu, count, nodes, network_gbps))
            return super().__call__(gpu, count, nodes)

    offers = [offer(provider="aws", instance_type="p5.48xlarge", gpu="H100", gpus=8, price=30)]
    plan(
        offers,
        NetworkAware(),
        constraints=Constraints(max_nodes=2),
        data=DataNeeds(),
        settings=Settings(today=TODAY, startup_overrides={"*": NO_STARTUP}),
        network_lookup=lambda _provider, itype: 3200.0 if itype == "p5.48xlarge" else None,
    )
    assert ("H100", 8, 1, None) in calls  # one node: no inter-node traffic to size
    assert ("H100", 16, 2, 3200.0) in calls


# ---------------------------------------------------------------------------------------- start-up


def test_startup_part_from_a_provider_with_known_network_rate_and_image_size() -> None:
    rates = StartupRates("testcloud", 6.0, 0.0, 8.0, 4.0, 36.0, "test provider")
    data = DataNeeds(dataset_gb=54.0, model_download_gb=0.0, final_upload_gb=18.0)
    result = run([offer(provider="testcloud", price=3.6)], data=data, startup_overrides={"testcloud": rates})
    (o,) = result.options
    # 6 min boot + (36 + 54) GB at 8 Gbps (1 GB/s) = 90 s + 18 GB at 4 Gbps (0.5 GB/s) = 36 s
    expected_h = 0.1 + 90 / 3600 + 36 / 3600
    assert o.startup_hours == pytest.approx(expected_h)
    assert o.cost_breakdown_usd["startup"] == pytest.approx(3.6 * expected_h)
    assert o.hours == pytest.approx(10 / 3.0 + expected_h)
    assert math.isclose(sum(o.cost_breakdown_usd.values()), o.cost_usd)
    assert any("boot 6 min" in a and "at 8 Gbps" in a for a in o.assumptions)


# ---------------------------------------------------------------------------------------- reserved


def _reservation(rate: float) -> ReservedRate:
    return ReservedRate("aws", "p5.48xlarge", "us-east-1", 12, rate, 0.0, "1-year test RI", "test", TODAY)


def test_reservation_costs_the_whole_commitment_with_its_break_even() -> None:
    p5 = offer(provider="aws", instance_type="p5.48xlarge", gpu="H100", gpus=8, price=40.0)
    est = FakeEstimator(work_gpu_hours=6000 * 3.0 * 8 * 0.9**7)  # 8×H100 (speed 3) busy 6,000 h
    res = run([p5], estimator=est, commitment_months=12, reserved=lambda _o: _reservation(25.0))
    reserved = [o for o in res.options if o.pricing == "reserved"]
    (r,) = reserved
    assert r.commitment_usd == pytest.approx(25.0 * 8760)
    assert r.cost_breakdown_usd["compute"] + r.cost_breakdown_usd["startup"] == pytest.approx(25.0 * 8760)
    assert r.break_even_hours_per_month == pytest.approx(25.0 * 730 / 40.0)
    assert any("beats on-demand above 456 busy hours a month" in a for a in r.assumptions)
    without = run([p5], estimator=est, reserved=lambda _o: _reservation(25.0))
    assert all(o.pricing != "reserved" for o in without.options)


def test_a_run_longer_than_the_commitment_is_not_a_reservation() -> None:
    p5 = offer(provider="aws", instance_type="p5.48xlarge", gpu="H100", gpus=8, price=40.0)
    est = FakeEstimator(work_gpu_hours=20000 * 3.0 * 8 * 0.9**7)  # 20,000 h on 8×H100
    res = run([p5], estimator=est, commitment_months=12, reserved=lambda _o: _reservation(25.0))
    assert res.rejected.get("over_commitment") == 1


def test_reserved_rates_are_read_from_the_vantage_records() -> None:
    rates = reserved_from_vantage(
        [{"name": "p4d.24xlarge", "pricing": {"us-east-1": {"onDemand": 21.96, "reserved": 13.35}}}]
    )
    r = rates[("p4d.24xlarge", "us-east-1")]
    assert r.term_months == 12 and r.usd_per_hour == 13.35 and r.term_cost_usd == pytest.approx(13.35 * 8760)


# ------------------------------------------------------------------ readable numbers, per-unit costs


def test_small_numbers_keep_enough_digits_to_differ() -> None:
    """Guards every row of a small batch job reading "0.0 h, $0.01"."""
    assert money(0.0123) == "$0.0123" and money(0.0149) == "$0.0149"
    assert money(12.345) == "$12.35" and money(123456) == "$123,456"
    assert hours_text(0.001) == "4 s" and hours_text(0.05) == "3.0 min" and hours_text(0.06) == "3.6 min"
    assert hours_text(1488) == "1,488 h (62.0 days)"
    est = FakeEstimator(work_gpu_hours=0.02, need_gib=5)
    offers = [offer(instance_type=f"x{i}", gpu="L4", price=0.3 + 0.05 * i) for i in range(4)]
    opts = run(offers, estimator=est, units=(("per audio hour", 10.0),)).options
    assert len({money(o.cost_usd) for o in opts}) == 4
    assert all(o.unit_costs["per audio hour"] == pytest.approx(o.cost_usd / 10) for o in opts)


def test_undated_prices_older_than_the_limit_are_flagged_like_dated_ones() -> None:
    offers = [
        offer(instance_type="undated-old", as_of=date(2026, 5, 20), exact=False),
        offer(instance_type="dated-old", as_of=date(2026, 5, 20)),
        offer(instance_type="undated-new", as_of=date(2026, 11, 20), exact=False),
    ]
    flags = {o.instance_type: o.price_over_limit for o in run(offers).options}
    assert flags == {"undated-old": True, "dated-old": True, "undated-new": False}


# ------------------------------------------------------------------------------------- time ranges


class RangedEstimator(FakeEstimator):
    """The fake estimator's estimates with a time range of 0.8× to 1.5×."""

    def __call__(self, gpu: str, count: int, nodes: int) -> Estimate | None:
        est = super().__call__(gpu, count, nodes)
        if est is None:
            return None
        return dataclass_replace(est, hours_low=est.hours * 0.8, hours_high=est.hours * 1.5)


def test_the_time_range_carries_into_a_cost_range() -> None:
    result = run([offer(price=3.0)], estimator=RangedEstimator())
    (o,) = result.options
    assert o.hours_low == pytest.approx(o.hours * 0.8) and o.hours_high == pytest.approx(o.hours * 1.5)
    assert o.cost_usd_low == pytest.approx(3.0 * o.hours * 0.8, rel=1e-3)
    assert o.cost_usd_high == pytest.approx(3.0 * o.hours * 1.5, rel=1e-3)
    doc = result_to_dict(result, {}, top=1)["options"][0]
    assert doc["cost_usd_low"] < doc["cost_usd"] < doc["cost_usd_high"]
    # without a range (NaN: no spread known) it collapses to the total
    (plain,) = run([offer(price=3.0)]).options
    assert plain.cost_usd_low == plain.cost_usd == plain.cost_usd_high
