"""`gpuwise setup --check`: which steps of the target a machine still needs.

`MachineState` is what was observed (live, or a `--replay` recording that holds only the GPU reader's view);
`needed_steps` is pure. A step whose state was not observed counts as needed, and says so: a recording
cannot prove a toolkit is installed. The repository step is needed exactly when a step that installs from it
is. Standard library and the setup room only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuwise.doctor.versions import format_version, parse_version
from gpuwise.setup.choose import Target
from gpuwise.setup.script import Step

_FROM_NVIDIA_REPO = frozenset({"driver", "cuda", "cudnn"})


@dataclass(frozen=True)
class MachineState:
    """What is known about a machine. None (or absent from a set) = not observed."""

    driver_version: str | None = None  # the loaded (or installed) NVIDIA driver, "580.95.05"
    existing_paths: frozenset[str] = frozenset()  # the paths looked at that exist
    looked_at: frozenset[str] = (
        frozenset()
    )  # every path, program, "package NAME" and "docker images" looked at
    packages: frozenset[str] = frozenset()  # installed packages among those looked at
    programs: frozenset[str] = frozenset()  # programs found on PATH
    torch: tuple[str, str | None] | None = None  # (torch.__version__, torch.version.cuda) in the venv
    docker_runtimes: str | None = None  # /etc/docker/daemon.json's text
    images: frozenset[str] = frozenset()  # container images present


def nvcc_path(target: Target) -> str:
    """The file whose existence settles the toolkit step."""
    return f"/usr/local/cuda-{format_version(target.cuda)}/bin/nvcc"


def cudnn_package(target: Target) -> str | None:
    """The package whose presence settles the cuDNN step (dpkg/rpm database), or None without that step."""
    return f"cudnn{target.cudnn_major}-cuda-{target.cuda[0]}" if target.cudnn_major is not None else None


def _driver_done(target: Target, state: MachineState) -> bool | None:
    version = parse_version(state.driver_version or "")
    if version is None:
        return None
    last = target.gpu.architecture.last_driver_branch
    return version[0] >= target.branch.branch and (last is None or version[0] <= last)


def _path_done(path: str) -> Callable[[Target, MachineState], bool | None]:
    def done(_target: Target, state: MachineState) -> bool | None:
        if path not in state.looked_at:
            return None
        return path in state.existing_paths

    return done


def _framework_done(target: Target, state: MachineState) -> bool | None:
    if state.torch is None:
        return None
    version, cuda = state.torch
    return version.startswith(f"{target.build.version}.") and cuda == target.build.cuda_version


def _program_done(program: str) -> Callable[[Target, MachineState], bool | None]:
    def done(_target: Target, state: MachineState) -> bool | None:
        if program not in state.looked_at:
            return None
        return program in state.programs

    return done


def _runtime_done(_target: Target, state: MachineState) -> bool | None:
    return None if state.docker_runtimes is None else '"nvidia"' in state.docker_runtimes


def _image_done(target: Target, state: MachineState) -> bool | None:
    if "docker images" not in state.looked_at or target.image is None:
        return None
    return target.image.image in state.images


def _cudnn_done(target: Target, state: MachineState) -> bool | None:
    package = cudnn_package(target)
    if package is None or f"package {package}" not in state.looked_at:
        return None
    return package in state.packages


def _cuda_done(target: Target, state: MachineState) -> bool | None:
    return _path_done(nvcc_path(target))(target, state)


_DONE: dict[str, Callable[[Target, MachineState], bool | None]] = {
    "driver": _driver_done,
    "cuda": _cuda_done,
    "cudnn": _cudnn_done,
    "framework": _framework_done,
    "docker": _program_done("docker"),
    "container-toolkit": _program_done("nvidia-ctk"),
    "runtime": _runtime_done,
    "image": _image_done,
}


def needed_steps(
    target: Target, steps: list[Step], state: MachineState
) -> tuple[list[Step], list[str], list[str]]:
    """(the steps still needed, the titles of those found done, the titles of those not observed)."""
    needed: list[Step] = []
    done: list[str] = []
    unknown: list[str] = []
    for step in steps:
        if step.id == "repo":
            continue
        verdict = _DONE[step.id](target, state) if step.id in _DONE else None
        if verdict is True:
            done.append(step.title)
            continue
        if verdict is None:
            unknown.append(step.title)
        needed.append(step)
    repo = [s for s in steps if s.id == "repo"]
    if repo and any(s.id in _FROM_NVIDIA_REPO for s in needed):
        needed.insert(0, repo[0])
    return needed, done, unknown
