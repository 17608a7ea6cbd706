"""`gpuwise report --json` on a history with known totals: every figure checked against hand-computed values,
unknown utilization kept unknown (never 0 %), and the bad-input paths (exit 2, nothing written)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from report_history import T0

from gpuwise.cli.main import main

DAY = datetime.fromtimestamp(T0, UTC).strftime("%Y-%m-%d")
MONTH = DAY[:7]


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["report", "--json", "--since", "10d", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_utilization_from_samples(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """2 GPUs x 2 h sampled every 10 s. GPU 0: 1 h at 80 %, 0.5 h at 0 %, 0.5 h with no reading; GPU 1:
    1 h at 40 %, then 1 h lost. Mean over the 2.5 h with a reading: (80 + 0 + 40) / 2.5 = 48 %."""
    u = _report(capsys)["utilization"]
    assert u["gpu_hours"] == 4.0
    assert u["unknown_util_gpu_hours"] == 1.5
    assert u["util_mean_pct"] == 48.0
    assert u["idle_gpu_hours"] == 0.5
    assert u["machine_hours"] == 2.0 and u["machine_cost_usd"] == 20.0  # $10/h from config.toml
    g0, g1 = u["by_gpu"]
    assert (g0["gpu"], g0["name"], g0["sample_interval_s"]) == (0, "NVIDIA A100-SXM4-80GB", 10.0)
    assert (g0["gpu_hours"], g0["unknown_util_gpu_hours"], g0["util_mean_pct"]) == (2.0, 0.5, 53.33)
    assert (g1["gpu_hours"], g1["unknown_util_gpu_hours"], g1["util_mean_pct"]) == (2.0, 1.0, 40.0)
    assert u["by_day"] == [
        {
            "day": DAY,
            "gpu_hours": 4.0,
            "unknown_util_gpu_hours": 1.5,
            "util_mean_pct": 48.0,
            "idle_gpu_hours": 0.5,
        }
    ]


def test_spend_from_the_ledger(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """r1 2 h x 2 GPUs at $10/h = $20 (48 %); r2 1 h x 2 at $10/h = $10 (30 %); r3 0.5 h, no price; r4 still
    running. Busy share weighted by GPU-hours: (4 x 48 + 2 x 30) / 6 = 42 %."""
    s = _report(capsys)["spend"]
    assert s["totals"] == {
        "runs": 4, "hours": 3.5, "gpu_hours": 6.5, "cost_usd": 30.0, "runs_without_cost": 2,
        "util_mean_pct": 42.0, "runs_without_util": 2,
    }  # fmt: skip
    by_project = {g["key"]: g for g in s["by_project"]}
    assert by_project["llm"]["cost_usd"] == 30.0 and by_project["llm"]["util_mean_pct"] == 42.0
    assert by_project["vision"]["cost_usd"] is None  # unknown, not $0
    assert by_project["vision"]["util_mean_pct"] is None and by_project["vision"]["runs_without_cost"] == 2
    assert {g["key"]: g["cost_usd"] for g in s["by_provider"]} == {"aws": 30.0, "lambda": None}
    assert [(g["key"], g["runs"]) for g in s["by_month"]] == [(MONTH, 4)]
    assert s["by_user"] is None and any("user" in m for m in s["missing"])


def test_costliest_runs_planned_vs_actual_and_idle(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(capsys)
    assert [r["run_id"] for r in data["costliest_runs"]] == ["r1", "r2"]  # runs without a cost are not ranked
    assert data["costliest_runs"][0]["hints"] == {"input_bound": 3}
    pva = data["planned_vs_actual"]
    r1 = next(r for r in pva["runs"] if r["run_id"] == "r1")
    assert (r1["planned_hours"], r1["actual_hours"], r1["hours_ratio"]) == (1.0, 2.0, 2.0)
    assert (r1["planned_cost_usd"], r1["actual_cost_usd"], r1["cost_ratio"]) == (12.0, 20.0, 1.6667)
    # hours ratios 2.0 and 1.25, cost ratios 20/12 and 10/8
    assert pva["by_gpu_task"] == [
        {
            "gpu": "A100-80GB",
            "task": "finetune",
            "runs": 2,
            "hours_ratio_median": 1.625,
            "cost_ratio_median": 1.4583,
        }
    ]
    idle = data["idle"]  # one stop at T0+7h, the machine booted again at T0+9h: 2 h off at $10/h
    assert (idle["stops"], idle["counted_stops"], idle["hours_off"], idle["saved_usd"]) == (1, 1, 2.0, 20.0)
    assert data["inputs"]["monitor_samples"] == 1440 and data["inputs"]["runs_with_plan"] == 2
    sources = {s["section"]: s for s in data["sources"]}
    assert list(sources) == ["spend", "utilization", "idle", "planned_vs_actual"]
    assert sources["utilization"]["rests_on"] == [f"1,440 monitor samples in {history}"]
    assert any("user" in m for m in sources["spend"]["missing"])
    assert data["nothing_recorded"] is False


def test_findings_in_plain_words(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Idle share of the cost: r1 $20 x (1 - 0.48) + r2 $10 x (1 - 0.30) = $17.40."""
    findings = _report(capsys)["findings"]
    assert findings[0] == (
        "runs of project llm used 42 % of their GPU-hours ($17.40 of their cost paid for GPU time not used); "
        "monitor hints during them: input-bound (the GPU waited while the host CPU was saturated) (3×)"
    )
    assert any("finetune runs on A100-80GB took 1.62× the planned hours (median of 2" in f for f in findings)
    assert any("stopped the machine 1 time(s): 2.0 h off, saving $20.00" in f for f in findings)
    assert any("1.50 sampled GPU-hours have no utilization reading" in f for f in findings)


def test_project_filter(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(capsys, "--project", "vision")
    assert data["spend"]["totals"]["runs"] == 2 and data["spend"]["totals"]["cost_usd"] is None
    assert data["utilization"]["gpu_hours"] is not None and data["utilization"]["gpu_hours"] == 0.0
    assert _report(capsys, "--project", "llm")["utilization"]["gpu_hours"] == 4.0  # samples while llm ran


def test_unknown_project_lists_the_known_ones(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--project", "visoin"]) == 2
    err = capsys.readouterr().err
    assert "Unknown project 'visoin'" in err and "Did you mean 'vision'" in err and "llm, vision" in err


def test_since_in_the_future_or_not_a_time(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--since", "2999-01-01"]) == 2
    assert "in the future" in capsys.readouterr().err
    assert main(["report", "--since", "lately"]) == 2
    assert "neither a duration nor a date" in capsys.readouterr().err


def test_since_cuts_the_window(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Everything is at least a day old: `--since 1h` sees nothing in its window but says where it starts."""
    assert main(["report", "--since", "1h"]) == 0
    assert f"nothing recorded in this window (the history starts {DAY})" in capsys.readouterr().out


def test_nothing_recorded_yet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 0
    assert "nothing recorded yet; start `gpuwise monitor` or `gpuwise run`" in capsys.readouterr().out
    assert main(["report", "--json"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert data["nothing_recorded"] is True and data["spend"] is None and data["utilization"] is None
    assert {s["section"]: s["missing"] for s in data["sources"]}["spend"] == [
        "no run ledger: `gpuwise run` records one row per run"
    ]
    assert "nothing recorded yet" in out.err


def test_corrupt_database_is_bad_input_and_left_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPUWISE_DATA_DIR", str(tmp_path))
    db = tmp_path / "gpuwise.sqlite"
    db.write_bytes(b"this is not an sqlite file" * 200)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    assert main(["report"]) == 2
    err = capsys.readouterr().err
    assert str(db) in err and "To fix:" in err and "Traceback" not in err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpuwise.sqlite"]  # no -wal or -shm either


def test_damaged_pages_are_bad_input_too(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file whose header is intact but whose pages are overwritten (a disk fault, a half-copied file)."""
    db = sqlite3.connect(history)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file, none left in the WAL
    db.close()
    raw = bytearray(history.read_bytes())
    raw[4096:] = b"\xff" * (len(raw) - 4096)
    history.write_bytes(bytes(raw))
    assert main(["report"]) == 2
    assert str(history) in capsys.readouterr().err


def test_save_calibration(history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "calib.json"
    assert main(["report", "--since", "10d", "--save-calibration", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["kind"] == "gpuwise-calibration" and doc["version"] == 1
    assert doc["created_at"].endswith("Z") and "2 runs with a plan" in doc["source"]
    assert doc["entries"] == [
        {"gpu": "A100-80GB", "task": "finetune", "hours_ratio": 1.625, "runs": 2,
         "source": "actual/planned hours, median of 2 run(s)"}
    ]  # fmt: skip
    assert "Saved 1 calibration entry" in capsys.readouterr().err


def test_save_calibration_without_planned_runs(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "calib.json"
    assert main(["report", "--since", "10d", "--project", "vision", "--save-calibration", str(out)]) == 2
    assert "--plan" in capsys.readouterr().err and not out.exists()
