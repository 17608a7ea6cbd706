"""What an export describes: the machines (`Target`, from a plan option or from flags) and the job (`Job`).

A plan option comes from `gpuwise plan --json` (its `options`, 1-based as `--pick N` counts them); a plan
that has no option N, or an option without the fields a target needs, is bad input with the fix. Pure:
dicts and values in, frozen records out; reading the file is the CLI's job.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuwise.catalog.specs import parse_gpu_request, resolve_gpu
from gpuwise.errors import ConfigError, UsageError
from gpuwise.locale import _

# the boot disk per node gpuwise's plan assumes (`gpuwise plan --boot-disk-gb`, default 100)
BOOT_DISK_GB = 100
# names Kubernetes accepts for a Job (RFC 1123 label, kept short so JobSet's pod names fit in 63 characters)
_NAME_MAX = 40


@dataclass(frozen=True)
class Target:
    """The machines to run on: GPU (canonical name), GPUs per node, nodes, pricing and where."""

    gpu: str
    gpus_per_node: int
    nodes: int = 1
    spot: bool = False
    provider: str | None = None
    region: str | None = None
    instance_type: str | None = None
    source: str = "flags"  # "plan option N (provider instance_type region)" or "flags"

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class Job:
    """What runs there: a name, the training command, its checkpoint sync URL, disk and container image."""

    name: str = "gpuwise-job"
    command: tuple[str, ...] = ("train.py",)  # the script torchrun starts on every node, and its arguments
    sync_url: str | None = None
    disk_gb: int = BOOT_DISK_GB
    image: str = "ghcr.io/OWNER/IMAGE:TAG"  # a placeholder: no registry serves it (see placeholder_image)
    master_port: int = 29500
    idle_minutes: int = 60
    driver: str | None = None  # the NVIDIA driver the image must run on (dockerfile)
    torch: str | None = None  # the PyTorch version to install (dockerfile; default: the newest that fits)

    @property
    def placeholder_image(self) -> bool:
        """Whether `image` is still the stand-in no registry serves (`--image` was not given)."""
        return self.image == Job.image


def job_name(text: str) -> str:
    """``text`` as a Kubernetes/SkyPilot-safe name: lowercase letters, digits and dashes."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:_NAME_MAX].strip("-")
    return name or "gpuwise-job"


def disk_gb_for(dataset_gb: float) -> int:
    """A node's disk: the plan's boot disk plus the dataset (read from local disk each epoch)."""
    return BOOT_DISK_GB + max(0, math.ceil(dataset_gb))


def target_from_plan(doc: Any, pick: int) -> Target:
    """Option ``pick`` (1-based) of a `gpuwise plan --json` document."""
    options = doc.get("options") if isinstance(doc, Mapping) else None
    if not isinstance(options, list):
        raise ConfigError(
            _("The plan is not the output of `gpuwise plan --json`: it has no 'options' list"),
            fix=_("write the plan with `gpuwise plan WORKLOAD --json > plan.json` and pass --plan plan.json"),
        )
    if not options:
        raise UsageError(
            _("The plan has no options to export"),
            why=_("no offer met the workload's constraints when it was planned"),
            fix=_("relax the plan (`gpuwise plan WORKLOAD` says what removed the options) and plan again"),
        )
    if not 1 <= pick <= len(options):
        raise UsageError(
            _("The plan has no option {pick}: it holds options 1 to {n}").format(pick=pick, n=len(options)),
            fix=_("give --pick between 1 and {n} (`gpuwise plan WORKLOAD` lists them in order)").format(
                n=len(options)
            ),
        )
    option = options[pick - 1]
    if not isinstance(option, Mapping):
        raise ConfigError(
            _("Option {pick} of the plan is not an object").format(pick=pick), fix=_("plan again with --json")
        )
    _check_training(doc, option, pick)
    gpu = _field(option, "gpu", str, pick)
    per_node = _field(option, "gpus_per_node", int, pick)
    nodes = _field(option, "nodes", int, pick)
    if per_node < 1 or nodes < 1:
        raise ConfigError(
            _("Option {pick} of the plan has {per_node} GPUs per node on {nodes} nodes").format(
                pick=pick, per_node=per_node, nodes=nodes
            ),
            fix=_("plan again with --json; both must be 1 or more"),
        )
    # the plan file's text is written into YAML, shell and Dockerfiles: one printable line each
    provider, region, instance = (
        _one_line(value) if isinstance(value := option.get(key), str) else None
        for key in ("provider", "region", "instance_type")
    )
    return Target(
        gpu=resolve_gpu(gpu).name,
        gpus_per_node=per_node,
        nodes=nodes,
        spot=option.get("pricing") == "spot",
        provider=provider,
        region=region,
        instance_type=instance,
        source=f"plan option {pick}: {provider} {instance} in {region}",
    )


def _check_training(doc: Mapping[str, Any], option: Mapping[str, Any], pick: int) -> None:
    """Every kind runs a training job (`torchrun SCRIPT` under `gpuwise run --resume`, beside the idle
    stopper): a plan for serving cannot be written as one, and a task that looked right would start
    the wrong program and be stopped as idle while it waited for requests."""
    work = doc.get("workload")
    if not isinstance(work, Mapping) or work.get("task") != "inference":
        return
    raise UsageError(
        _("Option {pick} of the plan serves {name}, and gpuwise export writes training jobs").format(
            pick=pick, name=work.get("name") or _("the workload")
        ),
        why=_(
            "every file it writes starts `torchrun SCRIPT` under `gpuwise run --resume` (on SkyPilot beside "
            "an idle stopper, which would stop a server waiting for requests)"
        ),
        fix=_(
            "start your serving engine on that option's machine ({gpus}× {gpu}, {provider}) with its own "
            "tooling; `gpuwise export dockerfile --gpu {gpu}` still picks its CUDA base image and PyTorch "
            "build (replace its CMD with your server)"
        ).format(
            gpus=option.get("gpus_per_node", "?"), gpu=option.get("gpu", "?"), provider=option.get("provider")
        ),
    )


def plan_workload(doc: Any) -> tuple[str | None, float]:
    """(the workload's name, its dataset in GB) as the plan recorded them."""
    work = doc.get("workload") if isinstance(doc, Mapping) else None
    if not isinstance(work, Mapping):
        return None, 0.0
    name = work.get("name") if isinstance(work.get("name"), str) else None
    data = work.get("data")
    dataset = data.get("dataset_gb") if isinstance(data, Mapping) else None
    return name, float(dataset) if isinstance(dataset, int | float) else 0.0


def target_from_flags(
    gpu: str,
    *,
    nodes: int | None = None,
    spot: bool = False,
    provider: str | None = None,
    region: str | None = None,
) -> Target:
    """A target from `--gpu NAME[:N]` (N in total; nodes of at most 8 GPUs unless --nodes says)."""
    name, count = parse_gpu_request(gpu)
    spec = resolve_gpu(name)
    total = count or 1
    nodes = nodes if nodes is not None else max(1, math.ceil(total / 8))
    if nodes < 1 or total % nodes:
        raise ConfigError(
            _("--gpu {gpu} on {nodes} nodes does not split evenly").format(gpu=gpu, nodes=nodes),
            fix=_("give a GPU count that is a multiple of --nodes, e.g. --gpu {example}").format(
                example=f"{spec.name}:{8 * nodes}"
            ),
        )
    return Target(
        gpu=spec.name,
        gpus_per_node=total // nodes,
        nodes=nodes,
        spot=spot,
        provider=provider.lower() if provider else None,
        region=region,
    )


def _one_line(text: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def _field(option: Mapping[str, Any], key: str, kind: type, pick: int) -> Any:
    value = option.get(key)
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(
            _("Option {pick} of the plan has no valid {key} (found {value})").format(
                pick=pick, key=repr(key), value=repr(value)
            ),
            fix=_("plan again with `gpuwise plan WORKLOAD --json` and export from that file"),
        )
    return value
