"""`gpuwise export skypilot`: a SkyPilot task YAML for a target (loads with `sky.Task.from_yaml`).

Resources carry the plan option: accelerators in SkyPilot's name for the provider, `use_spot`, the cloud and
region when SkyPilot supports the provider, the disk and `num_nodes`. The instance type is left to SkyPilot
(it picks the cheapest one with those GPUs in that region, which is the type the plan priced). `setup`
installs gpuwise; `run` starts gpuwise's idle stopper in the background and the job under
`gpuwise run --resume`, with `--sync` when GPUWISE_SYNC_URL is set (at export or `sky launch --env`).
SkyPilot's own autostop stays on as the fallback: it stops (spot: tears down, since SkyPilot cannot stop a
spot VM) the cluster once no job has run for the idle window. Pure: values in, text out.
"""

from __future__ import annotations

from gpuwise import __version__
from gpuwise.export import yamltext
from gpuwise.export.names import SKYPILOT_CLOUDS, skypilot_gpu_name
from gpuwise.export.target import Job, Target
from gpuwise.export.torchrun import shell_line, torchrun_argv

SYNC_ENV = "GPUWISE_SYNC_URL"


def skypilot_task(target: Target, job: Job) -> dict[str, yamltext.Node]:
    """The task as a mapping, in the order a reader expects."""
    resources: dict[str, yamltext.Node] = {
        "accelerators": f"{skypilot_gpu_name(target.gpu, target.provider)}:{target.gpus_per_node}",
        "use_spot": target.spot,
    }
    if target.provider in SKYPILOT_CLOUDS:
        resources["cloud"] = target.provider
        if target.region:
            resources["region"] = target.region
    resources["disk_size"] = job.disk_gb
    resources["autostop"] = {"idle_minutes": job.idle_minutes, "down": target.spot}
    return {
        "name": job.name,
        "resources": resources,
        "num_nodes": target.nodes,
        "envs": {SYNC_ENV: job.sync_url or ""},
        "setup": _setup(),
        "run": _run(target, job),
    }


def _setup() -> str:
    return (
        "set -euo pipefail\n"
        "python3 -m venv ~/gpuwise-venv\n"
        f'~/gpuwise-venv/bin/pip install --upgrade "gpuwise=={__version__}"\n'
    )


def _run(target: Target, job: Job) -> str:
    argv = torchrun_argv(
        target,
        job,
        nnodes="$SKYPILOT_NUM_NODES" if target.nodes > 1 else None,
        node_rank="$SKYPILOT_NODE_RANK",
        master_addr="$MASTER_ADDR",
    )
    expand = [word for word in argv if "$" in word]
    return (
        "set -euo pipefail\n"
        'export PATH="$HOME/gpuwise-venv/bin:$PATH"\n'
        "# gpuwise's idle stopper: stops the machine when its GPUs sit idle (SkyPilot's autostop: fallback)\n"
        f'gpuwise idle run --action auto --window-min {job.idle_minutes} >"$HOME/gpuwise-idle.log" 2>&1 &\n'
        'MASTER_ADDR="$(echo "$SKYPILOT_NODE_IPS" | head -n1)"\n'
        f'gpuwise run --resume ${{{SYNC_ENV}:+--sync "${SYNC_ENV}"}} -- \\\n'
        f"  {shell_line(argv, expand=expand)}\n"
    )


def render_skypilot(target: Target, job: Job) -> str:
    header = [
        f"gpuwise export skypilot: {target.nodes} node(s) x {target.gpus_per_node} {target.gpu} "
        f"({target.source})",
        "Launch: sky launch -c NAME THIS.yaml"
        + (f" --env {SYNC_ENV}=s3://bucket/prefix" if not job.sync_url else ""),
    ]
    if target.provider and target.provider not in SKYPILOT_CLOUDS:
        header.append(
            f"SkyPilot has no cloud '{target.provider}': the task names none, so SkyPilot may pick any."
        )
    return yamltext.dump(skypilot_task(target, job), header=header)
