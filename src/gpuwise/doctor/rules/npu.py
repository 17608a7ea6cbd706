"""Ascend NPU machines (`npu-smi info`): what the doctor can check there, and what it cannot.

Checked, from npu-smi's own table: that the NPUs answer, each chip's Health (``OK``; ``Warning`` is a warn,
``Alarm``/``Critical`` or anything else an error), and the driver version its header prints. Not checked,
and said so in the finding: the firmware version (``npu-smi info -t board -i <id>``), the CANN toolkit
version, and every CUDA/NVIDIA rule (driver, NVML, Xid, CUDA runtime vs driver, PyTorch CUDA builds),
which do not apply to an NPU. On a machine whose accelerators are NPUs only, the NVIDIA rules' "no GPU"
findings are dropped (:func:`without_nvidia_absence`): they would send the user to install a driver for
hardware the machine does not have.

Pure: facts in, findings out.
"""

from __future__ import annotations

from collections import Counter

from gpuwise.doctor.facts import Facts
from gpuwise.doctor.npu import HEALTH_OK, NpuFacts
from gpuwise.doctor.rules.finding import Finding, ok_finding, tr
from gpuwise.doctor.tables import Tables
from gpuwise.locale import N_, _

NPU_IDS = ("npu.found", "npu.unhealthy", "npu.smi_failed")
# What a machine with NPUs and no NVIDIA hardware would otherwise be told (no GPU, install the driver, use a
# CUDA build of PyTorch, pass GPUs to the container): not the machine's problem.
_NVIDIA_ABSENCE = frozenset(
    {
        "gpu.none_found",
        "driver.missing",
        "torch.cpu_only",
        "torch.cuda_unavailable",
        "container.no_gpu_access",
    }
)
_WARN_HEALTH = frozenset({"Warning"})

NOT_CHECKED = N_(
    "not checked on an NPU: CUDA, the NVIDIA driver, NVML, Xid events and PyTorch's CUDA build (they do not "
    "apply); the NPU firmware version (see npu-smi info -t board -i <id>) and the CANN toolkit version "
    "(not printed by npu-smi info)"
)


def check_npu(facts: Facts, _tables: Tables) -> list[Finding]:
    npu = facts.npu
    if npu is None:
        return []
    if npu.error is not None:
        return [
            Finding(
                "npu.smi_failed",
                "error",
                _("npu-smi is installed but did not answer"),
                npu.error,
                _("check the Ascend driver (npu-smi info as root; reinstall the driver package if it fails)"),
            )
        ]
    if not npu.chips:
        return []
    return [_found(npu), *_health(npu)]


def _found(npu: NpuFacts) -> Finding:
    names = Counter(c.name for c in npu.chips)
    npus = len({c.npu for c in npu.chips})
    kinds = ", ".join(f"{n}× {name}" for name, n in names.items())
    driver = npu.driver_version or _("not shown")
    hbm = [c for c in npu.chips if c.hbm_total_mb]
    memory = _("; HBM per chip {mb} MB").format(mb=hbm[0].hbm_total_mb) if hbm else ""
    return Finding(
        "npu.found",
        "info",
        _("Huawei Ascend machine: {npus} NPU(s), {chips} chip(s) ({kinds})").format(
            npus=npus, chips=len(npu.chips), kinds=kinds
        ),
        _("{source}: npu-smi {version}, driver {driver}").format(
            source=npu.source, version=npu.npu_smi_version or _("version not shown"), driver=driver
        )
        + memory,
        _("checked from npu-smi: that the NPUs answer, their health and the driver version; ")
        + tr(NOT_CHECKED),
    )


def _health(npu: NpuFacts) -> list[Finding]:
    bad = [c for c in npu.chips if c.health != HEALTH_OK]
    if not bad:
        return [
            ok_finding(
                "npu.unhealthy",
                _("Every NPU chip reports Health OK"),
                _("{count} chip(s) OK").format(count=len(npu.chips)),
            )
        ]
    severity = "warn" if all(c.health in _WARN_HEALTH for c in bad) else "error"
    evidence = "; ".join(f"NPU {c.npu} chip {c.chip} ({c.bus_id}): Health {c.health}" for c in bad)
    first = bad[0]
    return [
        Finding(
            "npu.unhealthy",
            severity,
            _("{count} NPU chip(s) not healthy").format(count=len(bad)),
            evidence,
            _(
                "see the alarms with npu-smi info -t health -i {npu} (and Huawei's fault code table); "
                "a chip in Alarm or Critical needs the provider to replace or reset it"
            ).format(npu=first.npu),
        )
    ]


def without_nvidia_absence(findings: list[Finding], facts: Facts) -> list[Finding]:
    """Drop the "no NVIDIA GPU" findings on a machine whose accelerators are Ascend NPUs only."""
    npu, driver = facts.npu, facts.driver
    if npu is None or not npu.chips:
        return findings
    if driver is not None and (driver.nvidia_pci_devices or 0) > 0:
        return findings  # NVIDIA hardware too: its problems are real
    return [f for f in findings if f.id not in _NVIDIA_ABSENCE]
