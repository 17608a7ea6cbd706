"""The scripts `gpuwise setup` prints: valid bash that shellcheck accepts, a check before every install,
every version choice explained in a comment.

shellcheck runs once over a sample of scripts (one per package family and OS quirk, native and container,
and a `--check` subset) to keep the test time small.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuwise.doctor.tables import load_tables
from gpuwise.setup.check import MachineState, needed_steps
from gpuwise.setup.choose import Target, choose_target, gpu_target, resolve_system
from gpuwise.setup.script import render, steps_for
from gpuwise.setup.tables import load_setup_tables

SAMPLE = [
    ("ubuntu-22.04", "H100", None, False),
    ("ubuntu-24.04", "B200", None, True),
    ("ubuntu-20.04", "V100", "2.4", False),  # proprietary modules, cuDNN 9, capped branch
    ("debian-12", "L4", "2.0", False),  # a cuDNN 8 build: no system cuDNN step
    ("rocky-9", "A100", None, True),
    ("rhel-8", "T4", None, False),
    ("amzn-2023", "A10G", None, True),
    ("debian-11", "V100", None, True),
]


def _target(os_id: str, gpu: str, version: str | None, container: bool) -> Target:
    tables, setup_tables = load_tables(), load_setup_tables()
    return choose_target(
        resolve_system(os_id, setup_tables),
        gpu_target(gpu, None, setup_tables),
        version,
        None,
        container=container,
        tables=tables,
        setup_tables=setup_tables,
    )


def _script(os_id: str, gpu: str, version: str | None, container: bool) -> str:
    target = _target(os_id, gpu, version, container)
    return render(target, steps_for(target, container=container), container=container, version="test")


def _scripts(tmp_path: Path) -> list[Path]:
    paths = []
    for os_id, gpu, version, container in SAMPLE:
        path = tmp_path / f"{os_id}-{gpu}-{'container' if container else 'native'}.sh"
        path.write_text(_script(os_id, gpu, version, container), encoding="utf-8")
        paths.append(path)
    target = _target("ubuntu-22.04", "H100", None, False)
    steps = steps_for(target, container=False)
    needed, done, _ = needed_steps(target, steps, MachineState(driver_version="590.48.01"))
    subset = tmp_path / "check-subset.sh"
    subset.write_text(render(target, needed, container=False, version="t", done_already=tuple(done)))
    return [*paths, subset]


def test_every_sampled_script_passes_shellcheck_and_bash_n(
    tmp_path: Path, need_program: Callable[[str], str]
) -> None:
    shellcheck = need_program("shellcheck")
    scripts = _scripts(tmp_path)
    for script in scripts:
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
        assert syntax.returncode == 0, f"{script.name}: {syntax.stderr}"
    lint = subprocess.run(
        [shellcheck, "--shell=bash", "--severity=style", *map(str, scripts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout


def test_shellcheck_would_catch_a_broken_script(tmp_path: Path, need_program: Callable[[str], str]) -> None:
    """The lint test can fail: an unquoted variable in a generated line is reported."""
    shellcheck = need_program("shellcheck")
    bad = tmp_path / "bad.sh"
    bad.write_text(
        _script("ubuntu-22.04", "H100", None, False).replace(
            '"$VENV/bin/python" -m pip', "$VENV/bin/python -m pip"
        )
    )
    lint = subprocess.run([shellcheck, str(bad)], capture_output=True, text=True, check=False)
    assert lint.returncode != 0 and "SC2086" in lint.stdout


@pytest.mark.parametrize(("os_id", "gpu", "version", "container"), SAMPLE)
def test_every_install_sits_behind_its_check(
    os_id: str, gpu: str, version: str | None, container: bool
) -> None:
    """Idempotent by construction: outside the helper functions, a line at the top level is a comment, an
    assignment, `set`, `if CHECK; then`, `else`, `fi` or a closing echo; every command is inside an else."""
    lines = _script(os_id, gpu, version, container).splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert "set -euo pipefail" in lines
    body = lines[len(lines) - lines[::-1].index("}") :]  # after the last helper function
    in_else = False
    for line in body:
        if line.startswith("if ") and line.endswith("; then"):
            in_else = False
        elif line == "else":
            in_else = True
        elif line.startswith("  "):
            assert in_else or line.startswith('  echo "ok: '), line
        else:
            assert (
                line == "fi"
                or line.startswith(("PYTHON=", "VENV="))
                or line.startswith(("#", 'echo "Done', 'echo "Diagnose', 'echo "In the image'))
                or not line
            ), line


def test_every_version_choice_is_explained_in_a_comment() -> None:
    target = _target("ubuntu-22.04", "H100", None, True)
    script = render(target, steps_for(target, container=True), container=True, version="t")
    comments = "\n".join(line for line in script.splitlines() if line.startswith("#"))
    assert "580 (long-term support branch" in comments
    assert "supports Hopper" in comments
    assert "nvidia/cuda:13.0.0-runtime-ubuntu24.04" in comments
    native = _script("ubuntu-22.04", "H100", None, False)
    native_comments = "\n".join(line for line in native.splitlines() if line.startswith("#"))
    for chosen in ("torch 2.14 (cu130", "CUDA toolkit 13.0", "cuDNN 9.24.0.43"):
        assert chosen in native_comments


def test_the_driver_step_stops_for_a_reboot_and_uses_the_right_packages() -> None:
    ubuntu = _script("ubuntu-22.04", "B200", None, False)
    assert "as_root apt-get install -y nvidia-open-580" in ubuntu  # Blackwell: open modules only
    assert "Reboot now" in ubuntu and "  exit 0" in ubuntu
    volta = _script("ubuntu-22.04", "V100", None, False)
    assert "cuda-drivers-580" in volta and '[ "$branch" -le 580 ]' in volta  # Volta ended with R580
    rocky = _script("rocky-9", "T4", None, False)
    assert "dnf module enable -y nvidia-driver:580-open" in rocky
    assert "/etc/yum.repos.d/cuda-rhel9.repo" in rocky and "epel-release" in rocky
    cudnn8 = _script("debian-12", "L4", "2.0", False)
    assert "cudnn" not in "\n".join(line for line in cudnn8.splitlines() if not line.startswith("#"))


def test_the_script_stops_on_another_distribution_before_touching_anything(tmp_path: Path) -> None:
    """Run for real, on the machine running the tests, a script written for a distribution this is not:
    the guard at the top exits 1 before any step (so nothing is installed)."""
    from gpuwise.setup.osinfo import read_os_release

    here = read_os_release() or ""
    other = "amzn-2023" if not here.startswith("amzn") else "ubuntu-22.04"
    script = tmp_path / "other.sh"
    script.write_text(_script(other, "H100", None, False), encoding="utf-8")
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1
    assert f"This script is for {other}" in done.stderr
    assert "installing" not in done.stdout and "ok:" not in done.stdout


_STUBS = {
    # root: log, then run the (stubbed) command
    "sudo": 'echo "sudo $*" >> "$LOG"; "$@"',
    "id": "echo 1000",
    "uname": 'case "$1" in -m) echo x86_64 ;; *) echo 6.1.0-test ;; esac',
    "curl": 'echo "curl $*" >> "$LOG"',
    "modinfo": '[ -f "$STATE/driver" ] && echo 580.95.05',
    "dpkg": """case "$1 $2" in
  "-s cuda-keyring") [ -f "$STATE/keyring" ] ;;
  "-s cudnn9-cuda-13") [ -f "$STATE/cudnn" ] ;;
  -i*) touch "$STATE/keyring" ;;
  *) exit 1 ;;
esac""",
    "apt-get": """for arg in "$@"; do
  case "$arg" in
    nvidia-open-*) touch "$STATE/driver" ;;
    cuda-toolkit-13-0)
      mkdir -p "$STATE/cuda-13.0/bin" && touch "$STATE/cuda-13.0/bin/nvcc"
      chmod +x "$STATE/cuda-13.0/bin/nvcc" ;;
    cudnn9-cuda-13) touch "$STATE/cudnn" ;;
  esac
done""",
    # Debian's contrib component: off until add-apt-repository turns it on (apt's policy then lists it)
    "add-apt-repository": 'echo "add-apt-repository $*" >> "$LOG"; touch "$STATE/contrib"',
    "apt-cache": '[ -f "$STATE/contrib" ] && echo " release o=Debian,c=contrib,b=amd64"; true',
    # installed driver packages, as a test writes them in $STATE/packages (none by default)
    # (the lines whose package matches one of the patterns asked for, as dpkg-query -W matches them)
    "dpkg-query": """[ -f "$STATE/packages" ] || exit 1
while read -r status package version; do
  for pattern in "$@"; do
    case "$pattern" in -*) continue ;; esac
    # shellcheck disable=SC2053
    [[ $package == $pattern ]] && echo "$status  $package $version"
  done
done < "$STATE/packages\"""",
    # python3 -c CHECK: the version check passes; python3 -m venv DIR: a venv whose python installs torch
    # (pip) and then reports it (the -c probe)
    "python3": """[ "$1" = -c ] && exit 0
mkdir -p "$3/bin"
printf '%s\\n' '#!/bin/bash' 'case "$*" in' \\
  '*"pip install torch"*) touch "$STATE/torch" ;;' '-c*) [ -f "$STATE/torch" ] ;;' 'esac' > "$3/bin/python"
chmod +x "$3/bin/python\"""",
}


def _stubbed(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """debian-12's H100 script in tmp_path with stub commands that keep state in tmp_path/state: (script,
    state, root log, environment). Only the OS guard and the toolkit's and a runfile driver's paths are
    pointed at the test's folder; nothing outside tmp_path is touched (PATH holds only the stubs)."""
    stubs, state = tmp_path / "bin", tmp_path / "state"
    stubs.mkdir()
    state.mkdir()
    real = ("cut", "touch", "mkdir", "chmod", "grep", "awk", "cat")
    tools = {name: f'exec {shutil.which(name)} "$@"' for name in real}
    for name, body in {**_STUBS, **tools}.items():
        (stubs / name).write_text(f"#!/bin/bash\n{body}\n")
        (stubs / name).chmod(0o755)
    text = _script("debian-12", "H100", None, False)
    text = re.sub(r'os_id="\$\(\. /etc/os-release.*"', 'os_id="debian-12"', text)
    text = text.replace("/usr/local/cuda-13.0", "$STATE/cuda-13.0")
    text = text.replace("[ -x /usr/bin/nvidia-uninstall ]", '[ -x "$STATE/nvidia-uninstall" ]')
    script = tmp_path / "setup.sh"
    script.write_text(text)
    log = tmp_path / "root.log"
    return (
        script,
        state,
        log,
        {"PATH": str(stubs), "STATE": str(state), "LOG": str(log), "HOME": str(tmp_path)},
    )


def test_a_runfile_driver_stops_the_script_before_any_driver_package(tmp_path: Path) -> None:
    """Driver packages over a driver from NVIDIA's .run installer break both: the script stops at the driver
    step (exit 1, how to remove it on stderr) with no driver package installed."""
    script, state, log, env = _stubbed(tmp_path)
    (state / "nvidia-uninstall").touch(mode=0o755)
    done = subprocess.run(["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sudo /usr/bin/nvidia-uninstall" in done.stderr
    assert "nvidia-open" not in log.read_text() and not (state / "driver").exists()


def test_debian_gets_its_contrib_component_before_the_driver(tmp_path: Path) -> None:
    """NVIDIA's driver packages for Debian depend on Debian's contrib component (NVIDIA's Debian install
    steps enable it): the repository step turns it on, and a keyring without contrib is not done."""
    script, state, log, env = _stubbed(tmp_path)
    (state / "keyring").touch()  # the keyring from an earlier attempt, contrib still off
    done = subprocess.run(["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "installing: NVIDIA CUDA repository" in done.stdout
    calls = log.read_text()
    assert "add-apt-repository -y contrib" in calls
    assert calls.index("add-apt-repository") < calls.index("nvidia-open-580")
    assert "add-apt-repository" not in _script("ubuntu-22.04", "H100", None, False)


def test_debian_stops_with_what_to_edit_when_contrib_cannot_be_enabled(tmp_path: Path) -> None:
    """add-apt-repository may leave a sources file it does not parse (deb822) as it was: the repository step
    stops there (exit 1, which file to edit) instead of the driver failing on unmet dependencies."""
    script, state, log, env = _stubbed(tmp_path)
    (Path(env["PATH"]) / "add-apt-repository").write_text("#!/bin/bash\nexit 1\n")
    done = subprocess.run(["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "contrib component is still not enabled" in done.stderr and "debian.sources" in done.stderr
    assert "nvidia-open" not in log.read_text() and not (state / "driver").exists()


@pytest.mark.parametrize(
    ("package", "stops"),
    [
        ("nvidia-driver-535-server 535.183.01-0ubuntu0.22.04.1", True),  # Ubuntu's archive
        ("nvidia-driver 535.216.03-1~deb12u1", True),  # Debian's archive
        ("nvidia-headless-535-server 535.183.01-0ubuntu0.22.04.1", True),  # a server's headless set
        ("nvidia-driver-550 550.54.15-0ubuntu1", False),  # NVIDIA's repository: apt upgrades it
    ],
)
def test_a_driver_from_the_distribution_archive_stops_the_script(
    tmp_path: Path, package: str, stops: bool
) -> None:
    """NVIDIA's driver packages over the distribution's own driver packages conflict: the driver step stops
    (exit 1, what was found and how to remove it on stderr) before installing any driver package."""
    script, state, log, env = _stubbed(tmp_path)
    (state / "packages").write_text(f"ii  {package}\nun  nvidia-driver-470 \n")
    done = subprocess.run(["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False)
    if stops:
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"({package})" in done.stderr and "apt-get --purge remove '*nvidia*'" in done.stderr
        assert "or keep it: gpuwise setup --driver 535 prints" in done.stderr
        assert "nvidia-open" not in log.read_text() and not (state / "driver").exists()
    else:
        assert done.returncode == 0 and (state / "driver").exists(), done.stdout + done.stderr


def test_running_the_script_twice_more_installs_nothing(tmp_path: Path) -> None:
    """The script for real, under bash, against stub commands that keep state in a folder: the first run
    sets up the repository and the driver and stops for the reboot; the second installs the rest; the third
    finds everything done and runs no command as root."""
    script, _state, log, env = _stubbed(tmp_path)

    def run_once() -> str:
        done = subprocess.run(
            ["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    first = run_once()
    assert "installing: NVIDIA driver branch 580" in first and "Reboot now" in first
    assert "CUDA toolkit" not in first
    second = run_once()
    assert "ok: NVIDIA CUDA repository" in second and "ok: NVIDIA driver branch 580" in second
    for step in ("CUDA toolkit 13.0", "cuDNN 9 for CUDA 13", "PyTorch 2.14 (cu130)"):
        assert f"installing: {step}" in second
    root_calls = log.read_text()
    third = run_once()
    assert "installing" not in third and third.count("ok: ") == 5
    assert log.read_text() == root_calls  # nothing ran as root the third time


def test_the_venv_uses_a_python_the_release_installs_on(tmp_path: Path) -> None:
    """RHEL's python3 is too old for current PyTorch: the script installs and uses python3.11; and a
    GPUWISE_PYTHON that is too old stops the PyTorch step with the reason, before pip fails on it."""
    rhel = _script("rhel-9", "H100", None, False)
    assert 'PYTHON="${GPUWISE_PYTHON:-python3.11}"' in rhel
    assert "as_root dnf install -y python3.11 python3.11-pip" in rhel
    script, _state, _log, env = _stubbed(tmp_path)
    (Path(env["PATH"]) / "old-python").write_text("#!/bin/bash\nexit 1\n")  # fails every version check
    (Path(env["PATH"]) / "old-python").chmod(0o755)
    env = {**env, "GPUWISE_PYTHON": "old-python"}
    runs = [
        subprocess.run(["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False)
        for _ in range(2)  # the first stops for the reboot after the driver
    ]
    assert runs[1].returncode == 1, runs[1].stdout + runs[1].stderr
    assert "torch 2.14 needs Python 3.10 or newer, and old-python is older" in runs[1].stderr
