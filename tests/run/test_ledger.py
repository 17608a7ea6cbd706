"""The run ledger: rows, totals that never turn unknown into 0, grouping, the GPU utilisation from the
monitor's samples, the budget (warn at 80 %, refuse past 100 % unless --force), and the CLI's JSON."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.run.ledger import LedgerEntry, LedgerStore, RunStart, budget_state, summarize

CONTRACT_KEYS = {
    "run_id", "project", "tags", "command", "started_at", "ended_at", "exit_code", "gpu", "gpus", "provider",
    "instance_type", "price_usd_per_hour", "price_source", "gpu_hours", "gpu_util_mean_pct", "preemptions",
    "checkpoints", "cost_usd",
}  # fmt: skip


def entry(
    project: str | None, hours: float, price: float | None, tags: tuple[str, ...] = (), gpus: int = 1
) -> LedgerEntry:
    start = 1_764_590_400.0  # 2025-12-01T12:00:00Z
    return LedgerEntry(
        "r", project, tags, ("python", "t.py"), start, start + hours * 3600, 0, "H100", gpus, "aws", "p5",
        price, "config.toml [machine]" if price else None, None, 0, 0, 0,
    )  # fmt: skip


def test_totals_and_groups() -> None:
    rows = [entry("a", 2, 3.0, ("x",), gpus=8), entry("a", 1, None, ("x", "y")), entry("b", 1, 1.0)]
    data = summarize(rows, "tag")
    assert set(data["runs"][0]) >= CONTRACT_KEYS
    assert data["runs"][0]["gpu_hours"] == 16 and data["runs"][0]["cost_usd"] == 6
    assert data["totals"]["cost_usd"] == 7 and data["totals"]["runs_without_cost"] == 1
    groups = {g["key"]: g for g in data["groups"]}
    assert groups["x"]["runs"] == 2 and groups["y"]["cost_usd"] is None  # unknown, not $0
    assert summarize(rows, "month")["groups"][0]["key"] == "2025-12"


def test_budget_levels() -> None:
    rows = [entry("a", 1, 79.0), entry("b", 1, 500.0)]
    assert budget_state(rows, "a", 100).level == "ok"
    assert budget_state([*rows, entry("a", 1, 2.0)], "a", 100).level == "warn"
    assert budget_state([*rows, entry("a", 1, 30.0)], "a", 100).level == "over"


def test_store_round_trip_and_utilisation_from_monitor_samples(tmp_path: Path) -> None:
    db = tmp_path / "gpuwise.sqlite"
    store = LedgerStore(db)
    now = time.time()
    row = store.start(RunStart("r1", "p", ("t",), ("x",), now - 10, "H100", 2, "aws", "p5", 4.0, "config"))
    with sqlite3.connect(db) as con:  # the monitor's table, as the monitor writes it
        con.execute("CREATE TABLE monitor_samples (ts REAL, gpu INTEGER, util_gpu_pct REAL)")
        con.executemany(
            "INSERT INTO monitor_samples VALUES (?,?,?)",
            [(now - 5, 0, 80.0), (now - 5, 1, 60.0), (now - 100, 0, 0.0)],  # the last is before the run
        )
    store.finish(row, now, 0, 1, 2, 1000)
    (e,) = store.entries()
    assert e.gpu_util_mean_pct == 70.0 and e.preemptions == 1 and e.checkpoints == 2
    assert e.gpu_hours == pytest.approx(2 * 10 / 3600)
    assert store.entries(since_ts=now + 1) == []
    store.close()


def _seed(cost_usd: float) -> None:
    from gpuwise import paths

    store = LedgerStore(paths.history_db())
    now = time.time()
    row = store.start(
        RunStart("old", "proj", (), ("x",), now - 3600, None, None, None, None, cost_usd, "config")
    )
    store.finish(row, now, 0, 0, 0, 0)
    store.close()


def test_budget_refuses_past_100_percent_unless_forced(capsys: pytest.CaptureFixture[str]) -> None:
    _seed(120.0)
    args = ["run", "--preemption", "off", "--project", "proj", "--budget-usd", "100", "--", "true"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "spent $120.00 of its $100.00 budget" in err and "--force" in err
    assert main([*args[:-2], "--force", "--", "true"]) == 0


def test_budget_warns_at_80_percent(capsys: pytest.CaptureFixture[str]) -> None:
    _seed(85.0)
    assert main(["run", "--preemption", "off", "--project", "proj", "--budget-usd", "100", "--", "true"]) == 0
    assert "Warning:" in capsys.readouterr().err


def test_ledger_cli_json_and_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", "--preemption", "off", "--project", "p", "--tag", "a", "--tag", "b", "--", "true"]) == 0
    )
    capsys.readouterr()
    assert main(["ledger", "--json", "--by", "project"]) == 0
    data = json.loads(capsys.readouterr().out)
    (run,) = data["runs"]
    assert set(run) >= CONTRACT_KEYS and run["tags"] == ["a", "b"] and run["exit_code"] == 0
    assert data["groups"][0]["key"] == "p"
    assert main(["ledger", "--by", "projekt"]) == 2
    assert "Did you mean 'project'?" in capsys.readouterr().err
    assert main(["ledger", "--since", "yesterday"]) == 2


def test_damaged_ledger_rows_do_not_end_the_listing(capsys: pytest.CaptureFixture[str]) -> None:
    """A row with fields that are not what gpuwise writes (edited by hand, a damaged disk): its unreadable
    fields are unknown, and a row with no usable start time is left out with a warning naming it."""
    assert main(["run", "--preemption", "off", "--project", "p", "--", "true"]) == 0
    path = Path(os.environ["GPUWISE_DATA_DIR"]) / "gpuwise.sqlite"
    with sqlite3.connect(path) as db:
        now = time.time()
        db.execute(
            "INSERT INTO run_ledger (run_id, tags, command, started_at, gpus, price_usd_per_hour, "
            "preemptions) VALUES ('odd', 'not json', 'python train.py', ?, 'two', 'cheap', 'many')",
            (now - 60,),
        )
        bad = db.execute(
            "INSERT INTO run_ledger (run_id, command, started_at) VALUES ('lost', '[]', 'yesterday')"
        ).lastrowid
    capsys.readouterr()
    assert main(["ledger", "--json"]) == 0
    out, err = capsys.readouterr()
    runs = {r["run_id"]: r for r in json.loads(out)["runs"]}
    assert set(runs) == {"odd", *(k for k in runs if k.startswith("run-"))} and len(runs) == 2
    odd = runs["odd"]
    assert (odd["tags"], odd["command"], odd["gpus"], odd["price_usd_per_hour"]) == (
        [],
        "'python train.py'",
        None,
        None,
    )
    assert f"1 damaged ledger row(s) left out (id {bad} in {path})" in err and "Traceback" not in err
    assert main(["ledger"]) == 0
    assert "odd" in capsys.readouterr().out


def test_since_zero_is_bad_input_and_a_bare_number_is_days(capsys: pytest.CaptureFixture[str]) -> None:
    """`--since 0` listed nothing ("No runs recorded in the last 0."), and `--since 7` meant 7 seconds."""
    store = LedgerStore(Path(os.environ["GPUWISE_DATA_DIR"]) / "gpuwise.sqlite")
    try:
        started = time.time() - 2 * 86400
        store.start(
            RunStart("two-days-ago", None, (), ("t.py",), started, None, None, None, None, None, None)
        )
    finally:
        store.close()
    for zero in ("0", "0d", "0h0m"):
        assert main(["ledger", "--since", zero]) == 2
        err = capsys.readouterr().err
        assert f"--since {zero!r} is not a positive duration" in err and "leave --since out" in err
    assert main(["ledger", "--since", "7", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["two-days-ago"]
    assert main(["ledger", "--since", "1"]) == 0
    assert capsys.readouterr().out.strip() == "No runs recorded in the last 1d."


def test_a_ledger_that_cannot_be_opened_is_not_fixed_with_an_option_ledger_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gpuwise ledger` said "run with --no-ledger", an option only `gpuwise run` has."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GPUWISE_DATA_DIR", str(blocker / "data"))
    assert main(["ledger"]) == 1
    err = capsys.readouterr().err
    assert "Cannot open the ledger database" in err and "--no-ledger" not in err
    assert "GPUWISE_DATA_DIR to the directory that holds gpuwise.sqlite" in err
    assert main(["run", "--preemption", "off", "--", "true"]) == 1
    assert "or run with --no-ledger" in capsys.readouterr().err  # there it is the way out
