"""`gpuwise export dockerfile`: a Dockerfile on the CUDA base image the target driver supports (images.py,
on the image table and chooser `gpuwise setup --container` uses),
with the matching PyTorch wheel and gpuwise in a virtual environment, running as a non-root user.

hadolint-clean by construction: pinned pip packages with --no-cache-dir, apt lists removed, one RUN per
layer that changes for its own reason, no `latest`. The distribution's Python is left unpinned on purpose
(its security updates matter more than a reproducible patch level), with hadolint's DL3008 waived for that
one line. Pure: values in, text out.
"""

from __future__ import annotations

import json

from gpuwise import __version__
from gpuwise.doctor.versions import format_version
from gpuwise.export.images import ImageChoice, choose_image
from gpuwise.export.target import Job, Target
from gpuwise.export.torchrun import torchrun_argv
from gpuwise.export.yamltext import comment_lines
from gpuwise.setup.tables import driver_text

_UID = 10001


def _header(target: Target, choice: ImageChoice) -> list[str]:
    driver = (
        f"chosen for driver {driver_text(choice.driver)}"
        if choice.driver
        else "no --driver given: the oldest CUDA of the newest PyTorch, for the widest range of drivers"
    )
    arch = f", compute capability {choice.compute_capability}" if choice.compute_capability else ""
    lines = [
        f"gpuwise export dockerfile: {target.gpus_per_node} x {target.gpu}{arch} ({target.source})",
        f"Base: CUDA {format_version(choice.image.cuda)} ({driver}); it needs NVIDIA driver "
        f">= {driver_text(choice.min_driver)} (CUDA release notes, as `gpuwise doctor` checks it).",
        f"torch {choice.torch_version} from {choice.index_url} (a build with code for this GPU"
        + (
            f"; it brings its own CUDA {format_version(choice.torch_cuda)} runtime, newer than the image's, "
            "which this driver cannot run)."
            if choice.torch_cuda > choice.image.cuda
            else ")."
        ),
        "Build: docker build -t IMAGE . (the build context holds the training script)",
    ]
    if choice.dropped_by_driver is not None and choice.driver is not None:
        architecture, last = choice.dropped_by_driver
        lines.insert(
            2,
            f"Note: driver branch {choice.driver[0]} no longer drives {architecture} GPUs (the last branch "
            f"that does is {last}); this image runs on a {last} driver too.",
        )
    return lines


def render_dockerfile(target: Target, job: Job) -> str:
    choice = choose_image(target.gpu, driver=job.driver, torch=job.torch)
    python = choice.image.python
    single = Target(gpu=target.gpu, gpus_per_node=target.gpus_per_node, nodes=1)
    command = ["gpuwise", "run", "--resume", "--", *torchrun_argv(single, job, node_rank="0", master_addr="")]
    lines = comment_lines(_header(target, choice))
    lines += [
        f"FROM {choice.base}",
        "",
        "ENV DEBIAN_FRONTEND=noninteractive \\",
        "    PYTHONUNBUFFERED=1 \\",
        "    PIP_NO_CACHE_DIR=1 \\",
        "    PATH=/opt/venv/bin:$PATH",
        "",
        "# hadolint ignore=DL3008",
        "RUN apt-get update \\",
        f"    && apt-get install -y --no-install-recommends {python} {python}-venv \\",
        "    && rm -rf /var/lib/apt/lists/*",
        "",
        f"RUN {python} -m venv /opt/venv \\",
        f'    && pip install --no-cache-dir "torch=={choice.torch_version}" \\',
        f"       --index-url {choice.index_url} \\",
        f'    && pip install --no-cache-dir "gpuwise=={__version__}"',
        "",
        # a numeric, non-root user (uid 1000 is taken by "ubuntu" in the 24.04 images)
        f"RUN groupadd --gid {_UID} trainer && useradd --create-home --uid {_UID} --gid {_UID} trainer",
        "WORKDIR /home/trainer/app",
        f"COPY --chown={_UID}:{_UID} . .",
        f"USER {_UID}",
        "",
        f"CMD {json.dumps(command)}",
    ]
    return "\n".join(lines) + "\n"
