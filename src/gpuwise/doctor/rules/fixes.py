"""The findings' fixed words as data: titles and fix texts, kept apart from the logic that picks them.

A fix is the exact command or setting to run. Placeholders: ``<index>`` and ``<bus id>`` are replaced with
the first affected GPU's index and PCI bus id (`gpu_health.gpu_rule`, `driver`); ``{name}`` fields are
filled with `str.format` by the rule that uses the text. Every text is marked with N_() for the catalog
and translated (`finding.tr`) by the rule that shows it; a translation keeps the placeholders. Standard
library only.
"""

from __future__ import annotations

from typing import NamedTuple

from gpuwise.locale import N_


class Text(NamedTuple):
    """A finding's title and its fix."""

    title: str
    fix: str


class GpuText(NamedTuple):
    """A per-GPU rule's title and fix when a GPU fails it, and its title when every GPU passes."""

    title: str
    fix: str
    ok_title: str


# What an error text of the GPU reader (or a missing kernel module) stands for, by finding id
# (driver.classify_error picks the id).
ERROR_TEXT = {
    "driver.library_mismatch": Text(
        N_("NVIDIA kernel module and user-space library versions differ"),
        N_(
            "reboot (a driver upgrade replaced the libraries while the old kernel module stayed loaded); "
            "without a reboot: stop GPU processes, then "
            "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia; "
            "to stop it recurring, hold the driver packages: "
            "sudo apt-mark hold 'nvidia-*' 'libnvidia-*'"
        ),
    ),
    "driver.missing": Text(
        N_("The NVIDIA driver is not loaded or not installed"),
        N_(
            "install the driver with the script gpuwise prints for this machine and its GPU: gpuwise setup "
            "--gpu <your GPU, e.g. H100> > setup.sh, read it, then bash setup.sh (the driver branch the GPU "
            "needs, then a reboot; it detects the OS); or with Ubuntu's own packages (sudo ubuntu-drivers "
            "install, or sudo apt install nvidia-driver-<branch>-server) and reboot; if it is installed, "
            "load it: sudo modprobe nvidia "
            "(check: lsmod | grep nvidia; dmesg | grep NVRM; Secure Boot may block unsigned modules)"
        ),
    ),
    "gpu.none_found": Text(
        N_("The driver is loaded but found no usable GPU"),
        N_(
            "check that the instance type has a GPU and it is attached (lspci -d 10de:); look for "
            "'RmInitAdapter failed' in sudo dmesg (driver too old for the GPU, or a hardware fault: stop "
            "and start the instance to get another host)"
        ),
    ),
    "gpu.lost": Text(
        N_("A GPU cannot be reached (lost, or fallen off the bus)"),
        N_(
            "stop the jobs on it and reset it: sudo nvidia-smi -r -i <bus id>; if that fails, reboot; if "
            "it recurs, the host is faulty: stop and start the instance to move to another host, or ask the "
            "provider"
        ),
    ),
    "driver.nvml_error": Text(
        N_("NVML (the library nvidia-smi and monitoring use) fails"),
        N_(
            "inside a container: restart the container (a systemd daemon-reload on the host can revoke "
            "GPU device access with cgroups v2; NVIDIA Container Toolkit >= 1.13 with 'nvidia-ctk system "
            "create-dev-char-symlinks' prevents it); on the host: check lsmod | grep nvidia and "
            "sudo dmesg | grep NVRM, then reboot"
        ),
    ),
}

# When nothing answered: no GPU on the PCI bus at all, or a kernel module without its user-space part.
NO_GPU_HARDWARE = Text(
    N_("This machine has no NVIDIA GPU (none on the PCI bus, no driver loaded)"),
    N_(
        "use an instance type with a GPU (gpuwise plan lists them); in a container, the host must pass "
        "the GPU through (docker run --gpus all …)"
    ),
)
USER_SPACE_MISSING = Text(
    N_("The NVIDIA kernel module is loaded but its user-space part (libnvidia-ml, nvidia-smi) is missing"),
    N_(
        "install the user-space driver of the same version as the kernel module (Ubuntu: sudo apt install "
        "nvidia-utils-<branch>-server); in a container, start it with --gpus all so the NVIDIA "
        "Container Toolkit mounts them"
    ),
)

# The per-GPU state rules (gpu_health.gpu_rule), by finding id.
GPU_STATE_TEXT = {
    "gpu.lost": GpuText(*ERROR_TEXT["gpu.lost"], N_("Every GPU answers")),
    "gpu.throttle": GpuText(
        N_("GPU clocks are being slowed down (throttling)"),
        N_(
            "check temperature and cooling: nvidia-smi -q -d TEMPERATURE,PERFORMANCE (fans, airflow, "
            "data-centre "
            "inlet); power brake or HW slowdown on a cloud instance is a host problem: stop and start "
            "the instance to move hosts, or report it; a SW power cap alone under full load is normal "
            "(see nvidia-smi -q -d POWER)"
        ),
        N_("No clock slowdown"),
    ),
    "gpu.ecc_uncorrectable": GpuText(
        N_("Uncorrectable ECC memory errors"),
        N_(
            "stop the jobs on that GPU (results computed on it may be corrupt), reset it: sudo "
            "nvidia-smi -r -i <index> (or reboot) and check nvidia-smi -q -d ECC,ROW_REMAPPER; recurring "
            "errors mean a faulty GPU: move hosts or ask the provider for a replacement"
        ),
        N_("No uncorrectable ECC errors"),
    ),
    "gpu.remap_pending": GpuText(
        N_("GPU memory repair is waiting for a GPU reset"),
        N_(
            "stop the jobs on that GPU and reset it so the remapping takes effect: "
            "sudo nvidia-smi -r -i <index> (or reboot); a remapping failure means the GPU needs replacing: "
            "move hosts or contact the provider"
        ),
        N_("No memory repair pending"),
    ),
    "gpu.pcie_degraded": GpuText(
        N_("PCIe link runs below its capability"),
        N_(
            "check the link under load: nvidia-smi -q -d PCIE (and lspci -vv -s <bus id> | grep LnkSta); "
            "a narrow or slow link is a seating, riser or host-slot problem: on a cloud instance stop and "
            "start it to move hosts, or report it to the provider"
        ),
        N_("PCIe links at full width (and full speed under load)"),
    ),
    "gpu.persistence_off": GpuText(
        N_("Persistence mode is off (each CUDA start re-initialises the GPU; slower starts, settings lost)"),
        N_("sudo systemctl enable --now nvidia-persistenced (or: sudo nvidia-smi -pm 1)"),
        N_("Persistence mode on"),
    ),
    "gpu.fan_failure": GpuText(
        N_("A GPU fan (or its sensor) has failed"),
        N_(
            "watch the temperature (nvidia-smi -q -d TEMPERATURE); a failed fan makes the GPU throttle "
            "and overheat: have the fan or card replaced (on a rented machine, report it and move hosts)"
        ),
        N_("Fans report normally"),
    ),
}

# Fix texts of the other rules, by finding id (a "/…" suffix names a variant).
FIX = {
    "replay.unparsed": (
        N_(
            "record the output again (nvidia-smi -q -x > gpu.xml) and replay that; "
            "the other parts were checked"
        )
    ),
    "gpu.xid/unknown": (
        N_(
            "look the code up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) and run "
            "nvidia-bug-report.sh if it recurs"
        )
    ),
    "gpu.xid/counter": N_("read the kernel log: sudo dmesg | grep Xid"),
    "torch.cuda_unavailable": (
        N_("see the driver, container and CUDA findings; check that CUDA_VISIBLE_DEVICES is not empty")
    ),
    "torch.arch_unsupported/no_build": (
        N_("build PyTorch from source with TORCH_CUDA_ARCH_LIST set to this GPU's capability")
    ),
    "framework.probe_failed": (
        N_(
            "run it by hand to see the error: python -c 'import {module}'; a hang while importing or "
            "initialising CUDA points at the driver (see sudo dmesg | grep NVRM)"
        )
    ),
    "container.no_gpu_access": (
        N_(
            "start it with GPU access: docker run --gpus all … (the host needs the NVIDIA Container Toolkit: "
            "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker); "
            "on Kubernetes request the resource nvidia.com/gpu: 1"
        )
    ),
    "system.shm_small/container": (
        N_(
            "restart the container with a larger /dev/shm: docker run --shm-size=16g … (or --ipc=host); "
            "on Kubernetes mount an emptyDir with medium: Memory at /dev/shm"
        )
    ),
    "system.shm_small/host": N_("sudo mount -o remount,size=16G /dev/shm (and set it in /etc/fstab)"),
    "system.shm_small/stopgap": N_("; or use DataLoader(num_workers=0) as a stopgap"),
    "system.disk_low": (
        N_(
            "free space (du -xh --max-depth=1 PATH | sort -h; pip cache purge; huggingface-cli delete-cache) "
            "or attach a larger volume"
        )
    ),
    "security.jupyter_exposed": (
        N_(
            "listen on loopback only: jupyter lab --ip=127.0.0.1 (c.ServerApp.ip = '127.0.0.1') and connect "
            "through SSH: ssh -N -L {port}:localhost:{port} user@host; never run with --ServerApp.token=''"
        )
    ),
    "security.service_exposed": (
        N_(
            "bind it to 127.0.0.1 (tensorboard --host 127.0.0.1) and use ssh -N -L {port}:localhost:{port} "
            "user@host, or close the port in the cloud firewall/security group"
        )
    ),
    "security.ssh_password_auth": (
        N_(
            "put 'PasswordAuthentication no' and 'KbdInteractiveAuthentication no' in "
            "/etc/ssh/sshd_config.d/00-gpuwise.conf, {reload}; make sure your key login works first"
        )
    ),
    "security.ssh_root_login": (
        N_(
            "put 'PermitRootLogin prohibit-password' (or no) in "
            "/etc/ssh/sshd_config.d/00-gpuwise.conf, {reload}"
        )
    ),
    "security.ssh/reload": (
        N_(
            "then sudo sshd -t && sudo systemctl reload ssh "
            "(the first value wins: files in sshd_config.d are read first)"
        )
    ),
}
