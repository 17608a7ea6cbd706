"""The plan HTML report: self-contained, and its chart really draws in a browser (headless Chromium)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest

from gpuwise.catalog.models import Offer
from gpuwise.errors import UsageError
from gpuwise.estimate.models import Estimate, MemoryBreakdown
from gpuwise.plan.models import Constraints, DataNeeds, PlanResult, Settings
from gpuwise.plan.planner import plan
from gpuwise.report.plan_html import render_plan_html, require_plotly

GIB = 1024**3
SPEED = {"H100": 3.0, "A100-80GB": 1.6, "L40S": 1.2}


def _offer(provider: str, gpu: str, gpus: int, price: float, spot: float | None) -> Offer:
    return Offer(
        provider=provider,
        instance_type=f"{gpu.lower()}-x{gpus}",
        region="us-east-1",
        zone=None,
        gpu=gpu,
        gpus=gpus,
        gpu_memory_gib=80,
        vcpus=8,
        memory_gib=64,
        price_usd_per_hour=price,
        spot_price_usd_per_hour=spot,
        currency="USD",
        price_as_of=date(2026, 10, 1),
        price_date_exact=provider != "vast",
        source="test <script>alert(1)</script>",
    )


def _estimate(gpu: str, count: int, nodes: int) -> Estimate:
    return Estimate(
        gpu=gpu,
        count=count,
        nodes=nodes,
        fits=True,
        memory=MemoryBreakdown(20 * GIB, 0, 0, 10 * GIB, 0, 2 * GIB),
        memory_capacity_bytes=80 * GIB,
        throughput_per_gpu=1000,
        throughput_unit="tokens/s",
        hours=20 / (SPEED[gpu] * count * 0.9 ** (count - 1)),
        mfu=0.4,
        bottleneck="compute",
        assumptions=("test estimate",),
    )


@pytest.fixture(scope="module")
def result() -> PlanResult:
    offers = [
        _offer(p, g, n, price=SPEED[g] * n * f, spot=SPEED[g] * n * f * 0.4 if p != "lambda" else None)
        for p, f in (("aws", 1.3), ("gcp", 1.2), ("lambda", 1.0), ("vast", 0.7))
        for g in SPEED
        for n in (1, 2, 8)
    ]
    return plan(
        offers,
        _estimate,
        constraints=Constraints(max_nodes=2),
        data=DataNeeds(dataset_gb=50, egress_gb=10),
        settings=Settings(today=date(2026, 11, 30)),
    )


def test_report_is_self_contained_and_escaped(result: PlanResult) -> None:
    page = render_plan_html(result, title="plan: test <workload>", top=10, notes=["smoke test = …"])
    assert "<script src=" not in page  # plotly.js is inline: opens without network
    markup = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)  # plotly.js's own strings aside
    assert "plotly" in page and len(markup) < len(page) / 10
    assert not re.search(r"""(src|href)=["']?https?://""", markup)
    assert "plan: test &lt;workload&gt;" in page
    assert "<script>alert(1)</script>" not in page
    assert "Pareto front" in page
    assert "Availability is not known" in page
    # header + top 10 + the headline picks ranked below them (always kept)
    assert 11 <= page.count("<tr") <= 11 + 3
    assert "cheapest" in page and "balanced" in page and "fastest" in page


def _no_plotly() -> ModuleType:
    raise ModuleNotFoundError("No module named 'plotly'", name="plotly")


def test_without_plotly_the_report_names_the_extra(result: PlanResult) -> None:
    """plotly is the optional `html` extra: without it, one usage error (exit 2) that says how to get it."""
    with pytest.raises(UsageError) as caught:
        render_plan_html(result, title="plan", top=10, importer=_no_plotly)
    assert caught.value.exit_code == 2
    text = caught.value.render()
    assert text.startswith("--html needs plotly, which is not installed.")
    assert "To fix: pip install 'gpuwise[html]'." in text
    with pytest.raises(UsageError, match="needs plotly"):
        require_plotly(_no_plotly)  # what the command checks before it plans


def test_chart_draws_in_headless_chromium(
    result: PlanResult, tmp_path: Path, need_program: Callable[[str], str]
) -> None:
    """Guards a chart that ships but never renders (missing plotly.js, a script error, empty traces)."""
    chromium = need_program("chromium")
    page = tmp_path / "plan.html"
    page.write_text(render_plan_html(result, title="plan", top=10), encoding="utf-8")
    profile = tmp_path / "profile"
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=15000",
        "--dump-dom",
        page.as_uri(),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    dom = out.stdout
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'class="main-svg"' in dom, "plotly did not create its SVG"
    # one marker path per option, plus the Pareto trace's markers
    n_points = len(re.findall(r'class="point"', dom))
    n_pareto = sum(o.pareto for o in result.options)
    assert n_points >= len(result.options) + n_pareto
    assert 'class="js-line"' in dom  # the Pareto front line was drawn
    assert "xlog" in dom or 'class="xtick"' in dom


def test_table_shows_one_row_per_choice_with_its_regions() -> None:
    base = _offer("gcp", "H100", 1, price=3.0, spot=None)
    offers = [
        replace(base, region=region) for region in ("us-central1", "europe-west4", "asia-east1", "us-east4")
    ]
    offers.append(_offer("lambda", "A100-80GB", 1, price=2.0, spot=None))
    result = plan(
        offers,
        _estimate,
        constraints=Constraints(),
        data=DataNeeds(),
        settings=Settings(today=date(2026, 11, 30)),
    )
    assert len(result.options) == 5
    page = render_plan_html(result, title="regions", top=10)
    assert page.count("<tr") == 3  # header + two distinct choices
    assert "4 regions: asia-east1, europe-west4, us-central1…" in page
    assert 'title="asia-east1, europe-west4, us-central1, us-east4"' in page
