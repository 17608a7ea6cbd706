"""Hand a chosen plan option to the engines people already run: SkyPilot, Kubernetes, torchrun, Docker.

gpuwise does not manage clusters; `gpuwise export KIND` writes the file each engine takes (a SkyPilot task, a
Kubernetes Job or JobSet, torchrun command lines, a Dockerfile) for a target read from a plan option or from
flags, with checkpoint sync (`gpuwise run --sync`), idle stop and the metrics exporter wired in.

    target.py      Target (the machines) and Job (what runs), from `plan --json` or flags
    names.py       GPU names in SkyPilot's vocabulary and the Kubernetes GPU product label
    images.py      the CUDA base image and torch wheel a driver supports (doctor's tables)
    skypilot.py, k8s.py, torchrun.py, dockerfile.py   one renderer per kind
    yamltext.py    the small YAML writer they share

Pure: values in, text out. May import plan, catalog, estimate, workload and doctor's tables; never cli/.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuwise.export.dockerfile import render_dockerfile
from gpuwise.export.k8s import render_k8s
from gpuwise.export.skypilot import render_skypilot
from gpuwise.export.target import Job, Target, target_from_flags, target_from_plan
from gpuwise.export.torchrun import render_torchrun

KINDS: dict[str, Callable[[Target, Job], str]] = {
    "dockerfile": render_dockerfile,
    "k8s": render_k8s,
    "skypilot": render_skypilot,
    "torchrun": render_torchrun,
}

__all__ = ["KINDS", "Job", "Target", "render", "target_from_flags", "target_from_plan"]


def render(kind: str, target: Target, job: Job) -> str:
    """The file of this kind (a key of KINDS) for the target and job."""
    return KINDS[kind](target, job)
