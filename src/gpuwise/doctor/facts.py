"""The facts the doctor reasons about: plain frozen data, gathered live (`gather`) or from a recording
(`replay`), and read by the pure rules (`rules`).

A field that is None was not gathered (the check did not run); an empty tuple was gathered and held nothing.
What could not be read is said in `Facts.unreadable`, never silently skipped. Pure data: no I/O here, and
nothing imported beyond the standard library, `gpuwise.gpu.sample` and the NPU facts (`gpuwise.doctor.npu`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwise.doctor.npu import NpuFacts
from gpuwise.gpu.sample import Snapshot


@dataclass(frozen=True)
class XidFact:
    """One `NVRM: Xid` kernel-log line."""

    xid: int
    pci_bus: str | None
    message: str
    line: str  # the kernel-log line as read


@dataclass(frozen=True)
class GpuFacts:
    """What the GPU reader returned: one or more snapshots (a recording may hold idle and load)."""

    source: str  # "nvml", "nvidia-smi", "replay:<format>"
    snapshots: tuple[Snapshot, ...]
    errors: tuple[str, ...] = ()  # reader failures and nvidia-smi's error texts, as printed

    @property
    def latest(self) -> Snapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def all_errors(self) -> tuple[str, ...]:
        seen: dict[str, None] = dict.fromkeys(self.errors)
        for snapshot in self.snapshots:
            seen.update(dict.fromkeys(snapshot.errors))
        return tuple(seen)


@dataclass(frozen=True)
class DriverFacts:
    """The kernel module as the kernel reports it, and whether the machine has NVIDIA hardware at all."""

    proc_version_line: str | None  # first line of /proc/driver/nvidia/version; None when absent
    kernel_module_version: str | None  # "550.90.07" parsed from that line
    nvidia_pci_devices: (
        int | None
    )  # NVIDIA (vendor 0x10de) display/3D controllers on the PCI bus; None = unknown
    nvml_library_version: str | None = None  # the user-space library's version, when NVML answered


@dataclass(frozen=True)
class FrameworkFacts:
    """One installed framework, probed in a subprocess."""

    name: str  # "pytorch" | "tensorflow" | "jax"
    version: str | None
    cuda_version: str | None = None  # the CUDA runtime the build uses; None for CPU-only builds
    cudnn_version: str | None = None
    nccl_version: str | None = None
    arch_list: tuple[str, ...] | None = None  # torch.cuda.get_arch_list(); None when not known
    cuda_available: bool | None = None
    device_count: int | None = None
    device_capabilities: tuple[str, ...] = ()  # "9.0" per visible device
    cuda_error: str | None = None  # why CUDA is unavailable, as the framework said it (a warning text)
    error: str | None = None  # the probe itself failed or timed out: why


@dataclass(frozen=True)
class ContainerFacts:
    in_container: bool
    markers: tuple[str, ...]  # why we think so: "/.dockerenv", "cgroup: docker", …
    nvidia_device_nodes: tuple[str, ...]  # /dev/nvidia0, /dev/nvidiactl, …
    nvidia_visible_devices: str | None  # the environment variable, as set
    toolkit: str | None  # where the NVIDIA Container Toolkit was seen (a program path), or None


@dataclass(frozen=True)
class SpaceFacts:
    path: str
    role: str  # "shm", "working directory", "dataset"
    total_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class ListeningSocket:
    address: str  # "0.0.0.0", "::", "127.0.0.1", "10.0.0.5"
    port: int
    loopback_only: bool


@dataclass(frozen=True)
class WebService:
    """A well-known web service listening on a port (Jupyter, TensorBoard, an exporter)."""

    kind: str  # "jupyter" | "tensorboard" | "exporter" | "ray-dashboard"
    address: str
    port: int
    exposed: bool  # listening beyond loopback
    auth_required: bool | None  # None = could not tell
    auth_evidence: str  # how we know ("GET /api/status -> 403", "runtime file jpserver-1.json: token set")


@dataclass(frozen=True)
class SshdFacts:
    source: str  # "sshd -T" or the config file(s) read
    password_authentication: str  # effective value, lowercase ("yes"/"no")
    permit_root_login: str  # "yes", "no", "prohibit-password", …
    password_evidence: (
        str  # the deciding line ("/etc/ssh/sshd_config.d/50-cloud-init.conf:1: PasswordAuthentication yes")
    )
    root_evidence: str
    listening: bool | None = None  # something listens on port 22 beyond loopback


@dataclass(frozen=True)
class KeyFileFact:
    path: str
    mode: int  # st_mode & 0o777


@dataclass(frozen=True)
class ParseProblem:
    source: str
    message: str


@dataclass(frozen=True)
class Facts:
    """Everything one doctor run knows. None = not gathered (that check did not run)."""

    gpus: GpuFacts | None = None
    driver: DriverFacts | None = None
    xids: tuple[XidFact, ...] | None = None
    frameworks: tuple[FrameworkFacts, ...] | None = None
    container: ContainerFacts | None = None
    shm: SpaceFacts | None = None
    disks: tuple[SpaceFacts, ...] | None = None
    services: tuple[WebService, ...] | None = None
    listening: tuple[ListeningSocket, ...] | None = None
    sshd: SshdFacts | None = None
    ssh_keys: tuple[KeyFileFact, ...] | None = None
    system: dict[str, str] = field(default_factory=dict)  # os, kernel, hostname, python
    unreadable: tuple[str, ...] = ()  # "kernel log: dmesg: Operation not permitted"
    problems: tuple[ParseProblem, ...] = ()  # parts of a recording that could not be read
    replay_path: str | None = None
    npu: NpuFacts | None = None  # Huawei Ascend NPUs (`npu-smi info`); None = no npu-smi, not checked
