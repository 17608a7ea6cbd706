"""`gpuwise doctor` end to end: the live run on this machine, --all, --json, --fingerprint and --compare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwise.cli.main import main

RUN = [sys.executable, "-c", "from gpuwise.cli.main import run; run()"]


def test_live_run_follows_the_contract(tmp_path: Path) -> None:
    """The live doctor on whatever machine runs the tests (usually one without a GPU): no root, exit 1
    exactly when a finding is an error, and every check that could not run is said. (How long it takes is
    not asserted here: it imports the framework to probe it, which a loaded machine slows threefold; the
    60 s timeout only catches a hang.)"""
    done = subprocess.run(
        [*RUN, "doctor", "--json", "--path", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr
    data = json.loads(done.stdout)
    assert set(data) >= {"findings", "gpus", "facts"}
    errors = [f for f in data["findings"] if f["severity"] == "error"]
    assert done.returncode == (1 if errors else 0)
    facts = data["facts"]
    assert isinstance(facts["unreadable"], list)
    assert any(d["role"] == "dataset" and d["path"] == str(tmp_path) for d in facts["disks"])
    if not data["gpus"]:
        # No GPU answered: the reader's own message is kept and a driver/GPU finding explains it.
        assert facts["gpu_reader"]["errors"]
        assert {f["id"] for f in errors} & {
            "driver.missing",
            "gpu.none_found",
            "driver.nvml_error",
            "container.no_gpu_access",
            "driver.library_mismatch",
        }


def test_live_text_report_has_a_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--all"])
    out = capsys.readouterr().out
    assert "Verdict:" in out
    assert code in (0, 1)
    assert ("NOT OK" in out) == (code == 1)


def test_all_adds_ok_findings(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = smi_fixtures / "xml" / "2x-rtx-a5000__idle__590.44.01.xml"
    main(["doctor", "--replay", str(path), "--json"])
    default = json.loads(capsys.readouterr().out)["findings"]
    main(["doctor", "--replay", str(path), "--json", "--all"])
    everything = json.loads(capsys.readouterr().out)["findings"]
    assert all(f["severity"] != "ok" for f in default)
    ok_ids = {f["id"] for f in everything if f["severity"] == "ok"}
    assert {"gpu.throttle", "gpu.pcie_degraded", "gpu.remap_pending", "replay.unparsed"} <= ok_ids


def test_text_report_groups_by_severity(smi_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--replay", str(smi_fixtures / "query-text"), "--all"])
    out = capsys.readouterr().out
    assert code == 1  # the A10 needs a reset
    positions = [out.index(h) for h in ("Errors (", "Warnings (", "Notes (", "Passed (")]
    assert positions == sorted(positions)
    assert "gpu.remap_pending" in out and "nvidia-smi -r" in out
    assert out.rstrip().splitlines()[-1].startswith("Verdict: NOT OK")


# ------------------------------------------------------------------------------------------ fingerprint


def _fingerprint(path: Path, capsys: pytest.CaptureFixture[str], out: Path) -> dict[str, object]:
    assert main(["doctor", "--replay", str(path), "--fingerprint"]) == 0
    text = capsys.readouterr().out
    out.write_text(text)
    data: dict[str, object] = json.loads(text)
    return data


def test_fingerprint_is_stable_json(
    smi_fixtures: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = smi_fixtures / "table" / "8x-h100__idle__550.90.07.txt"
    first = _fingerprint(path, capsys, tmp_path / "a.json")
    second = _fingerprint(path, capsys, tmp_path / "b.json")
    assert first == second
    assert first["driver"] == "550.90.07" and first["cuda_driver"] == "12.4"
    assert first["gpu_count"] == 8
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    assert main(["doctor", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert "identical" in capsys.readouterr().out


def test_compare_differing_nodes_exits_1(
    smi_fixtures: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _fingerprint(smi_fixtures / "table" / "8x-h100__idle__550.90.07.txt", capsys, tmp_path / "a.json")
    _fingerprint(
        smi_fixtures / "query-text" / "8x-h100__sw-power-cap-sw-thermal__535.183.01.txt",
        capsys,
        tmp_path / "b.json",
    )
    code = main(["doctor", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["identical_where_needed"] is False
    keys = {d["key"]: d for d in data["differences"]}
    assert keys["driver"]["a"] == "550.90.07" and keys["driver"]["b"] == "535.183.01"
    assert keys["driver"]["must_match"] is True


def test_compare_only_hostnames_differ_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = {
        "schema": "gpuwise-doctor-fingerprint/1",
        "driver": "550.90.07",
        "gpu_count": 8,
        "frameworks": {"pytorch": {"version": "2.5.1", "nccl": "2.21.5"}},
    }
    (tmp_path / "a.json").write_text(json.dumps({**base, "hostname": "node-a", "kernel": "5.15.0-105"}))
    (tmp_path / "b.json").write_text(json.dumps({**base, "hostname": "node-b", "kernel": "5.15.0-107"}))
    assert main(["doctor", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "hostname" in out and "Compatible" in out
    (tmp_path / "c.json").write_text(
        json.dumps(
            {**base, "hostname": "node-c", "frameworks": {"pytorch": {"version": "2.5.1", "nccl": "2.20.5"}}}
        )
    )
    assert main(["doctor", "--compare", str(tmp_path / "a.json"), str(tmp_path / "c.json")]) == 1
    assert "frameworks.pytorch.nccl" in capsys.readouterr().out


@pytest.mark.parametrize("content", [None, "not json", "[1, 2]", '{"driver": "550"}'])
def test_compare_unreadable_file_is_bad_input(
    tmp_path: Path, content: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"schema": "gpuwise-doctor-fingerprint/1"}))
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    assert main(["doctor", "--compare", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "To fix" in err and "Traceback" not in err


def test_help_mentions_every_option() -> None:
    done = subprocess.run([*RUN, "doctor", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    for option in ("--replay", "--json", "--all", "--path", "--fingerprint", "--compare", "--python"):
        assert option in done.stdout


def test_report_lists_what_could_not_be_read(capsys: pytest.CaptureFixture[str]) -> None:
    """Checks that could not run are named in the text report, not silently dropped."""
    from gpuwise.cli.doctor import _print_report
    from gpuwise.doctor.facts import Facts

    facts = Facts(
        unreadable=("kernel log (Xid errors): dmesg: read kernel buffer failed: Operation not permitted",)
    )
    _print_report(facts, [], [])
    out = capsys.readouterr().out
    assert "Could not read" in out and "Operation not permitted" in out
    assert "Verdict: OK" in out


@pytest.mark.parametrize(
    ("lang", "recording"),
    [
        ("en", "errors/driver-not-communicating.stdout.txt"),  # fix names nvidia-driver-<branch>-server
        ("zh", "query-text/8x-h100__sw-power-cap-sw-thermal__535.183.01.txt"),  # Chinese has no spaces
    ],
)
def test_report_at_80_columns_cuts_no_fix_short(smi_fixtures: Path, lang: str, recording: str) -> None:
    """At 80 columns a word wider than its cell (a package name, a path, a run of Chinese) is folded onto
    the next line, never cut with "…": the fix is a command people copy. (Neither recording's findings
    contain "…" themselves.)"""
    done = subprocess.run(
        [*RUN, "--lang", lang, "doctor", "--replay", str(smi_fixtures / recording)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "80", "LANGUAGE": "", "LC_ALL": "", "LANG": "C.UTF-8"},
    )
    assert "Traceback" not in done.stderr
    assert "…" not in done.stdout
    if lang == "en":
        assert "nvidia-driver-<branch>-serve" in done.stdout.replace(" ", "")


def test_compare_at_80_columns_says_which_file_is_which(smi_fixtures: Path, tmp_path: Path) -> None:
    """Two long paths as column headers were both cut to '/tmp/…/no…': the table's A and B are named in
    full below it."""
    folder = tmp_path / "fingerprints-of-the-training-cluster"
    folder.mkdir()
    a, b = folder / "node-a-in-us-east.json", folder / "node-b-in-us-east.json"
    for path, recording in ((a, "table/8x-h100__idle__550.90.07.txt"), (b, "query-text")):
        done = subprocess.run(
            [*RUN, "doctor", "--fingerprint", "--replay", str(smi_fixtures / recording)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        path.write_text(done.stdout, encoding="utf-8")
    done = subprocess.run(
        [*RUN, "doctor", "--compare", str(a), str(b)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "80", "LANGUAGE": "", "LC_ALL": "", "LANG": "C.UTF-8"},
    )
    assert done.returncode == 1, done.stderr
    assert f"A: {a}" in done.stdout and f"B: {b}" in done.stdout
    assert "…" not in done.stdout


def test_the_live_facts_keep_cuda_visible_devices() -> None:
    """The probes inherit CUDA_VISIBLE_DEVICES, so the facts record it for the rule that names it."""
    done = subprocess.run(
        [*RUN, "doctor", "--json", "--timeout-s", "5"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert json.loads(done.stdout)["facts"]["system"]["cuda_visible_devices"] == ""
