"""`export skypilot`: the task loads with SkyPilot's own parser and asks for exactly the plan option."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from export_helpers import load_yaml, option, plan_doc

from gpuwise import __version__
from gpuwise.export.images import choose_image
from gpuwise.export.names import SKYPILOT_CLOUDS
from gpuwise.export.skypilot import render_skypilot
from gpuwise.export.target import Job, Target, target_from_flags, target_from_plan

# Loads every task with sky.Task.from_yaml in one process (importing sky takes seconds) under a throw-away
# HOME, since SkyPilot writes ~/.sky when imported.
_LOADER = """
import json, sys
import sky
from sky.utils import registry
out = {"clouds": sorted(registry.CLOUD_REGISTRY), "tasks": []}
for path in sys.argv[1:]:
    task = sky.Task.from_yaml(path)
    task.expand_and_validate_workdir()  # what sky launch does: the folder it runs in, which must exist
    (res,) = list(task.resources)
    autostop = res.autostop_config
    out["tasks"].append({
        "name": task.name,
        "workdir": task.workdir,
        "num_nodes": task.num_nodes,
        "accelerators": res.accelerators,
        "use_spot": res.use_spot,
        "cloud": None if res.cloud is None else str(res.cloud).lower(),
        "region": res.region,
        "disk_size": res.disk_size,
        "envs": task.envs,
        "autostop": None if autostop is None else [autostop.enabled, autostop.idle_minutes, autostop.down],
        "setup": task.setup,
        "run": task.run,
    })
print(json.dumps(out))
"""

TARGETS: list[tuple[Target, Job]] = [
    (target_from_plan(plan_doc(option()), 1), Job(name="one-node", disk_gb=140)),
    (
        target_from_plan(
            plan_doc(option("RTXA6000", 4, 1, provider="lambda", region="us-east-1", pricing="spot")), 1
        ),
        Job(name="lambda-spot", sync_url="s3://bucket/run"),
    ),
    (target_from_flags("H100:16", nodes=2, spot=True, provider="gcp", region="us-central1"), Job(name="two")),
    (target_from_flags("L40S:2", provider="hyperstack"), Job(name="no-such-cloud")),
]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import importlib.util

    if importlib.util.find_spec("sky") is None:
        pytest.fail("skypilot is missing: install the dev extra")
    folder = tmp_path_factory.mktemp("sky")
    paths = []
    for i, (target, job) in enumerate(TARGETS):
        path = folder / f"task{i}.yaml"
        path.write_text(render_skypilot(target, job), encoding="utf-8")
        paths.append(str(path))
    env = {**os.environ, "HOME": str(folder / "home")}
    result = subprocess.run(
        [sys.executable, "-c", _LOADER, *paths],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    doc: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return doc


@pytest.mark.parametrize("index", range(len(TARGETS)))
def test_the_task_loads_with_skypilot_and_matches_the_option(loaded: dict[str, Any], index: int) -> None:
    target, job = TARGETS[index]
    task = loaded["tasks"][index]
    assert task["name"] == job.name
    assert task["workdir"] == str(Path.cwd())  # `workdir: .`: the folder sky launch runs in goes over
    assert task["num_nodes"] == target.nodes
    assert sum(task["accelerators"].values()) == target.gpus_per_node
    assert task["use_spot"] is target.spot
    assert task["disk_size"] == job.disk_gb
    assert task["envs"] == {"GPUWISE_SYNC_URL": job.sync_url or ""}
    # SkyPilot's autostop as the fallback; a spot VM cannot be stopped, only torn down
    assert task["autostop"] == [True, job.idle_minutes, target.spot]
    if target.provider in SKYPILOT_CLOUDS:
        assert task["cloud"] == target.provider
        assert task["region"] == target.region
    else:
        assert task["cloud"] is None and task["region"] is None
    assert "pip install" in task["setup"] and "gpuwise==" in task["setup"]
    assert "gpuwise idle run" in task["run"]
    assert "gpuwise run --resume ${GPUWISE_SYNC_URL:+--sync" in task["run"]


def test_accelerator_names_are_skypilots_for_the_cloud(loaded: dict[str, Any]) -> None:
    assert loaded["tasks"][0]["accelerators"] == {"H100": 8}
    assert loaded["tasks"][1]["accelerators"] == {"A6000": 4}  # Lambda's name for the RTX A6000


def test_every_cloud_named_is_one_skypilot_knows(loaded: dict[str, Any]) -> None:
    assert set(loaded["clouds"]) >= SKYPILOT_CLOUDS


def test_setup_and_run_are_valid_bash(tmp_path: Path, need_program: Callable[[str], str]) -> None:
    bash = need_program("bash")
    for target, job in TARGETS:
        doc = load_yaml(render_skypilot(target, job))
        for part in ("setup", "run"):
            script = tmp_path / f"{part}.sh"
            script.write_text(doc[part], encoding="utf-8")
            result = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True, check=False)
            assert result.returncode == 0, (part, result.stderr)


def test_the_run_script_starts_torchrun_with_skypilots_node_variables(tmp_path: Path) -> None:
    """The multi-node run line, executed with a stub `gpuwise` that prints what it got."""
    target, job = TARGETS[2]
    run = load_yaml(render_skypilot(target, job))["run"]
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "gpuwise").write_text(
        '#!/bin/sh\n[ "$1" = idle ] && exit 0\nprintf "%s\\n" "$@"\n', encoding="utf-8"
    )
    (stub / "gpuwise").chmod(0o755)
    env = {
        "PATH": f"{stub}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2",
        "SKYPILOT_NODE_RANK": "1",
        "SKYPILOT_NUM_NODES": "2",
        "GPUWISE_SYNC_URL": "s3://b/p",
    }
    result = subprocess.run(["bash", "-c", run], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    argv = result.stdout.splitlines()
    assert argv[:5] == ["run", "--resume", "--sync", "s3://b/p", "--"]
    assert argv[5:11] == [
        "torchrun",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=1",
        "--rdzv-backend=static",
        "--rdzv-endpoint=10.0.0.1:29500",
    ]


def test_setup_installs_torch_for_the_gpu_gpuwise_and_the_requirements(tmp_path: Path) -> None:
    """The setup script run with a stub python3 whose venv's pip prints what it is asked to install: torchrun
    (from torch) and the project's requirements must be there before `run` starts the job."""
    target, job = TARGETS[0]  # an H100 option
    setup = load_yaml(render_skypilot(target, job))["setup"]
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python3").write_text(
        '#!/bin/sh\nmkdir -p "$3/bin"\nprintf \'#!/bin/sh\\necho "pip $*"\\n\' > "$3/bin/pip"\n'
        'chmod +x "$3/bin/pip"\n',
        encoding="utf-8",
    )
    (stub / "python3").chmod(0o755)
    workdir = tmp_path / "sky_workdir"
    workdir.mkdir()
    (workdir / "requirements.txt").write_text("datasets\n", encoding="utf-8")
    env = {"PATH": f"{stub}:/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        ["bash", "-c", setup], capture_output=True, text=True, env=env, cwd=workdir, check=False
    )
    assert result.returncode == 0, result.stderr
    pips = result.stdout.splitlines()
    choice = choose_image(target.gpu)
    assert pips == [
        f"pip install torch=={choice.torch_version} --index-url {choice.index_url}",
        f"pip install --upgrade gpuwise=={__version__}",
        "pip install -r requirements.txt",
    ]


def test_an_amd_gpu_gets_no_cuda_torch_and_says_so() -> None:
    text = render_skypilot(target_from_flags("MI300X:8"), Job(name="amd"))
    assert "PyTorch: not installed by setup: MI300X is an AMD GPU" in text
    assert "torch==" not in text and "whl/cu" not in text
