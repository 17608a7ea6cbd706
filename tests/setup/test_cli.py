"""`gpuwise setup` on the command line: detection from recordings, --check, --json, and bad input (exit 2,
one paragraph with the fix, no traceback)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.doctor.tables import load_tables
from gpuwise.setup.check import MachineState, needed_steps
from gpuwise.setup.choose import choose_target, gpu_target, resolve_system
from gpuwise.setup.osinfo import os_id_from, parse_os_release, read_os_release
from gpuwise.setup.script import steps_for
from gpuwise.setup.tables import load_setup_tables


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["setup", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--os", "fedora-40", "--gpu", "H100"], ["Unknown OS 'fedora-40'", "--os ubuntu-22.04"]),
        (["--os", "ubuntu-22.04", "--gpu", "H10O"], ["Unknown GPU 'H10O'", "Did you mean 'H100'"]),
        (["--os", "ubuntu-22.04", "--gpu", "H100", "--framework", "torch==9.9"], ["Unknown PyTorch version"]),
        (["--os", "ubuntu-22.04", "--gpu", "H100", "--framework", "jax==0.4"], ["not torch==VERSION"]),
        (["--os", "ubuntu-22.04", "--gpu", "H100", "--driver", "999"], ["Unknown driver branch '999'"]),
        (
            ["--os", "ubuntu-22.04", "--gpu", "H100", "--driver", "latest"],
            ["--driver 'latest' is not a driver"],
        ),
        (["--os", "ubuntu-22.04", "--gpu", "MI300X"], ["not an NVIDIA GPU"]),
        (["--os", "ubuntu-22.04", "--gpu", "K80"], ["Kepler needs branches up to 470;"]),  # was "any to 470"
        (
            ["--os", "ubuntu-22.04", "--gpu", "B200", "--driver", "550"],
            ["predates Blackwell", "use --driver 570"],
        ),
        (
            ["--os", "ubuntu-22.04", "--gpu", "H100", "--framework", "torch==2.11", "--driver", "535"],
            ["branch 535 ships CUDA 12.2", "--driver 560", "--framework torch==2.7"],
        ),
    ],
)
def test_bad_input_exits_2_with_the_reason_and_the_fix(
    capsys: pytest.CaptureFixture[str], args: list[str], words: list[str]
) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert "To fix:" in err and "Traceback" not in err
    flat = " ".join(err.split())
    for word in words:
        assert word in flat


@pytest.mark.parametrize("given", ["535.104.05", "R535", " 535.104 "])
def test_a_full_driver_version_names_its_branch(capsys: pytest.CaptureFixture[str], given: str) -> None:
    """People copy the version nvidia-smi or a forum shows: 535.104.05 is branch 535 (it was refused with
    a type error about integers)."""
    args = ["--os", "ubuntu-22.04", "--gpu", "H100", "--json"]
    code, out, err = run(capsys, *args, "--driver", given)
    assert code == 0, err
    assert json.loads(out)["script"] == json.loads(run(capsys, *args, "--driver", "535")[1])["script"]
    assert json.loads(out)["driver_branch"] == 535


def test_a_detected_gpu_the_tables_lack_is_not_called_a_typo(
    capsys: pytest.CaptureFixture[str], smi_fixtures: Path
) -> None:
    """A TITAN V recorded without its compute capability: it said "Unknown GPU 'NVIDIA TITAN V'. Did you
    mean 'NVIDIA T4'?" and to "use a name", to someone who typed none."""
    titan = smi_fixtures / "query-text" / "titan-v__legacy-ecc-layout__560.35.03.txt"
    code, out, err = run(capsys, "--os", "ubuntu-22.04", "--replay", str(titan))
    flat = " ".join(err.split())
    assert code == 2 and out == ""
    assert "'NVIDIA TITAN V', is not in gpuwise's GPU table" in flat and "--gpu" in flat
    assert "Did you mean" not in flat


@pytest.mark.parametrize(
    ("given", "pip", "installed"),
    [
        ("torch==2.8.0", '"torch==2.8.0"', "torch.__version__.split('+')[0] == '2.8.0'"),
        ("torch==2.8.0+cu128", '"torch==2.8.0"', "torch.__version__.split('+')[0] == '2.8.0'"),
        ("torch==2.8", '"torch==2.8.*"', "torch.__version__.startswith('2.8.')"),
    ],
)
def test_a_patch_asked_for_is_the_patch_installed(
    capsys: pytest.CaptureFixture[str], given: str, pip: str, installed: str
) -> None:
    """--framework torch==2.8.0 installed torch==2.8.* (the newest 2.8.x) and called 2.8.x done: the patch
    asked for is what pip installs and what the step checks; a release alone still takes its newest."""
    code, out, _err = run(capsys, "--os", "ubuntu-22.04", "--gpu", "H100", "--framework", given)
    assert code == 0
    assert f"-m pip install {pip} --index-url" in out and installed in out


def test_the_gpu_and_driver_come_from_a_recording(
    capsys: pytest.CaptureFixture[str], smi_fixtures: Path
) -> None:
    xml = smi_fixtures / "xml" / "tesla-t4__2-processes__515.105.01.xml"
    code, out, _ = run(capsys, "--os", "rocky-9", "--replay", str(xml), "--json")
    assert code == 0
    answer = json.loads(out)
    assert (answer["gpu"], answer["architecture"], answer["driver_branch"]) == ("T4", "Turing", 580)
    assert answer["script"].startswith("#!/usr/bin/env bash")
    assert {r["what"] for r in answer["reasons"]} == {"driver", "framework", "cuda", "cudnn"}


def test_a_recording_without_gpus_asks_for_gpu(
    capsys: pytest.CaptureFixture[str], smi_fixtures: Path
) -> None:
    code, _, err = run(
        capsys,
        "--os",
        "ubuntu-22.04",
        "--replay",
        str(smi_fixtures / "errors" / "no-devices-found.stdout.txt"),
    )
    assert code == 2 and "No devices were found" in err and "--gpu H100" in err


def test_check_lists_only_what_a_recorded_machine_still_needs(
    capsys: pytest.CaptureFixture[str], smi_fixtures: Path
) -> None:
    """A 590 driver already serves an H100 (branch 580 or newer): the driver step is done, the rest of the
    stack cannot be seen in a recording, so it is listed (and exit 1 says work is left)."""
    capture = smi_fixtures / "captures" / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
    code, out, _ = run(capsys, "--os", "ubuntu-22.04", "--replay", str(capture), "--check")
    assert code == 1
    assert "# Already done on this machine: NVIDIA driver branch 580" in out
    assert "nvidia-open-580" not in out and "cuda-toolkit-13-0" in out
    code, out, _ = run(capsys, "--os", "ubuntu-22.04", "--replay", str(capture), "--check", "--json")
    answer = json.loads(out)
    assert answer["done"] == ["NVIDIA driver branch 580"] and "CUDA toolkit 13.0" in answer["not_observed"]


def test_an_old_driver_on_record_is_a_needed_step(
    capsys: pytest.CaptureFixture[str], smi_fixtures: Path
) -> None:
    a100 = smi_fixtures / "xml" / "a100-sxm4-80gb__mig-enabled__535.54.03.xml"
    code, out, _ = run(capsys, "--os", "ubuntu-22.04", "--replay", str(a100), "--check")
    assert code == 1 and "nvidia-open-580" in out


def test_needed_steps_is_empty_when_everything_was_seen_in_place() -> None:
    tables, setup_tables = load_tables(), load_setup_tables()
    target = choose_target(
        resolve_system("ubuntu-22.04", setup_tables),
        gpu_target("H100", None, setup_tables),
        None,
        None,
        container=False,
        tables=tables,
        setup_tables=setup_tables,
    )
    steps = steps_for(target, container=False)
    state = MachineState(
        driver_version="580.95.05",
        existing_paths=frozenset({"/usr/local/cuda-13.0/bin/nvcc"}),
        looked_at=frozenset({"/usr/local/cuda-13.0/bin/nvcc", "package cudnn9-cuda-13"}),
        packages=frozenset({"cudnn9-cuda-13"}),
        torch=("2.14.1+cu130", "13.0"),
    )
    needed, done, unknown = needed_steps(target, steps, state)
    assert needed == [] and unknown == [] and len(done) == 4
    # a torch of another CUDA build is a step still needed, and so is the repository only when a package is
    needed, _, _ = needed_steps(target, steps, replace(state, torch=("2.14.1+cu126", "12.6")))
    assert [s.id for s in needed] == ["framework"]
    needed, _, _ = needed_steps(target, steps, replace(state, driver_version="575.57.08"))
    assert [s.id for s in needed] == ["repo", "driver"]


def test_check_exits_0_and_says_so_when_nothing_is_left(
    capsys: pytest.CaptureFixture[str], smi_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI with an injected state gatherer (our own interface): nothing needed -> exit 0."""
    from gpuwise.setup import live

    def everything_done(target: object, *, driver_version: str | None, venv: Path) -> MachineState:
        return MachineState(
            driver_version="580.95.05",
            existing_paths=frozenset({"/usr/local/cuda-13.0/bin/nvcc"}),
            looked_at=frozenset({"/usr/local/cuda-13.0/bin/nvcc", "package cudnn9-cuda-13"}),
            packages=frozenset({"cudnn9-cuda-13"}),
            torch=("2.14.0+cu130", "13.0"),
        )

    monkeypatch.setattr(live, "gather_state", everything_done)
    code, out, _ = run(capsys, "--os", "ubuntu-22.04", "--gpu", "H100", "--check")
    assert code == 0 and out.startswith("# Nothing to do")


def test_os_release_is_read_as_a_shell_would() -> None:
    text = 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel fedora"\nVERSION_ID="9.4"\n# comment\nbad\n'
    assert os_id_from(parse_os_release(text)) == "rocky-9"
    assert os_id_from(parse_os_release("ID=ubuntu\nVERSION_ID='22.04'\n")) == "ubuntu-22.04"
    assert os_id_from(parse_os_release('ID=amzn\nVERSION_ID="2023"\n')) == "amzn-2023"
    assert os_id_from(parse_os_release("ID=debian\n")) is None
    assert read_os_release(Path("/nonexistent/os-release")) is None


@pytest.mark.parametrize(("given", "cuda"), [("torch==2.8.0+cu126", "12.6"), ("torch==2.8+cu129", "12.9")])
def test_a_cuda_build_asked_for_is_the_build_installed(
    capsys: pytest.CaptureFixture[str], given: str, cuda: str
) -> None:
    """--framework torch==2.8.0+cu126 installed the cu128 build (the suffix was dropped silently): the build
    asked for is the one chosen, installed from its index and checked by its CUDA."""
    code, out, _err = run(capsys, "--os", "ubuntu-22.04", "--gpu", "H100", "--framework", given)
    variant = given.rsplit("+", 1)[1]
    assert code == 0
    assert f"--index-url https://download.pytorch.org/whl/{variant}" in out
    assert f"torch.version.cuda == '{cuda}'" in out and f"CUDA {cuda}, torch 2.8 ({variant})" in out


def test_a_cuda_build_the_release_lacks_is_refused_with_its_builds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--os", "ubuntu-22.04", "--gpu", "H100", "--framework", "torch==2.8.0+cpu")
    flat = " ".join(err.split())
    assert code == 2 and out == "" and "Traceback" not in err
    assert "Unknown PyTorch 2.8 build 'cpu'" in flat and "cu126, cu128, cu129" in flat
    assert "To fix: give one of those, e.g. --framework torch==2.8+cu129" in flat


def test_a_cuda_build_the_driver_cannot_run_names_the_driver_that_can(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The build asked for is held to the driver rules like any other choice: cu128 needs branch 570."""
    args = ("--os", "ubuntu-22.04", "--gpu", "H100", "--framework", "torch==2.8.0+cu128", "--driver", "535")
    code, _out, err = run(capsys, *args)
    flat = " ".join(err.split())
    assert code == 2 and "use --driver 570" in flat and "CUDA 12.8;" in flat


@pytest.mark.parametrize(
    ("given", "name"), [("rocky-9.4", "Rocky Linux 9"), ("RHEL-8.10", "Red Hat Enterprise")]
)
def test_an_os_given_as_os_release_spells_it_is_its_major(
    capsys: pytest.CaptureFixture[str], given: str, name: str
) -> None:
    """`--os rocky-9.4` (ID-VERSION_ID from Rocky 9.4's /etc/os-release, as the error's fix says to give
    it) was an unknown OS, though the detected one is rocky-9: a typed id is read as detection reads it."""
    code, out, err = run(capsys, "--os", given, "--gpu", "H100")
    assert code == 0, err
    assert f"setup for {name}" in out


def test_no_gpu_read_says_why_in_one_sentence(capsys: pytest.CaptureFixture[str], smi_fixtures: Path) -> None:
    """The reader's own reason came in brackets inside another bracket ("No GPU could be read (No NVIDIA
    driver found (Is this … (libnvidia-ml.so …))))"): it follows a colon now."""
    broken = smi_fixtures / "errors" / "driver-not-communicating.stdout.txt"
    code, out, err = run(capsys, "--os", "ubuntu-22.04", "--replay", str(broken))
    flat = " ".join(err.split())
    assert code == 2 and out == ""
    assert "No GPU could be read: NVIDIA-SMI has failed" in flat and "--gpu H100" in flat
