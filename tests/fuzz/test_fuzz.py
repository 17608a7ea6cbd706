"""The fuzz suite (issue 10): for every input format gpuwise reads, generated inputs — real recordings
and examples damaged byte-, line- and structure-wise — must give an answer or our bad-input error
(exit 0, 1 or 2), never a traceback, within 10 s and 1 GiB each.

`make fuzz` runs the full batches (10,000 inputs per format in process, 50 of them also through the
real `gpuwise` command); `make fuzz FORMAT=workload` one format. `make test` runs the quick checks at
the bottom: the harness does fail on a crash, a hang, a blow-up and a bad exit code, and every format's
generator and target still run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fuzz_batches import Batches, report_line
from fuzz_formats import FORMATS
from fuzz_harness import describe, describe_crashes, run_batch, run_cli


# A test waits for its format's batch, which runs alongside the others: pytest's 180 s per test does not
# apply (every input is bounded by the runner, a stuck runner by its watchdog).
@pytest.mark.fuzz
@pytest.mark.timeout(0)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_generated_inputs_in_process(fmt: str, batches: Batches, request: pytest.FixtureRequest) -> None:
    batch, _ = batches.result(fmt)
    for name, what, current in batch.failures:
        log = batches.out / f"runner-{fmt}.log"
        pytest.fail(f"{name}: {what}; the input it was on: {current} (runner log: {log})")
    summary = batch.summaries[fmt]
    report_line(request.config, describe(summary))
    assert summary["inputs"] >= batches.examples, summary
    assert not summary["crashes"], f"{fmt}: inputs that crashed or hung:\n{describe_crashes(summary)}"


@pytest.mark.fuzz
@pytest.mark.timeout(0)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_generated_inputs_through_the_cli(fmt: str, batches: Batches, request: pytest.FixtureRequest) -> None:
    batch, runs = batches.result(fmt)
    if fmt not in batch.summaries:
        pytest.fail(f"{fmt}: the in-process batch did not finish, so no sample was saved")
    assert len(runs) >= min(batches.cli, 1), f"{fmt}: no CLI sample ran"
    slowest = max(runs, key=lambda r: r.seconds)
    codes: dict[int, int] = {}
    for r in runs:
        codes[r.code] = codes.get(r.code, 0) + 1
    report_line(
        request.config,
        f"{fmt} (CLI): {len(runs)} runs of gpuwise, exit codes {dict(sorted(codes.items()))}, "
        f"slowest {slowest.seconds:.1f} s: {slowest.command}",
    )
    bad = [r for r in runs if r.problem]
    assert not bad, f"{fmt}: {len(bad)} of {len(runs)} runs broke the promise:\n" + "\n".join(
        f"  $ {r.command}\n    {r.problem}" for r in bad[:10]
    )


# ---------------------------------------------------------------- quick checks (`make test`)


def _only(tmp_path: Path, name: str, examples: int = 12, **kw: object) -> dict:
    result = run_batch([name], tmp_path, examples=examples, **kw)  # type: ignore[arg-type]
    assert not result.failures, result.failures
    return result.summaries[name]


def test_harness_reports_a_crash_with_its_reproducer(tmp_path: Path) -> None:
    summary = _only(tmp_path, "selftest-crash")
    (crash,) = summary["crashes"]
    assert crash["exc_type"] == "ValueError"
    assert Path(crash["input"]).is_file()
    assert crash["commands"] and all(c.startswith("gpuwise ") for c in crash["commands"])


def test_harness_ends_a_hang_at_the_time_bound(tmp_path: Path) -> None:
    summary = _only(tmp_path, "selftest-hang", examples=6, timeout_s=0.5)
    assert [c["exc_type"] for c in summary["crashes"]] == ["Hang"]
    assert "CPU" in summary["crashes"][0]["traceback"]


def test_harness_ends_an_input_that_waits(tmp_path: Path) -> None:
    summary = _only(tmp_path, "selftest-blocked", examples=2, timeout_s=0.5)
    assert [c["exc_type"] for c in summary["crashes"]] == ["Hang"]
    assert "blocked" in summary["crashes"][0]["traceback"]


def test_harness_bounds_memory(tmp_path: Path) -> None:
    summary = _only(tmp_path, "selftest-memory")
    assert [c["exc_type"] for c in summary["crashes"]] == ["MemoryError"]
    assert summary["peak_rss_mib"] < 1024


def test_harness_refuses_an_exit_code_outside_0_1_2(tmp_path: Path) -> None:
    summary = _only(tmp_path, "selftest-exit")
    assert [c["exc_type"] for c in summary["crashes"]] == ["AssertionError"]


def test_watchdog_kills_a_hang_no_signal_can_interrupt(tmp_path: Path) -> None:
    result = run_batch(["selftest-stuck"], tmp_path, examples=3, timeout_s=0.5, watchdog_grace_s=1.5)
    ((name, what, current),) = result.failures
    assert name == "selftest-stuck"
    assert "no progress" in what
    assert Path(current, "CASE").is_file()
    assert result.wall_s < 30


def test_every_format_generates_and_runs(tmp_path: Path) -> None:
    """A few inputs of every format in one process: the generators and targets still fit the product
    (a renamed option would show as a crash outside gpuwise's code). Crashes inside gpuwise are the
    full batches' business (`make fuzz`), not this check's."""
    result = run_batch(
        list(FORMATS), tmp_path, examples=6, sample=0, extra=["--text-every", "2", "--no-explicit"]
    )
    assert not result.failures, result.failures
    for fmt in FORMATS:
        summary = result.summaries[fmt]
        assert summary["inputs"] >= 6, summary
        harness = [c for c in summary["crashes"] if not c["in_product"]]
        assert not harness, f"{fmt}: the harness itself broke:\n{describe_crashes(summary)}"


def test_cli_sample_flags_bad_exits_tracebacks_and_waits(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    commands = ["true", "exit 3", "python3 -c 'raise SystemExit(\"Traceback (most recent call last)\")'"]
    runs = run_cli([*commands, f"cat {fifo}"], jobs=2, env=dict(os.environ), cpu_limit_s=1)
    problems = {r.command: r.problem for r in runs}
    assert problems["true"] == ""
    assert problems["exit 3"].startswith("exit 3")
    assert problems[commands[2]].startswith("a traceback")
    assert problems[f"cat {fifo}"].startswith("waiting")
