"""The re-fit of the training stacks on the user-reported table's fit rows (issue 11): the ranges in
stacks.py are what the fit rows' percentiles say, and the tools that fit them never show a held-out row."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gpuwise.estimate import stacks as k

REPO = Path(__file__).resolve().parents[2]
USER_TABLE = REPO / "tests" / "estimate" / "user_reports.toml"


def _load(name: str) -> ModuleType:
    if not USER_TABLE.exists():
        pytest.skip("tests/estimate/user_reports.toml is not in this checkout")
    path = REPO / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load("estimate_accuracy")


def test_hours_ranges_are_the_fit_rows_percentiles(bench: ModuleType) -> None:
    """Every stack range in stacks.py (and the pooled one) is the P5-P95 the fit rows give today, so a new
    batch of rows cannot leave a stale range behind."""
    fitted = bench.fit_ranges(bench.evaluate_table(bench.load_rows(USER_TABLE), "user"))
    user_stacks = [s for s in k.HOURS_RANGE if s in k.STACK_FAMILY and s not in ("tuned", "torchtitan")]
    assert user_stacks, "no user stack has its own range"
    for stack in user_stacks:
        low, high, n = fitted[stack]
        assert n >= k.RANGE_MIN_ROWS
        assert k.HOURS_RANGE[stack] == pytest.approx((low, high), abs=0.01), stack
    low, high, _ = fitted["pooled"]
    pooled = k.HOURS_RANGE_POOLED
    assert pooled == pytest.approx((low, high), abs=0.01)


def test_fit_only_prints_fit_rows_and_never_a_held_out_one(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = bench.load_rows(USER_TABLE)
    assert bench.cli(["--fit-only"]) == 0
    out = capsys.readouterr().out
    held = [r["id"] for r in rows if bench.held_out(r)]
    fit = [r["id"] for r in rows if not bench.held_out(r)]
    assert held and fit
    assert not [i for i in held if i in out]
    assert all(i in out for i in fit)
    assert "pooled range" in out and "held-out" not in out


def test_stack_grid_reads_only_fit_rows_and_restores_the_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    grid = _load("stack_grid")
    ea = sys.modules["estimate_accuracy"]
    rows = grid.family_rows("hf", ea.load_rows(USER_TABLE))
    assert len(rows) >= 20
    assert not [r["id"] for r in rows if ea.held_out(r)]
    before = dict(k.STACKS)
    grid.grid("lightning", [0.5], [0.0], [None])
    after = dict(k.STACKS)
    assert after == before
    assert "lightning: " in capsys.readouterr().out


def test_a_range_reaching_days_keeps_its_unit_once_in_the_plan_table() -> None:
    """The re-fitted ranges reach past 48 h, where the high end adds its days: '5.04–56 h (2.3 days)',
    not '5.04 h–56 h (2.3 days)' (which the 80-column plan table has no room for)."""
    from gpuwise.cli.plan_table import _span
    from gpuwise.units import format_run_hours

    assert _span(format_run_hours(5.04), format_run_hours(56)) == "5.04–56 h (2.3 days)"
    assert _span(format_run_hours(4.44), format_run_hours(14.9)) == "4.44–14.9 h"
