"""The bash script `gpuwise setup` prints: steps as data, rendered with a check before each install.

Each `Step` has a bash test that succeeds when the step is already done, the commands that do it, and the
comment lines that say why each version was chosen. `render` wraps every step in `if DONE; then … else …`
so the script is idempotent: run it again after the reboot the driver needs and it continues where it
stopped. `set -euo pipefail`; root only through `as_root` (sudo when not root). Pure: text in, text out.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from gpuwise.doctor.versions import format_version
from gpuwise.setup.choose import Target
from gpuwise.setup.python import min_python, os_python

_CUDA_REPOS = "https://developer.download.nvidia.com/compute/cuda/repos"
_PYTORCH_INDEX = "https://download.pytorch.org/whl"
_CTK = "https://nvidia.github.io/libnvidia-container"
_CTK_KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"


@dataclass(frozen=True)
class Step:
    id: str  # "repo", "driver", "cuda", "cudnn", "framework", "docker", "container-toolkit", "runtime", …
    title: str
    why: tuple[str, ...]  # comment lines
    done: str  # a bash test that succeeds when nothing is left to do
    commands: tuple[str, ...]
    reboot: bool = False  # the machine must reboot before the next step can work


def steps_for(target: Target, *, container: bool) -> list[Step]:
    """The steps in their order: repository, driver, then the toolkit, cuDNN and the framework in a venv —
    or, with ``container``, Docker, the NVIDIA Container Toolkit and the CUDA base image."""
    steps = [_repo_step(target), _driver_step(target)]
    if container:
        steps += _container_steps(target)
    else:
        steps.append(_cuda_step(target))
        if target.cudnn_major is not None:
            steps.append(_cudnn_step(target))
        steps.append(_framework_step(target))
    return steps


def _why(target: Target, what: str) -> tuple[str, ...]:
    return tuple(f"{r.value}: {r.why}" for r in target.reasons if r.what == what)


def _pm(target: Target) -> str:
    return "apt-get" if target.system.family == "apt" else "dnf"


# On Debian the driver packages of NVIDIA's repository depend on packages from Debian's `contrib` component,
# which a stock Debian install (cloud images included) leaves off: NVIDIA's CUDA Installation Guide for Linux
# and its Driver Installation Guide (Debian sections) both enable it with `add-apt-repository contrib` before
# installing. Without it apt stops at the driver with unmet dependencies.
_DEBIAN_CONTRIB_WHY = (
    "Debian's contrib component, which NVIDIA's driver packages depend on (NVIDIA CUDA Installation Guide "
    "for Linux, Debian: 'Enable the contrib repository')"
)
_ENABLE_CONTRIB = (
    "as_root apt-get install -y software-properties-common",
    "as_root add-apt-repository -y contrib || true",  # judged by the check below, not by its exit code
)
# apt's policy lists every enabled component as `c=contrib`; grep reads all of it (no -q: with pipefail an
# early exit would fail apt-cache with SIGPIPE and the step would run every time)
_CONTRIB_ENABLED = "apt-cache policy 2>/dev/null | grep 'c=contrib' >/dev/null"
# add-apt-repository may leave a source it does not parse untouched (deb822 `.sources` files): stop here with
# what to edit rather than at the driver with unmet dependencies
_CONTRIB_CHECK = (
    f"{_CONTRIB_ENABLED} || {{ echo \"Debian's contrib component is still not enabled: add contrib after "
    "main on the Debian lines of /etc/apt/sources.list (or to Components: in "
    '/etc/apt/sources.list.d/debian.sources), then run this script again." >&2; exit 1; }'
)


def _repo_step(target: Target) -> Step:
    repo = target.system.nvidia_repo
    base = f"{_CUDA_REPOS}/{repo}/x86_64"
    why = (f"NVIDIA's CUDA repository for {target.system.name} ({repo}): driver, toolkit and cuDNN packages",)
    if target.system.family == "apt":
        debian = target.system.os_release_id == "debian"
        return Step(
            "repo",
            "NVIDIA CUDA repository",
            why + ((_DEBIAN_CONTRIB_WHY,) if debian else ()),
            "dpkg -s cuda-keyring >/dev/null 2>&1" + (f" && {_CONTRIB_ENABLED}" if debian else ""),
            (
                "as_root apt-get update",
                "as_root apt-get install -y ca-certificates curl",
                f"curl -fsSLo /tmp/cuda-keyring.deb {base}/cuda-keyring_1.1-1_all.deb",
                "as_root dpkg -i /tmp/cuda-keyring.deb",
                *(_ENABLE_CONTRIB if debian else ()),
                "as_root apt-get update",
                *((_CONTRIB_CHECK,) if debian else ()),
            ),
        )
    extra: tuple[str, ...] = ()
    if target.system.os_release_id == "rocky":
        extra = ("as_root dnf install -y epel-release",)  # DKMS comes from EPEL on RHEL-family systems
    elif target.system.os_release_id == "rhel":
        major = target.system.os.rsplit("-", 1)[1]
        extra = (
            f"as_root dnf install -y https://dl.fedoraproject.org/pub/epel/epel-release-latest-{major}.noarch.rpm",
        )
    return Step(
        "repo",
        "NVIDIA CUDA repository",
        why,
        f"[ -f /etc/yum.repos.d/cuda-{repo}.repo ]",
        (
            "as_root dnf install -y dnf-plugins-core",
            *extra,
            f"as_root dnf config-manager --add-repo {base}/cuda-{repo}.repo",
            "as_root dnf clean expire-cache",
        ),
    )


# A driver installed with NVIDIA's .run installer leaves its uninstaller here. Driver packages installed over
# it leave two drivers' files fighting (NVIDIA CUDA Installation Guide for Linux, "Handle Conflicting
# Installation Methods": uninstall the runfile first), so the step stops instead (an older runfile driver;
# one of the chosen branch or newer already passes the step's check).
_NO_RUNFILE_DRIVER = (
    "if [ -x /usr/bin/nvidia-uninstall ]; then echo \"A driver installed with NVIDIA's .run installer is on "
    "this machine: driver packages must not go over it. Remove it first (sudo /usr/bin/nvidia-uninstall), "
    'then run this script again." >&2; exit 1; fi'
)


# A driver from the distribution's own archive (Ubuntu's nvidia-driver-535-server, Debian's nvidia-driver) and
# NVIDIA's repository packages share package names at other versions, so apt mixes the two and stops with
# unmet dependencies or a half-replaced driver. NVIDIA's guide says to remove an installation made another way
# first ("Handle Conflicting Installation Methods"), with its driver removal command (`apt-get --purge remove
# "*nvidia*" "libxnvctrl*"`). The archive's builds are told apart by their version: Ubuntu's updates carry
# `ubuntu0.` (535.183.01-0ubuntu0.22.04.1; NVIDIA's repository builds are -0ubuntu1 or -1) and Debian's
# `~deb` (535.216.03-1~deb12u1). The step only runs when that driver's branch is older than the chosen one.
# Servers often carry no nvidia-driver-* package but the headless set (nvidia-headless-535-server), so the
# driver's CUDA library is looked at too (libnvidia-compute-* on Ubuntu, libcuda1 on Debian).
_DRIVER_PACKAGES = "'nvidia-driver*' 'nvidia-headless*' 'libnvidia-compute*' libcuda1"
_NO_DISTRIBUTION_DRIVER = (
    "distribution_driver=\"$(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n' "
    f"{_DRIVER_PACKAGES} 2>/dev/null "
    '| awk \'$1 == "ii" && $3 ~ /(ubuntu0[.]|~deb)/ {print $2 " " $3; exit}\' || true)"',
    # a driver that works may be worth keeping: its branch, for `gpuwise setup --driver` (580.65.06 -> 580)
    'if [ -n "$distribution_driver" ]; then kept="${distribution_driver##* }"; echo "A driver from the '
    "distribution's own packages is on this machine ($distribution_driver): NVIDIA's driver packages "
    "conflict with it. Remove it first (sudo apt-get --purge remove '*nvidia*' 'libxnvctrl*'; sudo apt-get "
    "autoremove), then run this script again; or keep it: gpuwise setup --driver ${kept%%.*} prints a script "
    'for its branch." >&2; exit 1; fi',
)


def _driver_step(target: Target) -> Step:
    branch = target.branch.branch
    last = target.gpu.architecture.last_driver_branch
    upper = f' && [ "$branch" -le {last} ]' if last is not None else ""
    done = f'branch="$(installed_driver_branch)" && [ -n "$branch" ] && [ "$branch" -ge {branch} ]{upper}'
    if target.system.family == "apt":
        package = f"nvidia-open-{branch}" if target.open_modules else f"cuda-drivers-{branch}"
        commands: tuple[str, ...] = (
            _NO_RUNFILE_DRIVER,
            *_NO_DISTRIBUTION_DRIVER,
            'as_root apt-get install -y "linux-headers-$(uname -r)"',
            f"as_root apt-get install -y {package}",
        )
    else:
        stream = f"{branch}-open" if target.open_modules else f"{branch}-dkms"
        package = "nvidia-open" if target.open_modules else "cuda-drivers"
        headers = "kernel-modules-extra" if target.system.os_release_id == "amzn" else "kernel-headers"
        commands = (
            _NO_RUNFILE_DRIVER,
            f'as_root dnf install -y "kernel-devel-$(uname -r)" "{headers}-$(uname -r)"',
            f"as_root dnf module enable -y nvidia-driver:{stream}",
            f"as_root dnf install -y {package}",
        )
    return Step(
        "driver",
        f"NVIDIA driver branch {branch}",
        _why(target, "driver"),
        done,
        commands,
        reboot=True,
    )


def _cuda_step(target: Target) -> Step:
    version = format_version(target.cuda)
    package = f"cuda-toolkit-{target.cuda[0]}-{target.cuda[1]}"
    return Step(
        "cuda",
        f"CUDA toolkit {version}",
        _why(target, "cuda"),
        f"[ -x /usr/local/cuda-{version}/bin/nvcc ]",
        (f"as_root {_pm(target)} install -y {package}",),
    )


def _cudnn_step(target: Target) -> Step:
    package = f"cudnn{target.cudnn_major}-cuda-{target.cuda[0]}"
    query = "dpkg -s" if target.system.family == "apt" else "rpm -q"
    return Step(
        "cudnn",
        f"cuDNN {target.cudnn_major} for CUDA {target.cuda[0]}",
        _why(target, "cudnn"),
        f"{query} {package} >/dev/null 2>&1",
        (f"as_root {_pm(target)} install -y {package}",),
    )


def _framework_step(target: Target) -> Step:
    build = target.build
    interpreter = os_python(target.system.os)
    python = f"as_root {_pm(target)} install -y {' '.join(interpreter.packages)}"
    need = min_python(build.version)
    # GPUWISE_PYTHON may name an older one: pip would find no wheel, after the driver and toolkit went in
    too_old = (
        f'"$PYTHON" -c \'import sys; sys.exit(sys.version_info < {tuple(need)})\' || {{ echo "torch '
        f"{build.version} needs Python {format_version(need)} or newer, and $PYTHON is older: set "
        'GPUWISE_PYTHON to a newer one" >&2; exit 1; }'
        if need is not None
        else None
    )
    # the venv's torch must be this release and this CUDA build: torch.version.cuda is "12.6" for cu126;
    # a patch asked for is that patch ("2.8.0+cu128" is 2.8.0), else any of the release
    release = (
        f"torch.__version__.split('+')[0] == '{target.pin}'"
        if target.pin
        else f"torch.__version__.startswith('{build.version}.')"
    )
    probe = (
        f"import sys, torch; sys.exit(0 if {release} and torch.version.cuda == '{build.cuda_version}' else 1)"
    )
    return Step(
        "framework",
        f"PyTorch {build.version} ({build.variant}) in $VENV",
        (
            *_why(target, "framework"),
            f"the venv's Python: {interpreter.command} ({format_version(interpreter.version)}; "
            f"{interpreter.source}); torch {build.version} needs Python "
            f"{format_version(need) if need else '(not in the table)'} or newer (PyTorch's release matrix); "
            "set GPUWISE_PYTHON to use another",
            *(
                (
                    f"torch=={target.pin} as asked (the tables hold releases, not patches: pip refuses one "
                    "never published)",
                )
                if target.pin
                else ()
            ),
        ),
        f'[ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "{probe}" >/dev/null 2>&1',
        (
            python,
            *((too_old,) if too_old else ()),
            '"$PYTHON" -m venv "$VENV"',
            '"$VENV/bin/python" -m pip install --upgrade pip',
            f'"$VENV/bin/python" -m pip install "{_requirement(target)}" --index-url '
            f"{_PYTORCH_INDEX}/{build.variant}",
        ),
    )


def _requirement(target: Target) -> str:
    """pip's requirement: the patch asked for (`--framework torch==2.8.0`), else the release's newest."""
    return f"torch=={target.pin}" if target.pin else f"torch=={target.build.version}.*"


def _container_steps(target: Target) -> list[Step]:
    apt = target.system.family == "apt"
    if apt:
        docker: tuple[str, ...] = ("as_root apt-get install -y docker.io",)
        toolkit: tuple[str, ...] = (
            "as_root apt-get install -y curl gnupg",
            f"curl -fsSL {_CTK}/gpgkey | as_root gpg --dearmor --yes -o {_CTK_KEYRING}",
            f"curl -fsSL {_CTK}/stable/deb/nvidia-container-toolkit.list"
            f" | sed 's#deb https://#deb [signed-by={_CTK_KEYRING}] https://#g'"
            " | as_root tee /etc/apt/sources.list.d/nvidia-container-toolkit.list >/dev/null",
            "as_root apt-get update",
            "as_root apt-get install -y nvidia-container-toolkit",
        )
    else:
        docker = (
            ("as_root dnf install -y docker",)
            if target.system.os_release_id == "amzn"
            else (
                "as_root dnf config-manager --add-repo https://download.docker.com/linux/rhel/docker-ce.repo",
                "as_root dnf install -y docker-ce docker-ce-cli containerd.io",
            )
        )
        toolkit = (
            f"curl -fsSL {_CTK}/stable/rpm/nvidia-container-toolkit.repo"
            " | as_root tee /etc/yum.repos.d/nvidia-container-toolkit.repo >/dev/null",
            "as_root dnf install -y nvidia-container-toolkit",
        )
    image = target.image.image if target.image else ""
    ctk_doc = (
        "NVIDIA Container Toolkit install guide (docs.nvidia.com/datacenter/cloud-native/container-toolkit)"
    )
    return [
        Step(
            "docker",
            "Docker",
            ("the container engine the NVIDIA Container Toolkit configures",),
            "command -v docker >/dev/null 2>&1",
            (*docker, "as_root systemctl enable --now docker"),
        ),
        Step(
            "container-toolkit",
            "NVIDIA Container Toolkit",
            (f"gives containers the host's driver and GPUs; {ctk_doc}",),
            "command -v nvidia-ctk >/dev/null 2>&1",
            toolkit,
        ),
        Step(
            "runtime",
            "the nvidia runtime in Docker's configuration",
            ("nvidia-ctk registers the nvidia runtime in /etc/docker/daemon.json; Docker must restart",),
            "grep -qs '\"nvidia\"' /etc/docker/daemon.json",
            ("as_root nvidia-ctk runtime configure --runtime=docker", "as_root systemctl restart docker"),
        ),
        Step(
            "image",
            f"the base image {image}",
            _why(target, "image"),
            f"as_root docker image inspect {image} >/dev/null 2>&1",
            (f"as_root docker pull {image}",),
        ),
    ]


def _header(target: Target, *, container: bool, version: str) -> list[str]:
    gpu = target.gpu
    stack = (
        f"Docker + NVIDIA Container Toolkit + {target.image.image}"
        if container and target.image
        else f"CUDA {format_version(target.cuda)}, torch {target.build.version} ({target.build.variant})"
    )
    return [
        "#!/usr/bin/env bash",
        f"# gpuwise {version} setup for {target.system.name}, {gpu.name} ({gpu.architecture.name}, compute "
        f"capability {gpu.capability})",
        f"# Stack: NVIDIA driver branch {target.branch.branch}, {stack}.",
        "# Every step checks first, so running this again is safe. gpuwise only prints it: read it,",
        "# then run it yourself (steps that need root use sudo). After the driver step, reboot and run",
        "# it again.",
        "set -euo pipefail",
        "",
        *_guards(target),
        "",
        "as_root() {",
        '  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi',
        "}",
        "",
        "# the branch of the installed NVIDIA kernel module (readable before the reboot that loads it)",
        "installed_driver_branch() {",
        "  modinfo -F version nvidia 2>/dev/null | cut -d. -f1",
        "}",
    ] + (
        []
        if container
        else [
            "",
            f'PYTHON="${{GPUWISE_PYTHON:-{os_python(target.system.os).command}}}"',
            'VENV="${GPUWISE_VENV:-$HOME/venv-torch}"',
        ]
    )


def _guards(target: Target) -> list[str]:
    """Refuse to run on another distribution or CPU architecture: the packages and repositories differ."""
    os_id = target.system.os
    point = f"|{os_id}.*" if target.system.family == "dnf" and target.system.os_release_id != "amzn" else ""
    return [
        "# this script is for one distribution and x86_64: stop on anything else",
        "# shellcheck source=/dev/null",
        'os_id="$(. /etc/os-release && echo "${ID:-}-${VERSION_ID:-}")"',
        'case "$os_id" in',
        f"  {os_id}{point}) ;;",
        f'  *) echo "This script is for {os_id}, not $os_id: run gpuwise setup here" >&2; exit 1 ;;',
        "esac",
        'if [ "$(uname -m)" != x86_64 ]; then',
        '  echo "This script is for x86_64, not $(uname -m)" >&2',
        "  exit 1",
        "fi",
    ]


def render(
    target: Target, steps: list[Step], *, container: bool, version: str, done_already: tuple[str, ...] = ()
) -> str:
    """The whole script. ``done_already`` names steps `--check` found done (listed as comments)."""
    lines = _header(target, container=container, version=version)
    if done_already:
        lines += ["", "# Already done on this machine: " + ", ".join(done_already)]
    for number, step in enumerate(steps, 1):
        lines += ["", f"# --- Step {number}: {step.title}"]
        lines += [f"# {line}" for why in step.why for line in textwrap.wrap(why, 100, break_on_hyphens=False)]
        lines += [
            f"if {step.done}; then",
            f'  echo "ok: {step.title}"',
            "else",
            f'  echo "installing: {step.title}"',
        ]
        lines += [f"  {command}" for command in step.commands]
        if step.reboot:
            lines += ['  echo "Reboot now (sudo reboot), then run this script again to finish."', "  exit 0"]
        lines.append("fi")
    lines += ["", *_footer(target, container=container)]
    return "\n".join(lines) + "\n"


def _footer(target: Target, *, container: bool) -> list[str]:
    if container and target.image:
        image = target.image.image
        return [
            f'echo "Done. Try: docker run --rm --gpus all {image} nvidia-smi"',
            f"echo \"In the image, install the framework: pip install '{_requirement(target)}' "
            f'--index-url {_PYTORCH_INDEX}/{target.build.variant}"',
        ]
    return [
        "echo \"Done. Check: $VENV/bin/python -c 'import torch; print(torch.cuda.is_available())'\"",
        'echo "Diagnose anything left with: gpuwise doctor --python $VENV/bin/python"',
    ]
