"""System rules: GPU access inside a container, the size of /dev/shm, free disk space.

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

from gpuwise.doctor.facts import Facts, SpaceFacts
from gpuwise.doctor.rules.finding import Finding, ok_finding, tr
from gpuwise.doctor.rules.fixes import FIX
from gpuwise.doctor.tables import Tables
from gpuwise.locale import _
from gpuwise.units import GIB, format_bytes

# Docker's default /dev/shm is 64 MiB; PyTorch DataLoader workers pass batches through it and die with
# "bus error" well before 1 GiB on image or video batches.
SHM_MIN_BYTES = 1 * GIB
DISK_MIN_FREE_BYTES = 10 * GIB


def check_container(facts: Facts, _tables: Tables) -> list[Finding]:
    c = facts.container
    if c is None or not c.in_container:
        return []
    visible = (c.nvidia_visible_devices or "").strip().lower()
    if c.nvidia_device_nodes and visible not in {"void", "none"}:
        return [
            ok_finding(
                "container.no_gpu_access",
                _("The container sees NVIDIA devices"),
                ", ".join(c.nvidia_device_nodes[:4]),
            )
        ]
    why = [_("no /dev/nvidia* device nodes") if not c.nvidia_device_nodes else ""]
    if c.nvidia_visible_devices is not None:
        why.append(f"NVIDIA_VISIBLE_DEVICES={c.nvidia_visible_devices}")
    return [
        Finding(
            "container.no_gpu_access",
            "error",
            _("This container has no access to the GPUs"),
            _("in a container ({markers})").format(markers=", ".join(c.markers))
            + "; "
            + "; ".join(w for w in why if w),
            tr(FIX["container.no_gpu_access"]),
        )
    ]


def _space(s: SpaceFacts) -> str:
    return _("{path}: {free} free of {total}").format(
        path=s.path, free=format_bytes(s.free_bytes), total=format_bytes(s.total_bytes)
    )


def check_shm(facts: Facts, _tables: Tables) -> list[Finding]:
    shm = facts.shm
    if shm is None:
        return []
    if shm.total_bytes >= SHM_MIN_BYTES:
        return [ok_finding("system.shm_small", _("/dev/shm is large enough"), _space(shm))]
    in_container = facts.container is not None and facts.container.in_container
    fix = tr(FIX["system.shm_small/container" if in_container else "system.shm_small/host"])
    return [
        Finding(
            "system.shm_small",
            "warn",
            _("/dev/shm is small: DataLoader workers will crash ('bus error', 'No space left on device')"),
            _space(shm),
            fix + tr(FIX["system.shm_small/stopgap"]),
        )
    ]


def check_disks(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.disks is None:
        return []
    low = [
        d for d in facts.disks if d.free_bytes < DISK_MIN_FREE_BYTES or d.free_bytes < 0.05 * d.total_bytes
    ]
    if not low:
        return (
            [
                ok_finding(
                    "system.disk_low", _("Enough free disk space"), "; ".join(_space(d) for d in facts.disks)
                )
            ]
            if facts.disks
            else []
        )
    return [
        Finding(
            "system.disk_low",
            "warn",
            _("Little free disk space (checkpoints and datasets will not fit)"),
            "; ".join(f"{tr(d.role)} {_space(d)}" for d in low),
            tr(FIX["system.disk_low"]),
        )
    ]
