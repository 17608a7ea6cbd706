"""The planner core: cost parts, billing, spot overhead, rejections, relaxations, Pareto, ordering."""

from __future__ import annotations

import math
from datetime import date

import pytest
from plan_fakes import TODAY, FakeEstimator, offer

from gpuwise.plan.costing import billed_hours
from gpuwise.plan.interruption import InterruptionRate, interruption_cost, rate_from_bucket
from gpuwise.plan.models import Constraints, DataNeeds, Settings
from gpuwise.plan.output import group_options, groups_with_picks, pick_lines, result_to_dict
from gpuwise.plan.planner import plan
from gpuwise.plan.rates import PROVIDER_RATES, UNKNOWN_WHY, rates_for, unknown_text
from gpuwise.plan.startup import StartupRates

NO_STARTUP = StartupRates("*", 0.0, 0.0, math.inf, math.inf, 0.0, "test: no start-up")


def run(offers, *, constraints=None, data=None, estimator=None, **settings):  # type: ignore[no-untyped-def]
    settings.setdefault("startup_overrides", {"*": NO_STARTUP})  # exact hours; start-up has its own tests
    return plan(
        offers,
        estimator or FakeEstimator(),
        constraints=constraints or Constraints(),
        data=data or DataNeeds(),
        settings=Settings(today=TODAY, **settings),
    )


def test_billing_rounds_up_to_increment_and_minimum() -> None:
    aws, lam = rates_for("aws"), rates_for("lambda")
    assert billed_hours(10 / 3600, aws) == pytest.approx(60 / 3600)  # 60 s minimum
    assert billed_hours(1.0001, aws) == pytest.approx(1.0001, abs=1 / 3600)
    assert billed_hours(61 / 3600, lam) == pytest.approx(120 / 3600)  # per minute
    assert billed_hours(1.5, rates_for("no-such-provider")) == 1.5  # unknown: exact


def test_cost_parts_add_up_and_use_the_provider_rates() -> None:
    data = DataNeeds(dataset_gb=200, checkpoint_gb=10, checkpoints_kept=2, egress_gb=50)
    result = run([offer(provider="aws", instance_type="p5.48xlarge", price=4.0)], data=data, boot_disk_gb=100)
    (o,) = result.options
    parts = o.cost_breakdown_usd
    assert set(parts) == {"compute", "startup", "storage", "egress", "interruption_overhead"}
    assert math.isclose(sum(parts.values()), o.cost_usd)
    aws = PROVIDER_RATES["aws"]
    hours = 10 / 3.0
    assert parts["compute"] == pytest.approx(4.0 * hours, rel=1e-3)
    expected_storage = (220 * 0.023 + 100 * 0.08) * hours / 730
    assert parts["storage"] == pytest.approx(expected_storage)
    assert parts["egress"] == pytest.approx(50 * aws.egress_usd_per_gb)  # type: ignore[operator]
    assert parts["interruption_overhead"] == 0
    assert o.unknown_costs == ()


def test_unknown_rates_are_listed_never_silent() -> None:
    data = DataNeeds(dataset_gb=100, egress_gb=10)
    result = run([offer(provider="vast"), offer(provider="gcp", gpu_only_price=True)], data=data)
    by = {o.provider: o for o in result.options}
    assert set(by["vast"].unknown_costs) >= {"storage", "egress", "boot_disk"}
    assert "host_vm" in by["gcp"].unknown_costs
    assert any("unknown, counted as zero" in a for a in by["vast"].assumptions)


def test_rate_table_rows_are_cited_and_gaps_explained() -> None:
    for name, rates in PROVIDER_RATES.items():
        assert rates.provider == name and rates.source and rates.as_of <= TODAY
        figures = (rates.storage_usd_per_gb_month, rates.boot_disk_usd_per_gb_month, rates.egress_usd_per_gb)
        assert all(f is None or f >= 0 for f in figures)
        # a row with a gap says why; a complete row has nothing to explain
        assert (unknown_text(rates) is None) == (None not in figures)
        if None in figures:
            assert rates.unknown_why
    assert not set(UNKNOWN_WHY) & set(PROVIDER_RATES)  # a provider is either in the table or explained
    hyper = rates_for("hyperstack")
    assert hyper.egress_usd_per_gb == 0.0 and hyper.billing_increment_s == 60
    assert hyper.storage_usd_per_gb_month == pytest.approx(0.0706, abs=1e-4)  # $0.000096774/GB-h × 730
    why = unknown_text(rates_for("verda"))
    assert why is not None and "DataCrunch" in why
    assert "looked up for this provider yet" in (unknown_text(rates_for("no-such-cloud")) or "")


def test_lambda_egress_is_free_not_unknown() -> None:
    result = run([offer(provider="lambda")], data=DataNeeds(egress_gb=1000))
    (o,) = result.options
    assert "egress" not in o.unknown_costs
    assert o.cost_breakdown_usd["egress"] == 0


def test_spot_carries_interruption_overhead_and_longer_hours() -> None:
    result = run([offer(provider="gcp", price=4.0, spot=1.5)])
    by = {o.pricing: o for o in result.options}
    spot, od = by["spot"], by["on_demand"]
    assert spot.cost_breakdown_usd["interruption_overhead"] > 0
    assert spot.hours > od.hours
    assert spot.expected_interruptions == pytest.approx(0.05 * od.hours)
    assert any("assumed" in a for a in spot.assumptions)


def test_spot_rate_override_and_lookup() -> None:
    seen = []

    def lookup(o):  # type: ignore[no-untyped-def]
        seen.append(o.instance_type)
        return InterruptionRate(per_hour=0.001, source="AWS Spot Advisor <5%", assumed=False)

    offers = [offer(provider="aws", instance_type="g5.xlarge", gpu="A100", spot=1.0)]
    a = plan(
        offers,
        FakeEstimator(),
        constraints=Constraints(),
        data=DataNeeds(),
        settings=Settings(today=TODAY),
        spot_lookup=lookup,
    )
    b = plan(
        offers,
        FakeEstimator(),
        constraints=Constraints(),
        data=DataNeeds(),
        settings=Settings(today=TODAY, spot_rate_overrides={"*": 0.5}),
        spot_lookup=lookup,
    )
    sa = next(o for o in a.options if o.pricing == "spot")
    sb = next(o for o in b.options if o.pricing == "spot")
    assert seen == ["g5.xlarge"]
    assert any("Spot Advisor" in x for x in sa.assumptions)
    assert (
        sb.cost_breakdown_usd["interruption_overhead"] > 100 * sa.cost_breakdown_usd["interruption_overhead"]
    )


def test_interruption_model_numbers() -> None:
    ic = interruption_cost(run_hours=10, rate_per_hour=0.1, checkpoint_every_hours=1, restart_hours=0.25)
    assert ic.expected_preemptions == pytest.approx(1.0)
    assert ic.lost_hours == pytest.approx(0.75)
    rate = rate_from_bucket("15-20%")
    assert rate is not None and 0.0002 < rate < 0.0003
    assert rate_from_bucket("nonsense") is None
    # a bucket is the share interrupted over a month: a constant rate must give exactly that share
    for bucket, share in (("<5%", 0.025), ("5-10%", 0.075), (">20%", 0.30)):
        per_hour = rate_from_bucket(bucket)
        assert per_hour is not None
        assert 1 - math.exp(-per_hour * 730) == pytest.approx(share)


def test_assumed_spot_rates_say_they_are_assumed_and_why() -> None:
    result = run([offer(provider="azure", price=None, spot=1.0)], estimator=FakeEstimator(need_gib=10))
    (o,) = result.options
    note = next(a for a in o.assumptions if a.startswith("spot interruptions:"))
    assert "assumed 0.05 preemptions/h for azure" in note
    assert "24 h" in note and "--spot-interruptions-per-hour" in note
    assert any("trailing month" in a and "−ln(1 − share)/730" in a for a in result.assumptions)


def test_every_configuration_is_an_option_or_rejected_once() -> None:
    offers = [
        offer(provider="aws", gpu="H100", gpus=8, price=30, spot=12),
        offer(provider="gcp", gpu="T4", price=0.5),
        offer(provider="vast", gpu="RTX9999", price=0.3),  # unknown to the estimator
        offer(provider="cudo", gpu="L4", gpus=0.5, price=0.2),  # fractional
        offer(provider="nebius", price=None, spot=None),
        offer(provider="aws", region="cn-north-1", currency="CNY", price=100),
    ]
    result = run(
        offers,
        constraints=Constraints(max_nodes=2, providers=("aws", "gcp", "vast", "cudo", "nebius")),
        estimator=FakeEstimator(need_gib=20),
    )
    assert result.considered == len(result.options) + sum(result.rejected.values())
    # one node: no estimate; two nodes of single marketplace VMs: no shared fabric (checked first)
    assert result.rejected["no_estimate"] == 1
    assert result.rejected["no_fabric"] >= 2
    assert result.rejected["fractional_gpu"] == 2
    assert result.rejected["no_price"] == 2
    assert result.rejected["currency"] == 2


def test_estimates_are_cached_by_gpu_count_nodes() -> None:
    est = FakeEstimator()
    offers = [
        offer(provider=p, region=r, spot=1.0) for p in ("aws", "gcp", "lambda") for r in ("a", "b", "c")
    ]
    run(offers, estimator=est)
    assert est.calls == [("H100", 1, 1)]


def test_currency_needs_an_exchange_rate() -> None:
    cny = offer(provider="aws", region="cn-north-1", currency="CNY", price=100.0)
    assert run([cny]).rejected == {"currency": 1}
    (o,) = run([cny], exchange_rates={"CNY": 0.14}).options
    assert o.price_usd_per_hour == pytest.approx(14.0)
    assert o.currency == "CNY"
    assert "boot_disk" in o.unknown_costs  # AWS China storage is not priced in our (USD) table


def test_constraints_reject_by_reason() -> None:
    offers = [
        offer(provider="aws", region="eu-west-1", gpu="H100", price=3, spot=1),
        offer(provider="gcp", region="us-central1", gpu="T4", price=0.4),
        offer(provider="lambda", region="us-east-1", gpu="A100", gpus=8, price=10),
    ]
    c = Constraints(providers=("aws", "lambda"), regions=("eu-*",), interruptible=False)
    result = run(offers, constraints=c)
    assert [(o.provider, o.pricing) for o in result.options] == [("aws", "on_demand")]
    assert result.rejected == {"provider": 1, "region": 1, "spot_not_allowed": 1}


def test_nothing_qualifies_says_what_relaxing_gives() -> None:
    offers = [offer(provider="lambda", price=p, instance_type=f"i{p}") for p in (2.0, 3.0, 4.0)]
    result = run(offers, constraints=Constraints(budget_usd=5.0))
    assert result.options == ()
    assert result.rejected == {"over_budget": 3}
    (relax,) = result.relaxations
    assert relax.reason == "over_budget" and relax.options == 3
    # 10 GPU-hours at speed 3 -> 3.33 h; the dearest costs 4 × 3.33 = $13.3 (+ boot disk? lambda: none)
    assert relax.suggestion == "raising budget_usd to $7 would allow 1 option, to $14 all 3"


def test_deadline_relaxation() -> None:
    result = run(
        [offer(gpu="T4", price=0.3)],
        constraints=Constraints(deadline_hours=10),
        estimator=FakeEstimator(need_gib=10),
    )
    assert result.rejected == {"over_deadline": 1}
    assert result.relaxations[0].suggestion.startswith("raising deadline_hours to 66.7 would allow 1 option")


def test_order_follows_objective_and_pareto_front() -> None:
    offers = [
        offer(gpu="H100", price=4.0, instance_type="fast"),
        offer(gpu="A100-80GB", price=1.2, instance_type="cheap"),
        offer(gpu="L4", price=0.8, instance_type="slow-dear"),  # slower and dearer than A100-80GB
    ]
    by_cost = run(offers, estimator=FakeEstimator(need_gib=10))
    assert [o.instance_type for o in by_cost.options] == ["cheap", "fast", "slow-dear"]
    assert {o.instance_type for o in by_cost.options if o.pareto} == {"cheap", "fast"}
    by_time = run(offers, objective="time", estimator=FakeEstimator(need_gib=10))
    assert by_time.options[0].instance_type == "fast"


def test_the_same_offer_in_many_regions_is_one_choice() -> None:
    offers = [
        *(offer(instance_type="same", price=2.0, region=r) for r in ("us-east-1", "us-west-2", "eu-west-1")),
        offer(instance_type="same", price=2.5, region="ap-south-1"),  # dearer there: a choice of its own
        offer(instance_type="other", gpu="A100-80GB", price=3.0, region="us-east-1"),
    ]
    result = run(offers, estimator=FakeEstimator(need_gib=10))
    assert len(result.options) == 5
    groups = group_options(result.options)
    assert [(g.option.instance_type, g.regions) for g in groups] == [
        ("same", ("eu-west-1", "us-east-1", "us-west-2")),  # ties rank by region name
        ("same", ("ap-south-1",)),
        ("other", ("us-east-1",)),
    ]
    assert groups[0].regions_text(2) == "3 regions: eu-west-1, us-east-1…"
    assert groups[1].regions_text() == "ap-south-1"
    # top 2 = two distinct choices; the JSON keeps one option per choice with all its regions
    doc = result_to_dict(result, {}, top=2)
    assert [(o["region"], o["regions"]) for o in doc["options"]] == [
        ("eu-west-1", ["eu-west-1", "us-east-1", "us-west-2"]),
        ("ap-south-1", ["ap-south-1"]),
    ]
    assert doc["qualifying"] == 5
    # the picks point at region groups: the same offer elsewhere is not another choice
    groups, picks = groups_with_picks(result, 2)
    assert groups[picks["cheapest"]].option.region == "eu-west-1"
    assert pick_lines(result, groups, picks)[0].startswith("cheapest  #1 lambda same (1× H100")


def test_stale_and_undated_prices_are_flagged() -> None:
    offers = [
        offer(instance_type="fresh", as_of=date(2026, 11, 1)),
        offer(instance_type="old", as_of=date(2025, 1, 1)),
        offer(instance_type="undated", as_of=date(2026, 11, 29), exact=False),
    ]
    flags = {o.instance_type: o.price_stale for o in run(offers).options}
    assert flags == {"fresh": False, "old": True, "undated": True}


def test_multi_node_only_when_allowed_and_within_max_gpus() -> None:
    o8 = offer(provider="aws", instance_type="p5.48xlarge", gpu="H100", gpus=8, price=30)
    one = run([o8])
    assert {o.nodes for o in one.options} == {1}
    four = run([o8], constraints=Constraints(max_nodes=4, max_gpus=16))
    assert {o.nodes for o in four.options} == {1, 2}
    assert four.rejected == {"max_gpus": 2}
    assert all(o.price_usd_per_hour == 30 * o.nodes for o in four.options)


def test_prototype_phase_keeps_single_gpu_only() -> None:
    offers = [offer(gpus=1, instance_type="one"), offer(gpus=8, price=20, instance_type="eight")]
    result = run(offers, single_gpu_only=True, constraints=Constraints(max_nodes=4))
    assert [o.instance_type for o in result.options] == ["one"]
    assert result.rejected == {"not_single_gpu": 1}


def test_plan_wide_notes_say_availability_is_unknown() -> None:
    result = run([offer()])
    assert any("Availability is not known" in a for a in result.assumptions)
    assert result.sources == {"lambda": date(2026, 10, 1)}


def test_serving_slower_than_the_target_rate_is_rejected() -> None:
    """Guards ranking a replica that needs 3 months to serve a month of traffic as a cheap option."""
    offers = [offer(gpu="H100", instance_type="fast"), offer(gpu="T4", price=0.3, instance_type="slow")]
    est = FakeEstimator(work_gpu_hours=30, need_gib=10)  # H100: 10 h, T4: 200 h
    result = run(offers, estimator=est, service_hours=24.0)
    assert [o.instance_type for o in result.options] == ["fast"]
    assert result.rejected == {"below_target_rate": 1}


def test_region_patterns_are_case_blind() -> None:
    offers = [offer(region="FIN-03", instance_type="a"), offer(region="eastus", instance_type="b")]
    result = run(offers, constraints=Constraints(regions=("fin-*", "EAST*")))
    assert sorted(o.instance_type for o in result.options) == ["a", "b"]


def test_nothing_fits_on_one_node_suggests_more_nodes() -> None:
    """A model too big for one 8-GPU node: the answer must say that two nodes would hold it."""
    est = FakeEstimator(need_gib=300)  # per GPU: need / sqrt(count): 106 GiB on 8, 75 GiB on 16
    p5 = offer(provider="aws", instance_type="p5.48xlarge", gpu="H100", gpus=8, price=30)
    result = run([p5], estimator=est)
    assert result.options == ()
    assert result.rejected == {"does_not_fit": 1}
    (relax,) = result.relaxations
    assert relax.constraint == "max_nodes"
    assert relax.suggestion.startswith("raising max_nodes to 2 would allow")
