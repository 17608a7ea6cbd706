"""The doctor's rules: facts → findings. Pure: no files, clock, environment, subprocesses or printing.

Each rule looks at one part of `Facts` and returns findings with a stable id (docs/json.md), a severity
("ok" | "info" | "warn" | "error"), the evidence (the exact line or value it judged) and the fix (the exact
command or setting). A rule whose facts were not gathered (None) returns nothing; a rule that ran and found
nothing wrong returns one "ok" finding, which the CLI shows only with --all.

This package holds the rules by area; this module is their registry (`RULES`, run in that order by
`diagnose`) and the verdict line. Modules: `finding` (the Finding model and severities), `fixes` (the
titles and fix texts as data), `replay` (the recording itself), `driver` (kernel module, library, reader
errors), `gpu_health` (per-GPU state: lost, throttling, ECC, row remapping, PCIe, persistence, fans; Xid
events), `frameworks` (CUDA runtime vs driver, PyTorch builds, framework probes), `system` (container GPU
access, /dev/shm, disk space), `security` (exposed Jupyter and services, sshd settings, key permissions),
`npu` (Huawei Ascend NPUs from npu-smi: what can and cannot be checked there).

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpuwise.doctor.facts import Facts, GpuFacts
from gpuwise.doctor.rules.driver import check_driver, check_gpu_count
from gpuwise.doctor.rules.finding import SEVERITIES, SEVERITY_RANK, Finding
from gpuwise.doctor.rules.frameworks import check_cuda_driver, check_framework_probes, check_torch
from gpuwise.doctor.rules.gpu_health import (
    check_ecc,
    check_fan,
    check_lost,
    check_pcie,
    check_persistence,
    check_remap,
    check_throttle,
    check_xid,
)
from gpuwise.doctor.rules.npu import NPU_IDS, check_npu, without_nvidia_absence
from gpuwise.doctor.rules.replay import check_replay
from gpuwise.doctor.rules.security import check_jupyter, check_keys, check_sshd
from gpuwise.doctor.rules.system import check_container, check_disks, check_shm
from gpuwise.doctor.tables import Tables
from gpuwise.gpu.sample import Snapshot
from gpuwise.locale import _


def diagnose(facts: Facts, tables: Tables) -> list[Finding]:
    """Every rule over ``facts``: the most severe first, then by id (stable order)."""
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule(facts, tables))
    findings = without_nvidia_absence(findings, facts)  # an Ascend-only machine has no NVIDIA GPU to miss
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.id))


def verdict(findings: Iterable[Finding]) -> str:
    """One line for the bottom of the report."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        counts[finding.severity] += 1
    if counts["error"]:
        head = _("NOT OK: {count} error(s)").format(count=counts["error"])
    elif counts["warn"]:
        head = _("OK with warnings")
    else:
        head = _("OK")
    words = {"warn": _("{count} warn"), "info": _("{count} info")}
    rest = ", ".join(words[s].format(count=counts[s]) for s in ("warn", "info") if counts[s])
    return head + (_(" ({counts})").format(counts=rest) if rest else "")


RULES: tuple[Callable[[Facts, Tables], list[Finding]], ...] = (
    check_replay,
    check_driver,
    check_gpu_count,
    check_lost,
    check_throttle,
    check_ecc,
    check_remap,
    check_pcie,
    check_persistence,
    check_fan,
    check_xid,
    check_cuda_driver,
    check_torch,
    check_framework_probes,
    check_container,
    check_shm,
    check_disks,
    check_jupyter,
    check_sshd,
    check_keys,
    check_npu,
)

# The ids the rules can raise; docs/json.md names the first block, the rest are gpuwise's own extensions.
FINDING_IDS = (
    "driver.missing",
    "driver.library_mismatch",
    "driver.nvml_error",
    "gpu.none_found",
    "gpu.lost",
    "gpu.throttle",
    "gpu.ecc_uncorrectable",
    "gpu.remap_pending",
    "gpu.xid",
    "gpu.pcie_degraded",
    "gpu.persistence_off",
    "gpu.fan_failure",
    "cuda.driver_too_old",
    "torch.arch_unsupported",
    "container.no_gpu_access",
    "system.shm_small",
    "security.jupyter_exposed",
    "security.ssh_password_auth",
    "security.key_permissions",
    "replay.unparsed",
    "torch.cpu_only",
    "torch.cuda_unavailable",
    "framework.probe_failed",
    "system.disk_low",
    "security.service_exposed",
    "security.ssh_root_login",
    *NPU_IDS,
)


def gpu_count(gpus: GpuFacts | None) -> int:
    latest: Snapshot | None = gpus.latest if gpus is not None else None
    return len(latest.samples) if latest is not None else 0
