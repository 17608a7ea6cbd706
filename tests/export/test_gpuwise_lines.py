"""The gpuwise command lines the exports write parse with gpuwise's own CLI, so a renamed option fails here
and not on a rented machine."""

from __future__ import annotations

import shlex

import pytest
import typer
from export_helpers import load_yaml

from gpuwise.cli.main import full_app
from gpuwise.export.k8s import render_k8s
from gpuwise.export.skypilot import render_skypilot
from gpuwise.export.target import Job, target_from_flags

JOB = Job(name="ft", sync_url="s3://bucket/ckpt")


def _parses(argv: list[str]) -> None:
    """Parse (without running) a `gpuwise …` argv with the real command tree; raises on a bad option."""
    assert argv[0] == "gpuwise"
    command = typer.main.get_command(full_app())
    args = argv[1:]
    while args and args[0] in getattr(command, "commands", {}):
        command, args = command.commands[args[0]], args[1:]  # type: ignore[attr-defined]
    assert not hasattr(command, "commands"), argv
    command.make_context(argv[1], list(args))


def test_the_k8s_containers_run_valid_gpuwise_commands() -> None:
    pod = load_yaml(render_k8s(target_from_flags("H100:16"), JOB))["spec"]["replicatedJobs"][0]
    spec = pod["template"]["spec"]["template"]["spec"]
    _parses(spec["initContainers"][0]["command"])
    _parses(spec["containers"][0]["command"])


def test_the_skypilot_run_script_runs_valid_gpuwise_commands() -> None:
    run = load_yaml(render_skypilot(target_from_flags("H100:8", spot=True), JOB))["run"]
    idle = next(line for line in run.splitlines() if line.startswith("gpuwise idle run"))
    _parses(shlex.split(idle.split(">")[0]))
    start = run.index("gpuwise run ")
    line = run[start:].replace("\\\n", " ").split("\n")[0]
    words = shlex.split(line.replace('${GPUWISE_SYNC_URL:+--sync "$GPUWISE_SYNC_URL"}', "--sync s3://b/p"))
    _parses(words)


def test_a_renamed_option_would_fail_here() -> None:
    with pytest.raises(Exception, match="no-such-option"):
        _parses(["gpuwise", "exporter", "--no-such-option"])
