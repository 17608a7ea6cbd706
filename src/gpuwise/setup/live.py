"""The edge `gpuwise setup --check` reads a live machine through: files, programs, package databases, the
venv's torch and Docker's images. Each look is bounded in time; what could not be looked at stays out of
`MachineState.looked_at` (so the step counts as not observed, hence needed).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from gpuwise.setup.check import MachineState, cudnn_package, nvcc_path
from gpuwise.setup.choose import Target

_TIMEOUT_S = 20.0


def _run(command: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def gather_state(target: Target, *, driver_version: str | None, venv: Path) -> MachineState:
    looked: set[str] = set()
    paths: set[str] = set()
    nvcc = nvcc_path(target)
    looked.add(nvcc)
    if Path(nvcc).exists():
        paths.add(nvcc)
    programs = {p for p in ("docker", "nvidia-ctk") if shutil.which(p)}
    looked.update({"docker", "nvidia-ctk"})
    packages: set[str] = set()
    package = cudnn_package(target)
    query = ["dpkg", "-s"] if target.system.family == "apt" else ["rpm", "-q"]
    if package and shutil.which(query[0]):
        looked.add(f"package {package}")
        done = _run([*query, package])
        if done is not None and done.returncode == 0:
            packages.add(package)
    torch = _venv_torch(venv)
    daemon = Path("/etc/docker/daemon.json")
    runtimes = daemon.read_text(encoding="utf-8", errors="replace") if daemon.is_file() else ""
    images: set[str] = set()
    if target.image is not None and "docker" in programs:
        inspected = _run(["docker", "image", "inspect", target.image.image])
        if inspected is not None:
            looked.add("docker images")
            if inspected.returncode == 0:
                images.add(target.image.image)
    return MachineState(
        driver_version=driver_version,
        existing_paths=frozenset(paths),
        looked_at=frozenset(looked),
        packages=frozenset(packages),
        programs=frozenset(programs),
        torch=torch,
        docker_runtimes=runtimes,
        images=frozenset(images),
    )


def _venv_torch(venv: Path) -> tuple[str, str | None] | None:
    python = venv / "bin" / "python"
    if not python.exists():
        return ("", None)  # looked: no venv, so no torch
    done = _run([str(python), "-c", "import torch; print(torch.__version__); print(torch.version.cuda)"])
    if done is None:
        return None
    if done.returncode != 0:
        return ("", None)
    lines = done.stdout.split()
    if len(lines) < 2:
        return None
    return (lines[0], None if lines[1] == "None" else lines[1])
