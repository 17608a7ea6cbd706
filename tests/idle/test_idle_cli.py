"""`gpuwise idle replay` exactly as CONTRACTS §6, through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle"


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_replay_json_contract_no_stop(trace_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["idle", "replay", str(trace_fixtures / "landct_desktop_bursts_1s.csv"), "--json"])
    assert out["stop_at"] is None
    assert out["samples"] == 434
    assert isinstance(out["reason"], str) and out["reason"].startswith("no stop")


def test_replay_json_stop_in_trace_clock(trace_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv"
    out = _json(
        capsys,
        [
            "idle",
            "replay",
            str(path),
            "--json",
            "--window-min",
            "10",
            "--held-window-min",
            "10",
            "--warn-min",
            "2",
        ],
    )
    # the trace's own clock (UTC as recorded): last GPU work at 17:15:11, 10 min later
    assert out["stop_at"] == "2026-03-01T17:25:26.175"
    assert out["samples"] == 464
    assert "window 10 min reached" in str(out["reason"])


def test_cli_flags_win_over_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[idle]\nwindow_min = 30\nheld_window_min = 30\nwarn_min = 5\n", encoding="utf-8")
    path = FIXTURES / "job_then_idle_3h_h100_30s.csv"
    out = _json(capsys, ["idle", "replay", str(path), "--json", "--config", str(cfg)])
    assert out["stop_after_s"] == pytest.approx(2 * 3600 + 30 * 60, abs=60)
    out = _json(capsys, ["idle", "replay", str(path), "--json", "--config", str(cfg), "--window-min", "45"])
    assert out["stop_after_s"] == pytest.approx(2 * 3600 + 45 * 60, abs=60)


def test_human_output_has_summary_and_stretches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["idle", "replay", str(FIXTURES / "eval_phases_h100_30s.csv")]) == 0
    out = capsys.readouterr().out
    assert "would not stop" in out
    assert "idle stretches" in out and "70 min" in out


@pytest.mark.parametrize(
    "content",
    ["", "hello,world\n1,2\n", "timestamp, utilization.gpu [%]\nyesterday, 5 %\n", "\x00\x01\x02binary"],
    ids=["empty", "other-csv", "bad-timestamp", "binary"],
)
def test_not_a_trace_is_exit_2(tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.csv"
    path.write_text(content, encoding="utf-8")
    assert main(["idle", "replay", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err and "Error" in captured.err


def test_wandb_export_replays_like_its_companion(
    trace_fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The W&B export of the GB10 trace gives the same decision as its nvidia-smi form."""
    out = _json(
        capsys, ["idle", "replay", str(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.csv"), "--json"]
    )
    twin = _json(
        capsys,
        ["idle", "replay", str(trace_fixtures / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv"), "--json"],
    )
    assert (out["stop_at"], out["samples"], out["reason"]) == (
        twin["stop_at"],
        twin["samples"],
        twin["reason"],
    )


def test_a_csv_that_is_not_a_gpu_trace_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sales.csv"
    path.write_text("date,revenue\n2026-01-01,5\n", encoding="utf-8")
    assert main(["idle", "replay", str(path)]) == 2
    assert "To fix:" in capsys.readouterr().err


def test_missing_file_and_bad_option_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["idle", "replay", str(tmp_path / "nope.csv")]) == 2
    path = FIXTURES / "job_then_idle_3h_h100_30s.csv"
    assert main(["idle", "replay", str(path), "--threshold-pct", "200"]) == 2
    cfg = tmp_path / "c.toml"
    cfg.write_text("[idle]\nwindow_mins = 30\n", encoding="utf-8")
    assert main(["idle", "replay", str(path), "--config", str(cfg)]) == 2
    assert "window_min" in capsys.readouterr().err


def test_gpus_without_index_sharing_a_timestamp_all_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two GPUs, no index column, identical timestamps: GPU 1 trains the whole time. Keeping only the first
    row per timestamp would see an idle GPU 0 and stop a busy machine."""
    lines = ["timestamp, utilization.gpu [%], memory.used [MiB]"]
    for k in range(400):  # 3h20 at 30 s
        stamp = f"2024/03/01 {12 + (k * 30) // 3600:02d}:{(k * 30) % 3600 // 60:02d}:{k * 30 % 60:02d}.000"
        lines += [f"{stamp}, 0 %, 1 MiB", f"{stamp}, 97 %, 40000 MiB"]
    path = tmp_path / "two_gpus.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = _json(capsys, ["idle", "replay", str(path), "--json"])
    assert out["stop_at"] is None
    assert out["samples"] == 800 and out["gpus"] == [0, 1]
