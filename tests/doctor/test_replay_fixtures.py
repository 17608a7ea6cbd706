"""Every recorded nvidia-smi output in tests/fixtures/recordings/nvidia-smi replays through `gpuwise doctor`
without a traceback and raises the findings its README describes ("What each recording should raise")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main

# file (relative to the fixtures folder) -> ids that must be raised at warn/error (or the given severity)
EXPECTED: dict[str, dict[str, set[str]]] = {
    "query-text/8x-h100__sw-power-cap-sw-thermal__535.183.01.txt": {"raise": {"gpu.throttle"}},
    "query-text/a10__remapped-rows-uncorrectable-pending__535.129.03.txt": {"raise": {"gpu.remap_pending"}},
    "query-text/titan-v__legacy-ecc-layout__560.35.03.txt": {"raise": set()},
    "query-text/h100__malformed-truncated__535.183.01.txt": {"raise": {"replay.unparsed"}},
    "table/geforce__fan-err__525.125.06.txt": {"raise": {"gpu.fan_failure"}},
    "table/8x-h100__idle__550.90.07.txt": {"raise": set()},
    "kernel-log/h100__xid-119-gsp-rpc-timeout.dmesg.log": {"raise": {"gpu.xid"}},
    "errors/no-devices-found.stdout.txt": {"raise": {"gpu.none_found"}},
    "errors/driver-not-communicating.stdout.txt": {"raise": {"driver.missing"}},
    "errors/nvml-init-unknown-error.stdout.txt": {"raise": {"driver.nvml_error"}},
    "errors/device-handle-unknown-error.stdout.txt": {"raise": {"gpu.lost"}},
    "xml/a10g__idle__515.105.01.xml": {"raise": {"gpu.pcie_degraded"}},
    "xml/a100-sxm4-80gb__mig-enabled__535.54.03.xml": {"raise": {"gpu.persistence_off"}},
    "xml/tesla-t4__2-processes__515.105.01.xml": {"no_error": set()},
    "xml/rtx-3080__load-65pct__595.58.03.xml": {"no_error": set()},
    "xml/2x-rtx-a5000__idle__590.44.01.xml": {"no_error": set()},
}


def _replay(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, object]]:
    code = main(["doctor", "--replay", str(path), "--json", *extra])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, json.loads(out.out)


def _all_fixture_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "README.md")


def test_every_fixture_replays(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No traceback, valid JSON per CONTRACTS §5, and the exit code follows the error findings."""
    files = _all_fixture_files(smi_fixtures)
    assert len(files) >= 20
    for path in files:
        code, data = _replay(path, capsys)
        findings = data["findings"]
        assert isinstance(findings, list)
        for finding in findings:
            assert set(finding) == {"id", "severity", "title", "evidence", "fix"}
            assert finding["severity"] in {"info", "warn", "error"}  # ok only with --all
        expected = 1 if any(f["severity"] == "error" for f in findings) else 0
        assert code == expected, path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_raises_what_readme_says(
    name: str, smi_fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data = _replay(smi_fixtures / name, capsys)
    raised = {f["id"] for f in data["findings"] if f["severity"] in {"warn", "error", "info"}}
    serious = {f["id"] for f in data["findings"] if f["severity"] in {"warn", "error"}}
    spec = EXPECTED[name]
    if "raise" in spec:
        assert spec["raise"] <= raised, data["findings"]
        if not spec["raise"]:
            assert serious == set(), data["findings"]  # README: none at warn/error
    errors = {f["id"] for f in data["findings"] if f["severity"] == "error"}
    if "no_error" in spec:
        assert errors == set(), data["findings"]
        assert code == 0


def test_captures_parse_idle_and_load(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in sorted((smi_fixtures / "captures").iterdir()):
        code, data = _replay(path, capsys)
        assert code == 0, data["findings"]  # README: none at error
        assert data["facts"]["gpu_reader"]["snapshots"] == 2  # idle and load
        assert data["gpus"], path
        assert not [f for f in data["findings"] if f["id"] == "replay.unparsed"]


def test_mig_capture_reports_mig_devices(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, data = _replay(smi_fixtures / "captures" / "linux-x86_64__nvidia-h100-mig__590.48.01.txt", capsys)
    gpu = data["gpus"][0]
    assert gpu["mig_mode"] is True
    assert len(gpu["mig_devices"]) == 4  # 3g.40gb, 2g.20gb, 2x 1g.10gb
    assert all(isinstance(m["memory_total_bytes"], int) for m in gpu["mig_devices"])
    assert {} not in gpu["mig_devices"][0].values()  # "not supported" is null, never {}


def test_xid_finding_uses_the_table(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, data = _replay(smi_fixtures / "kernel-log" / "h100__xid-119-gsp-rpc-timeout.dmesg.log", capsys)
    (xid,) = [f for f in data["findings"] if f["id"] == "gpu.xid"]
    assert xid["severity"] == "error"  # reset_gpu in xid-errors.csv
    assert "GSP_RPC_TIMEOUT" in xid["title"]
    assert "Xid (PCI:0000:9b:00): 119" in xid["evidence"]
    assert "RESET_GPU" in xid["fix"]


def test_malformed_recording_still_runs_the_rules(
    smi_fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, data = _replay(
        smi_fixtures / "query-text" / "h100__malformed-truncated__535.183.01.txt", capsys, "--all"
    )
    ids = {f["id"] for f in data["findings"]}
    assert "replay.unparsed" in ids
    assert {"gpu.throttle", "gpu.persistence_off"} & ids  # the readable part was still checked
    assert len(data["gpus"]) == 1


def test_mig_utilization_is_not_zero(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MIG hides utilization: it must stay unknown (null), never read as 0 % (idle)."""
    _, data = _replay(smi_fixtures / "xml" / "a100-sxm4-80gb__mig-enabled__535.54.03.xml", capsys)
    assert data["gpus"][0]["util_gpu_pct"] is None
    assert data["gpus"][0]["mig_mode"] is True


def test_whole_folder_replays(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _replay(smi_fixtures / "errors", capsys)
    ids = {f["id"] for f in data["findings"]}
    assert {"driver.missing", "gpu.none_found", "driver.nvml_error"} <= ids
    assert code == 1


@pytest.mark.parametrize("content", ["", "hello, this is not nvidia-smi output\n", '{"json": true}\n'])
def test_not_a_recording_is_bad_input(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.txt"
    path.write_text(content)
    assert main(["doctor", "--replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "To fix" in err


def test_missing_replay_path_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--replay", str(tmp_path / "absent.xml")]) == 2
    assert "does not exist" in capsys.readouterr().err
