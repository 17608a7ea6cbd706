"""One live doctor run: every gatherer at once, each bounded in time, into one `Facts`.

The GPU reader (gpuwise.gpu.probe: NVML, then nvidia-smi) runs in a daemon thread with a deadline, so a
driver that never answers is reported instead of hanging the doctor. Frameworks run in child processes
(framework_probe.gather_frameworks). Nothing here needs root; what could not be read is listed in
`Facts.unreadable`.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuwise.doctor import framework_probe, gather, npu_live
from gpuwise.doctor.facts import DriverFacts, Facts, GpuFacts, SpaceFacts
from gpuwise.locale import N_, _


@dataclass(frozen=True)
class LiveOptions:
    paths: tuple[Path, ...] = ()  # dataset paths (--path) whose free space is checked
    workdir: Path = field(default_factory=Path.cwd)
    python: str | None = None  # interpreter whose frameworks are probed (default: this one)
    framework_timeout_s: float = 20.0
    gpu_timeout_s: float = 15.0
    home: Path = field(default_factory=Path.home)


def read_gpus(timeout_s: float) -> GpuFacts:
    """One snapshot through the GPU probe, abandoned (and said so) after ``timeout_s``."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = _probe_once()
        except Exception as exc:  # any reader failure is a fact to report, not a crash
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            why = getattr(exc, "why", "")
            box["error"] = f"{message} ({why})" if why else message

    thread = threading.Thread(target=work, name="gpuwise-doctor-gpu", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return GpuFacts(
            "none",
            (),
            errors=(
                _(
                    "the GPU reader (NVML / nvidia-smi) did not answer within {seconds} s: "
                    "the driver may be hung"
                ).format(seconds=f"{timeout_s:.0f}"),
            ),
        )
    if "error" in box:
        return GpuFacts("none", (), errors=(str(box["error"]),))
    value: GpuFacts = box["value"]
    return value


def _probe_once() -> GpuFacts:
    from gpuwise.gpu.probe import open_probe

    probe = open_probe(None)
    try:
        snapshot = probe.read()
    finally:
        probe.close()
    source = {"NvmlProbe": "nvml", "SmiProbe": "nvidia-smi"}.get(type(probe).__name__, type(probe).__name__)
    return GpuFacts(source, (snapshot,))


def gather_facts(options: LiveOptions) -> Facts:
    """Every live gatherer, in parallel; finishes in a few seconds on a healthy machine."""
    proc, sys_root, root = Path("/proc"), Path("/sys"), Path("/")
    runtime_dirs = [options.home / ".local" / "share" / "jupyter" / "runtime"]
    if os.environ.get("JUPYTER_RUNTIME_DIR"):
        runtime_dirs.insert(0, Path(os.environ["JUPYTER_RUNTIME_DIR"]))

    results = gather.in_parallel(
        {
            "gpus": lambda: read_gpus(options.gpu_timeout_s),
            "driver": lambda: gather.gather_driver(proc, sys_root),
            "xids": gather.gather_kernel_xids,
            "frameworks": lambda: framework_probe.gather_frameworks(
                options.python, options.framework_timeout_s
            ),
            "container": lambda: gather.gather_container(root),
            "listening": lambda: gather.gather_listening(proc),
            "keys": lambda: gather.gather_ssh_keys(options.home),
            "npu": npu_live.gather_npu,  # Huawei Ascend: only where npu-smi is installed
        }
    )
    unreadable: list[str] = []

    def take(name: str) -> Any:
        pair: tuple[Any, list[str]] = results[name]  # type: ignore[assignment]
        unreadable.extend(pair[1])
        return pair[0]

    gpus: GpuFacts = results["gpus"]  # type: ignore[assignment]
    driver: DriverFacts = take("driver")
    listening = take("listening")
    services = gather.gather_services(listening or (), runtime_dirs) if listening is not None else None
    sshd, lost = gather.gather_sshd(listening=listening)
    unreadable.extend(lost)

    shm, lost = gather.gather_space(Path("/dev/shm"), "shm")
    unreadable.extend(lost)
    disks: list[SpaceFacts] = []
    # the roles are ids in the JSON; marked for the catalog because the disk finding shows them
    roles = [(options.workdir, N_("working directory")), *((p, N_("dataset")) for p in options.paths)]
    for path, role in roles:
        space, lost = gather.gather_space(path, role)
        unreadable.extend(lost)
        if space is not None:
            disks.append(space)

    system = gather.gather_system()
    system["hostname"] = socket.gethostname()
    if "CUDA_VISIBLE_DEVICES" in os.environ:  # the framework probes inherit it: it can hide every GPU
        system["cuda_visible_devices"] = os.environ["CUDA_VISIBLE_DEVICES"]
    nvml_version = _nvml_library_version(gpus)
    if nvml_version and driver is not None:
        driver = replace(driver, nvml_library_version=nvml_version)
    return Facts(
        gpus=gpus,
        driver=driver,
        xids=take("xids"),
        frameworks=take("frameworks"),
        container=take("container"),
        shm=shm,
        disks=tuple(disks),
        services=services,
        listening=listening,
        sshd=sshd,
        ssh_keys=take("keys"),
        system=system,
        unreadable=tuple(unreadable),
        npu=take("npu"),
    )


def _nvml_library_version(gpus: GpuFacts) -> str | None:
    """The user-space driver version the reader saw (compared with the kernel module's)."""
    latest = gpus.latest
    if latest is not None and isinstance(latest.driver_version, str):
        return latest.driver_version
    return None
