"""Constructed facts for the doctor's rule tests: one healthy machine, and ways to break it.

The healthy machine: 2× H100 80GB on driver 550.90.07 (CUDA 12.4), PyTorch 2.5.1+cu124 built for sm_90,
inside a container that sees the GPUs, 16 GiB /dev/shm, Jupyter on loopback only, SSH keys-only.
"""

from __future__ import annotations

from dataclasses import replace

from gpuwise.doctor.facts import (
    ContainerFacts,
    DriverFacts,
    Facts,
    FrameworkFacts,
    GpuFacts,
    KeyFileFact,
    ListeningSocket,
    SpaceFacts,
    SshdFacts,
    WebService,
)
from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.units import GIB


def healthy_sample(index: int = 0, **changes: object) -> Sample:
    sample = Sample(
        timestamp_s=1_700_000_000.0,
        index=index,
        uuid=f"GPU-0000000{index}",
        name="NVIDIA H100 80GB HBM3",
        bus_id=f"00000000:1{index}:00.0",
        util_gpu_pct=95.0,
        memory_used_bytes=40 * GIB,
        memory_total_bytes=80 * GIB,
        power_draw_watts=600.0,
        power_limit_watts=700.0,
        temperature_c=60.0,
        throttle_reasons=(),
        pcie_gen_current=5,
        pcie_gen_max=5,
        pcie_width_current=16,
        pcie_width_max=16,
        ecc_mode_enabled=True,
        ecc_uncorrected_volatile=0,
        ecc_uncorrected_aggregate=0,
        remapped_rows_uncorrectable=0,
        remapped_rows_pending=False,
        remapped_rows_failure=False,
        persistence_mode=True,
        compute_capability="9.0",
    )
    return replace(sample, **changes)  # type: ignore[arg-type]


def healthy_snapshot(**changes: object) -> Snapshot:
    snapshot = Snapshot(
        samples=(healthy_sample(0), healthy_sample(1)),
        driver_version="550.90.07",
        cuda_driver_version="12.4",
    )
    return replace(snapshot, **changes)  # type: ignore[arg-type]


HEALTHY_TORCH = FrameworkFacts(
    name="pytorch",
    version="2.5.1+cu124",
    cuda_version="12.4",
    cudnn_version="90100",
    nccl_version="2.21.5",
    arch_list=("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"),
    cuda_available=True,
    device_count=2,
    device_capabilities=("9.0", "9.0"),
)


def healthy_facts() -> Facts:
    return Facts(
        gpus=GpuFacts(source="nvml", snapshots=(healthy_snapshot(),)),
        driver=DriverFacts(
            proc_version_line="NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 2024",
            kernel_module_version="550.90.07",
            nvidia_pci_devices=2,
            nvml_library_version="550.90.07",
        ),
        xids=(),
        frameworks=(HEALTHY_TORCH,),
        container=ContainerFacts(
            in_container=True,
            markers=("/.dockerenv",),
            nvidia_device_nodes=("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"),
            nvidia_visible_devices="all",
            toolkit=None,
        ),
        shm=SpaceFacts("/dev/shm", "shm", 16 * GIB, 16 * GIB),
        disks=(SpaceFacts("/work", "working directory", 1000 * GIB, 500 * GIB),),
        services=(WebService("jupyter", "127.0.0.1", 8888, False, True, "runtime file: token set"),),
        listening=(ListeningSocket("127.0.0.1", 8888, True), ListeningSocket("0.0.0.0", 22, False)),
        sshd=SshdFacts(
            "/etc/ssh/sshd_config",
            "no",
            "prohibit-password",
            "/etc/ssh/sshd_config.d/60-cloudimg.conf:1: PasswordAuthentication no",
            "not set: OpenSSH's default is prohibit-password",
            True,
        ),
        ssh_keys=(KeyFileFact("/home/u/.ssh/id_ed25519", 0o600),),
        system={"os": "Ubuntu 22.04.4 LTS", "kernel": "5.15.0-105-generic"},
    )
