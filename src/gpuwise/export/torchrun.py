"""`gpuwise export torchrun`: one torchrun command line per node, and the torchrun argv the other exports use.

torchrun's static rendezvous is used: node 0 hosts the store at ``--rdzv-endpoint`` and every node gives its
own ``--node-rank``, so ranks are the same on every restart (the elastic c10d backend assigns node ranks
itself and ignores ``--node-rank``; torch/distributed/run.py). Pure: values in, text out.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from gpuwise.export.target import Job, Target
from gpuwise.export.yamltext import comment_lines

# the address every line points at: the user sets it to node 0's address (private IP or host name)
MASTER_ADDR_VAR = "MASTER_ADDR"


def torchrun_argv(
    target: Target, job: Job, *, node_rank: str, master_addr: str, nnodes: str | None = None
) -> list[str]:
    """torchrun's arguments for one node (values may be shell expressions such as "$RANK")."""
    argv = [
        "torchrun",
        f"--nnodes={nnodes or target.nodes}",
        f"--nproc-per-node={target.gpus_per_node}",
    ]
    if target.nodes == 1 and nnodes is None:
        # one machine: torchrun's standalone mode picks a free local port, no rendezvous to set up
        return [*argv, "--standalone", *job.command]
    return [
        *argv,
        f"--node-rank={node_rank}",
        "--rdzv-backend=static",
        f"--rdzv-endpoint={master_addr}:{job.master_port}",
        f"--rdzv-id={job.name}",
        *job.command,
    ]


def shell_line(argv: Sequence[str], *, expand: Sequence[str] = ()) -> str:
    """``argv`` as one shell line; the words in ``expand`` go in double quotes so "$VAR" expands."""
    return " ".join(f'"{word}"' if word in expand else shlex.quote(word) for word in argv)


def render_torchrun(target: Target, job: Job) -> str:
    """A comment header and one `torchrun` line per node."""
    master = f"${{{MASTER_ADDR_VAR}:?set {MASTER_ADDR_VAR} to the address of node 0}}"
    header = [
        f"gpuwise export torchrun: {target.nodes} node(s) x {target.gpus_per_node} {target.gpu} "
        f"({target.source})"
    ]
    if target.nodes > 1:
        header.append(
            f"Run line k on node k; set {MASTER_ADDR_VAR} to node 0's address first, and open TCP port "
            f"{job.master_port} between the nodes."
        )
    lines = comment_lines(header)
    for rank in range(target.nodes):
        argv = torchrun_argv(target, job, node_rank=str(rank), master_addr=master)
        endpoint = next((word for word in argv if word.startswith("--rdzv-endpoint=")), "")
        lines.append(f"# node {rank}")
        lines.append(shell_line(argv, expand=(endpoint,) if endpoint else ()))
    return "\n".join(lines) + "\n"
