"""`gpuwise idle providers [--json]` through the real CLI entry point, and the stop keys of `[idle]`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.errors import ConfigError
from gpuwise.idle.settings import load_settings


def test_providers_json_lists_every_action_with_bill_and_disk(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["idle", "providers", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_id = {r["provider"]: r for r in rows}
    wanted = {"runpod", "vast", "lambda", "paperspace", "jarvislabs", "nebius", "hyperstack", "tencent"}
    assert wanted | {"huawei", "aliyun", "aws", "gcp", "azure", "command", "shutdown"} == set(by_id)
    for row in rows:
        assert {"provider", "action", "stops_billing", "keeps_disk", "needs"} <= set(row)
    assert by_id["lambda"]["keeps_disk"] is False and "terminate" in by_id["lambda"]["action"]
    assert "STOP_CHARGING" in by_id["tencent"]["action"]
    assert by_id["hyperstack"]["action"].endswith("/hibernate")
    assert by_id["shutdown"]["stops_billing"] is None


def test_providers_text_says_what_happens_to_the_disk(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["idle", "providers"]) == 0
    out = capsys.readouterr().out
    assert 'lambda (action = "lambda")' in out and "LOST, except a persistent filesystem" in out
    assert "[idle] command" in out  # brackets printed, not eaten as markup


def test_stop_keys_in_config() -> None:
    s = load_settings({"idle": {"action": "vast", "fallback": ["shutdown"], "stop_attempts": 3}})
    assert (s.action, s.fallback, s.stop_attempts) == ("vast", ("shutdown",), 3)
    for bad in (
        {"stop_attempts": 0},
        {"fallback": ["shutdwn"]},
        {"api_url": "ftp://x"},
        {"action": "lambda"},
    ):
        with pytest.raises(ConfigError):
            load_settings({"idle": bad})


def test_bad_stop_key_is_exit_2_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[idle]\nfallback = ["shutdwn"]\n', encoding="utf-8")
    assert main(["idle", "status", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "Did you mean 'shutdown'?" in err and "Traceback" not in err


def _clean_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("RUNPOD_", "VAST_", "CONTAINER_", "LAMBDA_", "TENCENTCLOUD_", "HUAWEICLOUD_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))


def _this_machine(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    argv = ["idle", "providers", "--this-machine", "--json", "--metadata-url", "http://127.0.0.1:9", *extra]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_this_machine_on_a_runpod_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.setenv("RUNPOD_POD_ID", "pod-9")
    monkeypatch.setenv("RUNPOD_API_KEY", "rp-NEVER-PRINTED")
    out = _this_machine(capsys)
    assert out["provider"] == "runpod" and out["ids"] == {"instance_id": "pod-9"} and out["ready"] is True
    assert out["steps"] == ["RunPod: stop pod pod-9", "shutdown -h now"]
    assert out["credentials"] == "found in RUNPOD_API_KEY"
    assert main(["idle", "providers", "--this-machine", "--metadata-url", "http://127.0.0.1:9"]) == 0
    text = capsys.readouterr().out
    assert "rp-NEVER-PRINTED" not in text and "ready" in text


def test_this_machine_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.setenv("VAST_CONTAINERLABEL", "C.555")
    out = _this_machine(capsys)
    assert out["provider"] == "vast" and out["ready"] is False
    assert "VAST_API_KEY" in str(out["credentials"])
    (tmp_path / ".config" / "vastai").mkdir(parents=True)
    (tmp_path / ".config" / "vastai" / "vast_api_key").write_text("k\n", encoding="utf-8")
    assert _this_machine(capsys)["ready"] is True
    monkeypatch.delenv("VAST_CONTAINERLABEL")
    config = tmp_path / "config.toml"
    config.write_text("[idle]\nfallback = []\n", encoding="utf-8")
    out = _this_machine(capsys, "--config", str(config))
    assert out["provider"] is None and out["steps"] == [] and out["ready"] is False
