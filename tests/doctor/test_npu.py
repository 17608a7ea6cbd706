"""The doctor on a Huawei Ascend machine: `npu-smi info` as published (tests/fixtures/npu-smi, with
provenance), read live through a stand-in npu-smi program and from `--replay`; what it says it can and
cannot check, and that an NPU-only machine is not told to install an NVIDIA driver."""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path

import pytest
from doctor_facts import healthy_facts
from npu_facts import NPU_FIXTURES, recorded_npus

from gpuwise.cli.main import main
from gpuwise.doctor.facts import DriverFacts, Facts
from gpuwise.doctor.npu import looks_like_npu_smi, parse_npu_smi_info
from gpuwise.doctor.npu_live import gather_npu
from gpuwise.doctor.rules import diagnose
from gpuwise.doctor.tables import load_tables


def test_each_published_output_reads_every_chip() -> None:
    b4 = recorded_npus("910b4-x2-npu-smi-24.1.1.txt")
    assert (b4.npu_smi_version, b4.driver_version) == ("24.1.1", "24.1.1")
    assert [(c.npu, c.chip, c.name, c.health, c.bus_id) for c in b4.chips] == [
        (0, 0, "910B4", "OK", "0000:C1:00.0"),
        (1, 0, "910B4", "OK", "0000:C2:00.0"),
    ]
    assert (b4.chips[0].power_watts, b4.chips[0].temperature_c) == (88.2, 30)
    assert (b4.chips[1].hbm_used_mb, b4.chips[1].hbm_total_mb) == (29356, 32768)  # "29356/ 32768"
    two_chip = recorded_npus("ascend910-2chip-npu-smi-26.0.rc2.txt")
    assert [(c.npu, c.chip) for c in two_chip.chips] == [(0, 0), (0, 1)]
    assert two_chip.chips[1].power_watts is None  # printed "-": unknown, not 0
    masked = recorded_npus("910b4-1-x2-npu-smi-25.2.0.txt")
    assert [c.bus_id for c in masked.chips] == ["0000:xx:00.0"] * 2 and not masked.problems


def test_nvidia_smi_output_is_not_taken_for_npu_smi(smi_fixtures: Path) -> None:
    for path in sorted(smi_fixtures.iterdir())[:20]:
        if path.is_file():
            assert not looks_like_npu_smi(path.read_text(encoding="utf-8", errors="replace")), path


def test_replay_says_what_it_checks_and_what_it_cannot(capsys: pytest.CaptureFixture[str]) -> None:
    path = NPU_FIXTURES / "910b4-x2-npu-smi-24.1.1.txt"
    assert main(["doctor", "--replay", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [found] = [f for f in doc["findings"] if f["id"] == "npu.found"]
    assert found["severity"] == "info" and "2 NPU(s), 2 chip(s) (2× 910B4)" in found["title"]
    assert "driver 24.1.1" in found["evidence"]
    assert "not checked on an NPU: CUDA" in found["fix"] and "CANN toolkit version" in found["fix"]
    assert not any(f["id"].startswith(("driver.", "gpu.", "cuda.")) for f in doc["findings"])
    assert doc["facts"]["npu"]["chips"][1]["bus_id"] == "0000:C2:00.0"


def test_replay_of_an_alarmed_chip_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (NPU_FIXTURES / "910b4-x2-npu-smi-24.1.1.txt").read_text(encoding="utf-8")
    # the published output with NPU 1's Health changed from OK to Alarm (same column width)
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("| 1     910B4"))
    lines[i] = lines[i].replace("| OK            |", "| Alarm         |")
    path = tmp_path / "npu-smi.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["doctor", "--replay", str(path)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "npu.unhealthy" in out and "Health Alarm" in out


def test_a_table_without_readable_rows_is_a_replay_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (NPU_FIXTURES / "910b4-x2-npu-smi-24.1.1.txt").read_text(encoding="utf-8").splitlines()[:6]
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert main(["doctor", "--replay", str(path), "--json"]) == 0
    ids = {f["id"]: f["severity"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert ids == {"replay.unparsed": "warn"}


def test_an_npu_only_machine_is_not_told_to_install_an_nvidia_driver() -> None:
    no_nvidia = replace(healthy_facts(), gpus=None, driver=DriverFacts(None, None, 0), npu=recorded_npus())
    ids = {f.id for f in diagnose(no_nvidia, load_tables()) if f.severity != "ok"}
    assert "gpu.none_found" not in ids and "npu.found" in ids
    without_npu = replace(no_nvidia, npu=None)
    assert "gpu.none_found" in {f.id for f in diagnose(without_npu, load_tables())}
    # NVIDIA hardware as well: its findings stay
    both = replace(no_nvidia, driver=DriverFacts(None, None, 2))
    assert "driver.missing" in {f.id for f in diagnose(both, load_tables())}


def _program(tmp_path: Path, body: str) -> str:
    script = tmp_path / "npu-smi"
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_live_reads_npu_smi_when_it_is_installed(tmp_path: Path) -> None:
    fixture = NPU_FIXTURES / "ascend910-2chip-npu-smi-26.0.rc2.txt"
    npus, lost = gather_npu(program=_program(tmp_path, f'[ "$1" = info ] && cat "{fixture}"\n'))
    assert npus is not None and lost == []
    assert npus == parse_npu_smi_info(fixture.read_text(encoding="utf-8"))


def test_live_npu_smi_failing_is_an_error_finding(tmp_path: Path) -> None:
    npus, _ = gather_npu(program=_program(tmp_path, 'echo "the driver did not answer" >&2\nexit 255\n'))
    assert npus is not None and npus.error == "npu-smi info: the driver did not answer"
    [finding] = [f for f in diagnose(Facts(npu=npus), load_tables()) if f.id == "npu.smi_failed"]
    assert finding.severity == "error"


def test_no_npu_smi_no_npu_facts(tmp_path: Path) -> None:
    assert gather_npu(program=str(tmp_path / "absent")) == (None, [])
