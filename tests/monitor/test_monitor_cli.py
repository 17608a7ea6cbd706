"""`gpuwise monitor` from the command line: --once, --json, --record, --since, and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from monitor_fakes import EIGHT_GPU_CSV

from gpuwise.cli.main import main
from gpuwise.gpu.smi_csv import read_query_csv


def test_once_json_has_every_gpu_explicit_status_and_hints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["monitor", "--replay", str(EIGHT_GPU_CSV), "--once", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["index"] for g in out["gpus"]] == list(range(8))
    g0 = out["gpus"][0]
    assert g0["util_gpu_pct"] == 97.0
    assert g0["fan_speed_pct"] is None and g0["fan_speed_pct_status"] == "not supported"
    assert "util_gpu_pct_status" not in g0
    hints = {(h["id"], h["gpu"]) for h in out["hints"]}
    assert ("gpu_idle_while_peers_busy", 7) in hints
    assert ("throttled", 3) in hints
    assert {"id", "gpu", "severity", "message", "evidence"} <= set(out["hints"][0])


def test_json_of_a_mig_gpu_says_not_supported(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    xml = smi_fixtures / "xml" / "a100-sxm4-80gb__mig-enabled__535.54.03.xml"
    assert main(["monitor", "--replay", str(xml), "--json"]) == 0
    (g,) = json.loads(capsys.readouterr().out)["gpus"]
    assert g["mig_mode"] is True
    assert g["util_gpu_pct"] is None and g["util_gpu_pct_status"] == "not supported"


def test_once_text_names_every_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["monitor", "--replay", str(EIGHT_GPU_CSV), "--once"]) == 0
    out = capsys.readouterr().out
    for i in range(8):
        assert f"GPU {i}" in out
    assert "hints" in out


def test_record_writes_a_replayable_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = tmp_path / "rec.csv"
    assert main(["monitor", "--replay", str(EIGHT_GPU_CSV), "--once", "--record", str(rec)]) == 0
    back = read_query_csv(rec)
    assert [s.index for s in back] == list(range(8))
    assert back[0].util_gpu_pct == 97.0
    capsys.readouterr()
    # and the recording replays
    assert main(["monitor", "--replay", str(rec), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["gpus"]) == 8


def test_live_with_history_then_since(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[monitor]\nhistory_interval_s = 0.01\nhistory_retention_days = 3650\n")
    args = ["monitor", "--replay", str(EIGHT_GPU_CSV), "--count", "3", "--interval", "0.05", "--history"]
    assert main([*args, "--config", str(cfg)]) == 0
    capsys.readouterr()
    assert main(["monitor", "--since", "3650d", "--json", "--config", str(cfg)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [g["gpu"] for g in summary["gpus"]] == list(range(8))
    assert summary["gpus"][0]["max_util_pct"] >= 97.0
    assert summary["gpus"][7]["mean_util_pct"] == 0.0
    assert any(e["event_id"] == "gpu_idle_while_peers_busy" for e in summary["events"])
    assert main(["monitor", "--since", "3650d", "--config", str(cfg)]) == 0
    assert "history" in capsys.readouterr().out


def test_since_with_no_history_yet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["monitor", "--since", "2h", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"] == []


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--since", "yesterday"], "not a duration"),
        (["--replay", "/no/such/file.csv", "--once"], "does not exist"),
        (["--interval", "0", "--replay", str(EIGHT_GPU_CSV)], "--interval"),
        (["--config", "/no/such/config.toml", "--once"], "does not exist"),
    ],
)
def test_bad_input_is_exit_2_with_one_message(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["monitor", *args]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err


def test_bad_alerts_section_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[alerts]\nfor_samples = -1\n")
    assert main(["monitor", "--replay", str(EIGHT_GPU_CSV), "--once", "--config", str(cfg)]) == 2
    assert "alerts.for_samples" in capsys.readouterr().err


def test_history_file_lands_in_the_data_dir(tmp_path: Path) -> None:
    from gpuwise import paths

    assert str(paths.history_db()).startswith(os.environ["GPUWISE_DATA_DIR"])
