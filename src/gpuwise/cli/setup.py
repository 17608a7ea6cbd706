"""`gpuwise setup`: print the bash script that brings a fresh GPU machine to a working stack.

Detects what is not given (/etc/os-release, the GPU reader or a `--replay` recording), chooses the driver
branch, CUDA, cuDNN and PyTorch build from the bundled tables (gpuwise.setup.choose) and prints the script
(gpuwise.setup.script) on stdout. It never runs it. `--check` prints only the steps this machine still
needs (exit 0 when none, 1 otherwise); an impossible combination is bad input (exit 2) with the nearest
working choice. Top-level imports stay cheap: the setup room loads inside the command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.doctor.facts import GpuFacts
    from gpuwise.setup.check import MachineState
    from gpuwise.setup.choose import Target
    from gpuwise.setup.script import Step


def setup(  # noqa: PLR0917 - typer passes each option as a parameter
    os_id: Annotated[
        str | None,
        typer.Option(
            "--os",
            metavar="ID",
            help=_(
                "Target OS as /etc/os-release ID-VERSION_ID: ubuntu-20.04/22.04/24.04, debian-11/12, "
                "rhel-8/9, rocky-8/9, amzn-2023 (default: this machine's)."
            ),
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu", metavar="NAME", help=_("Target GPU, e.g. H100 (default: the GPUs this machine has).")
        ),
    ] = None,
    driver: Annotated[
        str | None,
        typer.Option(
            "--driver",
            metavar="BRANCH",
            help=_(
                "Driver branch, e.g. 580 or a full version such as 580.65.06 (default: the newest "
                "long-term one that fits)."
            ),
        ),
    ] = None,
    framework: Annotated[
        str | None,
        typer.Option(
            "--framework",
            metavar="torch==X.Y",
            help=_(
                "PyTorch release, optionally with its CUDA build: torch==2.8 or torch==2.8.0+cu126 (default: "
                "the newest with kernels for the GPU)."
            ),
        ),
    ] = None,
    container: Annotated[
        bool,
        typer.Option(
            "--container", help=_("Docker + NVIDIA Container Toolkit + a CUDA base image the driver runs.")
        ),
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check", help=_("Print only the steps this machine still needs; exit 0 when none, 1 otherwise.")
        ),
    ] = False,
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            help=_("Read the GPU and driver from a recording (as doctor --replay) instead of this machine."),
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help=_("Print the choices, their reasons, the steps and the script as JSON.")),
    ] = False,
) -> None:
    """Print the script that installs the driver, CUDA, cuDNN and PyTorch in the right order.

    Driver branch that supports the GPU -> CUDA toolkit of the framework build -> cuDNN -> PyTorch in a venv
    (or, with --container, Docker + NVIDIA Container Toolkit + a CUDA base image). Every version comes from
    the tables `gpuwise doctor` checks against, with the reason in a comment. Each step checks before it
    installs, so the script can run again. gpuwise prints it; you run it.

    Examples:

      gpuwise setup --os ubuntu-22.04 --gpu H100 > setup.sh && bash setup.sh

      gpuwise setup --gpu A100 --framework torch==2.8 --container

      gpuwise setup --check
    """
    from gpuwise import __version__
    from gpuwise.cli.output import print_json
    from gpuwise.setup.script import render, steps_for

    branch = _driver_branch(driver) if driver is not None else None
    target, gpus = _target(os_id, gpu, branch, framework, container=container, replay=replay)
    steps = steps_for(target, container=container)
    if not check:
        script = render(target, steps, container=container, version=__version__)
        if as_json:
            print_json(_json(target, steps, script))
        else:
            sys.stdout.write(script)
        return
    needed, done, unknown = _check(target, steps, gpus, replay=replay)
    script = render(target, needed, container=container, version=__version__, done_already=tuple(done))
    if as_json:
        print_json({**_json(target, needed, script), "done": done, "not_observed": unknown})
    elif needed:
        sys.stdout.write(script)
    else:
        sys.stdout.write(
            _("# Nothing to do: this machine already has {done}.").format(done=", ".join(done)) + "\n"
        )
    if needed:
        raise typer.Exit(code=1)


def _driver_branch(text: str) -> int:
    """'580', 'R580' or a full version as nvidia-smi prints it ('580.65.06') -> its branch: people copy the
    version they have or read about, and setup installs branches."""
    import re

    from gpuwise.errors import UsageError

    match = re.fullmatch(r"\s*[Rr]?(\d{3,4})(?:\.\d+){0,2}\s*", text)
    if match is None:
        raise UsageError(
            _("--driver {text} is not a driver branch").format(text=repr(text)),
            why=_("a branch is the first number of a driver version: 535.104.05 is branch 535"),
            fix=_("give --driver as a branch number, e.g. --driver 580"),
        )
    return int(match.group(1))


def _target(
    os_id: str | None,
    gpu: str | None,
    driver: int | None,
    framework: str | None,
    *,
    container: bool,
    replay: Path | None,
) -> tuple[Target, GpuFacts | None]:
    """The stack to install, and what the GPU reader said (None when it was not asked)."""
    import re
    from dataclasses import replace

    from gpuwise.doctor.tables import load_tables
    from gpuwise.errors import UsageError
    from gpuwise.setup.choose import choose_target, gpu_target, parse_framework, resolve_system
    from gpuwise.setup.detect import detected_gpu
    from gpuwise.setup.osinfo import read_os_release
    from gpuwise.setup.tables import load_setup_tables
    from gpuwise.setup.variant import framework_variant, only_variant

    tables, setup_tables = load_tables(), load_setup_tables()
    if os_id is None:
        os_id = read_os_release()
        if os_id is None:
            raise UsageError(
                _("Could not tell this machine's OS (no readable /etc/os-release)"),
                fix=_("give it with --os, e.g. --os ubuntu-22.04"),
            )
    system = resolve_system(os_id, setup_tables)
    version = parse_framework(framework, tables)[1] if framework is not None else None
    variant = framework_variant(framework) if framework is not None else None
    if variant is not None and version is not None:  # torch==2.8.0+cu126: that CUDA build, nothing else
        tables = only_variant(tables, version, variant)
    gpus = _read_gpus(replay) if gpu is None or replay is not None else None
    target_gpu = gpu_target(gpu, None, setup_tables) if gpu is not None else detected_gpu(gpus, setup_tables)
    target = choose_target(
        system, target_gpu, version, driver, container=container, tables=tables, setup_tables=setup_tables
    )
    # a patch asked for is installed as asked (the tables hold releases; pip knows the patches)
    patch = re.fullmatch(r"\s*torch\s*==\s*(\d+\.\d+\.\d+)(?:\+\w+)?\s*", framework or "", re.IGNORECASE)
    return (replace(target, pin=patch.group(1)) if patch else target), gpus


def _read_gpus(replay: Path | None) -> GpuFacts | None:
    if replay is not None:
        from gpuwise.cli.output import check_input_file
        from gpuwise.doctor.replay import load_replay_facts

        check_input_file(
            replay, _("Recording"), fix=_("give a recording file, e.g. nvidia-smi -q -x > gpu.xml")
        )
        return load_replay_facts(replay).gpus
    from gpuwise.doctor.live import read_gpus

    return read_gpus(timeout_s=15.0)


def _check(
    target: Target, steps: list[Step], gpus: GpuFacts | None, *, replay: Path | None
) -> tuple[list[Step], list[str], list[str]]:
    from gpuwise.setup.check import MachineState, needed_steps
    from gpuwise.setup.detect import detected_driver

    if gpus is None:
        gpus = _read_gpus(replay)
    driver_version = detected_driver(gpus)
    state: MachineState
    if replay is not None:
        state = MachineState(driver_version=driver_version)  # a recording holds only the GPU reader's view
    else:
        import os

        from gpuwise.setup.live import gather_state

        venv = Path(os.environ.get("GPUWISE_VENV") or Path.home() / "venv-torch")
        state = gather_state(target, driver_version=driver_version, venv=venv)
    return needed_steps(target, steps, state)


def _json(target: Target, steps: list[Step], script: str) -> dict[str, Any]:
    from gpuwise.doctor.versions import format_version

    return {
        "os": target.system.os,
        "gpu": target.gpu.name,
        "compute_capability": target.gpu.capability,
        "architecture": target.gpu.architecture.name,
        "driver_branch": target.branch.branch,
        "driver_min_version": target.branch.min_version_text,
        "open_kernel_modules": target.open_modules,
        "cuda": format_version(target.cuda),
        "cudnn": target.build.cudnn_version,
        "framework": {
            "name": "torch",
            "version": target.build.version,
            "variant": target.build.variant,
        },
        "image": target.image.image if target.image else None,
        "reasons": [{"what": r.what, "value": r.value, "why": r.why} for r in target.reasons],
        "steps": [{"id": s.id, "title": s.title, "commands": list(s.commands)} for s in steps],
        "script": script,
    }
