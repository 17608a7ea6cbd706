"""`gpuwise export skypilot`: a SkyPilot task YAML for a target (loads with `sky.Task.from_yaml`).

Resources carry the plan option: accelerators in SkyPilot's name for the provider, `use_spot`, the cloud and
region when SkyPilot supports the provider, the disk and `num_nodes`. The instance type is left to SkyPilot
(it picks the cheapest one with those GPUs in that region, which is the type the plan priced). `workdir: .`
sends the folder `sky launch` runs in (the training script) to the cluster: without it the run finds no
script. `setup` installs, in a virtual environment, the PyTorch build `export dockerfile` picks for the GPU
(torchrun comes with it), gpuwise, and the project's requirements.txt when there is one; `run` starts
gpuwise's idle stopper in the background and the job under `gpuwise run --resume`, with `--sync` when
GPUWISE_SYNC_URL is set (at export or `sky launch --env`).
SkyPilot's own autostop stays on as the fallback: it stops (spot: tears down, since SkyPilot cannot stop a
spot VM) the cluster once no job has run for the idle window. Pure: values in, text out.
"""

from __future__ import annotations

from gpuwise import __version__
from gpuwise.catalog.specs import resolve_gpu
from gpuwise.doctor.versions import format_version
from gpuwise.errors import UsageError
from gpuwise.export import yamltext
from gpuwise.export.images import ImageChoice, choose_image
from gpuwise.export.names import SKYPILOT_CLOUDS, skypilot_gpu_name
from gpuwise.export.target import Job, Target
from gpuwise.export.torchrun import shell_line, torchrun_argv
from gpuwise.setup.tables import driver_text

SYNC_ENV = "GPUWISE_SYNC_URL"
_PIP = "~/gpuwise-venv/bin/pip"


def _torch(target: Target, job: Job) -> ImageChoice | str:
    """The PyTorch build for the GPU (as `export dockerfile` picks it, for no particular driver), or why
    there is none (an AMD GPU, a GPU no CUDA build runs on)."""
    vendor = resolve_gpu(target.gpu).vendor
    if vendor != "NVIDIA":
        return f"{target.gpu} is an {vendor} GPU and gpuwise pins only CUDA builds (AMD: add a ROCm build)"
    try:
        return choose_image(target.gpu, torch=job.torch)
    except UsageError as exc:
        if job.torch is not None:  # the --torch asked for does not run on this GPU: bad input
            raise
        return exc.message


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
        "workdir": ".",
        "resources": resources,
        "num_nodes": target.nodes,
        "envs": {SYNC_ENV: job.sync_url or ""},
        "setup": _setup(_torch(target, job)),
        "run": _run(target, job),
    }


def _setup(torch: ImageChoice | str) -> str:
    lines = ["set -euo pipefail", "python3 -m venv ~/gpuwise-venv"]
    if isinstance(torch, str):
        lines.append("# install PyTorch for this GPU here (see the note at the top)")
    else:
        lines.append(f'{_PIP} install "torch=={torch.torch_version}" --index-url {torch.index_url}')
    lines += [
        f'{_PIP} install --upgrade "gpuwise=={__version__}"',
        f"if [ -f requirements.txt ]; then {_PIP} install -r requirements.txt; fi",
    ]
    return "\n".join(lines) + "\n"


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


def _torch_line(torch: ImageChoice | str) -> str:
    if isinstance(torch, str):
        return f"PyTorch: not installed by setup: {torch}."
    return (
        f"PyTorch: torch {torch.torch_version} from {torch.index_url} (a build with code for this GPU); "
        f"it needs NVIDIA driver >= {driver_text(torch.min_driver)} on the VM "
        f"(CUDA {format_version(torch.torch_cuda)} release notes)."
    )


def render_skypilot(target: Target, job: Job) -> str:
    header = [
        f"gpuwise export skypilot: {target.nodes} node(s) x {target.gpus_per_node} {target.gpu} "
        f"({target.source})",
        "Launch: sky launch -c NAME THIS.yaml"
        + (f" --env {SYNC_ENV}=s3://bucket/prefix" if not job.sync_url else "")
        + " from the folder that holds the training script (workdir: . sends it to the cluster)",
        _torch_line(_torch(target, job)),
    ]
    if target.provider and target.provider not in SKYPILOT_CLOUDS:
        header.append(
            f"SkyPilot has no cloud '{target.provider}': the task names none, so SkyPilot may pick any."
        )
    return yamltext.dump(skypilot_task(target, job), header=header)
