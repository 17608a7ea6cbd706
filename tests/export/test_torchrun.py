"""`export torchrun`: every line, as bash hands it to torchrun, parses with torch's own argument parser."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from gpuwise.export.target import Job, target_from_flags
from gpuwise.export.torchrun import render_torchrun


def _argv_as_bash_passes_it(line: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The words bash makes of the line (quotes and ${VAR:?} expanded), one per output line."""
    script = f"set -- {line}\nprintf '%s\\n' \"$@\""
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env={**os.environ, **env}, check=False
    )


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize(("gpus", "nodes"), [("H100:16", 2), ("A100-80GB:24", 3), ("L4:4", 1)])
def test_each_node_line_parses_with_torchrun_own_parser(
    gpus: str, nodes: int, need_module: Callable[[str], None]
) -> None:
    need_module("torch")
    from torch.distributed.run import get_args_parser

    target = target_from_flags(gpus, nodes=nodes)
    job = Job(name="ft-run", command=("train.py", "--lr", "3e-4", "--out", "dir with space"))
    lines = _lines(render_torchrun(target, job))
    assert len(lines) == nodes
    for rank, line in enumerate(lines):
        words = _argv_as_bash_passes_it(line, {"MASTER_ADDR": "10.0.0.7"})
        assert words.returncode == 0, words.stderr
        argv = words.stdout.splitlines()
        assert argv[0] == "torchrun"
        args = get_args_parser().parse_args(argv[1:])
        assert args.nnodes == str(nodes)
        assert args.nproc_per_node == str(target.gpus_per_node)
        assert args.training_script == "train.py"
        assert args.training_script_args == ["--lr", "3e-4", "--out", "dir with space"]
        if nodes == 1:
            assert args.standalone
            continue
        assert args.node_rank == rank
        assert args.rdzv_backend == "static"
        assert args.rdzv_endpoint == "10.0.0.7:29500"
        assert args.rdzv_id == "ft-run"


def test_a_line_refuses_to_run_without_the_address_of_node_0() -> None:
    line = _lines(render_torchrun(target_from_flags("H100:16"), Job()))[1]
    env = {k: v for k, v in os.environ.items() if k != "MASTER_ADDR"}
    result = subprocess.run(
        ["bash", "-c", f"set -- {line}"], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode != 0
    assert "set MASTER_ADDR to the address of node 0" in result.stderr
