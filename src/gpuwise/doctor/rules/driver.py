"""Driver rules: the GPU reader's error texts, the kernel module against the user-space library, and a
machine where nothing answered (judged by the kernel module and the PCI bus, which need no driver).

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

import re

from gpuwise.doctor.facts import DriverFacts, Facts, GpuFacts
from gpuwise.doctor.rules.finding import Finding, ok_finding, tr
from gpuwise.doctor.rules.fixes import ERROR_TEXT, NO_GPU_HARDWARE, USER_SPACE_MISSING
from gpuwise.doctor.tables import Tables
from gpuwise.doctor.versions import parse_version
from gpuwise.gpu.smi import ErrorKind, classify_error_text
from gpuwise.locale import _

# nvidia-smi's own failure texts are classified by the gpu room (gpu.smi.classify_error_text); these cover
# what only the live readers say (NVML's Python errors, a missing library or program, a dmesg wording).
_FINDING_BY_ERROR_KIND = {
    ErrorKind.LIBRARY_MISMATCH: "driver.library_mismatch",
    ErrorKind.DRIVER_MISSING: "driver.missing",
    ErrorKind.NO_DEVICES: "gpu.none_found",
    ErrorKind.GPU_LOST: "gpu.lost",
    ErrorKind.NVML_INIT: "driver.nvml_error",
}
_MISMATCH = re.compile(r"version mismatch|kernel module are different versions", re.I)
_NO_DRIVER = re.compile(
    r"driver not loaded|no nvidia driver found|nvidia kernel module.*not loaded"
    r"|nvml shared library not found|libnvidia-ml\.so.*(not found|cannot open)"
    r"|nvidia-smi.*(not found|no such file)",
    re.I,
)
_NONE_FOUND = re.compile(r"no devices were found", re.I)
_LOST = re.compile(r"unable to determine the device handle|fallen off the bus", re.I)
_BUS_ID = re.compile(r"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])", re.I)


def classify_error(text: str) -> str:
    """Which finding an error text that nvidia-smi or NVML printed stands for."""
    kind = classify_error_text(text)
    if kind is not None:
        return _FINDING_BY_ERROR_KIND[kind]
    if _MISMATCH.search(text):
        return "driver.library_mismatch"
    if _NO_DRIVER.search(text):
        return "driver.missing"
    if _NONE_FOUND.search(text):
        return "gpu.none_found"
    if _LOST.search(text):
        return "gpu.lost"
    return "driver.nvml_error"


def check_driver(facts: Facts, _tables: Tables) -> list[Finding]:
    """Error texts of the GPU reader, the kernel module vs the library, and no driver at all."""
    gpus, driver = facts.gpus, facts.driver
    if gpus is None and driver is None:
        return []
    errors = gpus.all_errors() if gpus is not None else ()
    by_id: dict[str, list[str]] = {}
    for text in errors:
        by_id.setdefault(classify_error(text), []).append(text)
    found = _reader_errors(gpus, by_id)

    mismatch = _library_mismatch(driver) if driver is not None else None
    if mismatch is not None and "driver.library_mismatch" not in by_id:
        found.append(mismatch)
        by_id["driver.library_mismatch"] = []

    no_readings = gpus is None or not any(s.samples for s in gpus.snapshots)
    if driver is not None and no_readings:
        found = _nothing_answered(driver, " | ".join(errors), by_id, found)
    if not found:
        version = driver_version(facts)
        found.append(
            ok_finding(
                "driver.missing",
                _("NVIDIA driver loaded"),
                _("driver {version}").format(version=version or _("unknown version")),
            )
        )
    return found


def _reader_errors(gpus: GpuFacts | None, by_id: dict[str, list[str]]) -> list[Finding]:
    """One error finding per kind of error text the GPU reader printed (its texts as the evidence)."""
    found: list[Finding] = []
    any_lost_sample = gpus is not None and any(s.lost for snap in gpus.snapshots for s in snap.samples)
    for rule_id, texts in by_id.items():
        if rule_id == "gpu.lost" and any_lost_sample:
            continue  # check_lost reports it per GPU
        title, fix = map(tr, ERROR_TEXT[rule_id])
        if rule_id == "gpu.lost":
            buses = [m.group(1) for t in texts if (m := _BUS_ID.search(t))]
            if buses:
                fix = fix.replace("<bus id>", buses[0])
        found.append(Finding(rule_id, "error", title, " | ".join(texts), fix))
    return found


def _library_mismatch(driver: DriverFacts) -> Finding | None:
    """The kernel module and the library each report a version; after an upgrade without reboot they
    differ."""
    if not (driver.kernel_module_version and driver.nvml_library_version):
        return None
    kernel = parse_version(driver.kernel_module_version)
    library = parse_version(driver.nvml_library_version)
    if not (kernel and library and kernel != library):
        return None
    title, fix = map(tr, ERROR_TEXT["driver.library_mismatch"])
    return Finding(
        "driver.library_mismatch",
        "error",
        title,
        _("kernel module {kernel} (/proc/driver/nvidia/version) vs user-space library {library}").format(
            kernel=driver.kernel_module_version, library=driver.nvml_library_version
        ),
        fix,
    )


def _nothing_answered(
    driver: DriverFacts, said: str, by_id: dict[str, list[str]], found: list[Finding]
) -> list[Finding]:
    """No GPU reading came back: judge by the kernel module and the PCI bus, which need no driver to read.
    ``said`` is every reader error text; returns ``found`` with the reader errors the module explains
    replaced by one finding that names the cause."""
    pci = driver.nvidia_pci_devices
    reader = _("; GPU reader: {said}").format(said=said) if said else ""
    if driver.proc_version_line is None and pci == 0:
        return [
            Finding(
                "gpu.none_found",
                "error",
                tr(NO_GPU_HARDWARE.title),
                _(
                    "no PCI device with vendor 0x10de under /sys/bus/pci/devices; "
                    "/proc/driver/nvidia/version absent"
                )
                + reader,
                tr(NO_GPU_HARDWARE.fix),
            )
        ]
    if driver.proc_version_line is None and "driver.library_mismatch" not in by_id:
        # No kernel module: every reader error follows from that; say it once, with the PCI evidence.
        found = [f for f in found if f.id not in {"driver.missing", "driver.nvml_error", "gpu.none_found"}]
        where = (
            _("{count} NVIDIA device(s) on the PCI bus").format(count=pci)
            if pci
            else _("NVIDIA devices on the PCI bus: unknown")
        )
        title, fix = map(tr, ERROR_TEXT["driver.missing"])
        evidence = _("/proc/driver/nvidia/version absent; {where}").format(where=where) + reader
        found.append(Finding("driver.missing", "error", title, evidence, fix))
    elif driver.proc_version_line is not None and "driver.missing" in by_id:
        # The kernel module is loaded (possibly the host's, seen from a container); user space is missing.
        found = [f for f in found if f.id != "driver.missing"]
        found.append(
            Finding(
                "driver.missing",
                "error",
                tr(USER_SPACE_MISSING.title),
                driver.proc_version_line
                + _("; GPU reader: {said}").format(said=" | ".join(by_id["driver.missing"])),
                tr(USER_SPACE_MISSING.fix),
            )
        )
    elif driver.proc_version_line is not None and pci == 0 and not by_id:
        title, fix = map(tr, ERROR_TEXT["gpu.none_found"])
        found.append(
            Finding(
                "gpu.none_found",
                "error",
                title,
                driver.proc_version_line + _("; no NVIDIA device on the PCI bus"),
                fix,
            )
        )
    return found


def check_gpu_count(facts: Facts, _tables: Tables) -> list[Finding]:
    """Readings came back but listed no GPU (and no error text said so)."""
    gpus = facts.gpus
    if gpus is None or not gpus.snapshots:
        return []
    latest = gpus.snapshots[-1]
    if latest.samples:
        names = sorted({str(s.name) for s in latest.samples})
        return [ok_finding("gpu.none_found", _("GPUs found"), f"{len(latest.samples)} × {', '.join(names)}")]
    if any(classify_error(e) != "driver.nvml_error" for e in gpus.all_errors()):
        return []  # check_driver already explains the empty answer
    if gpus.all_errors():
        return []
    return [
        Finding(
            "gpu.none_found",
            "error",
            _("The GPU reader answered but listed no GPU"),
            _("{source}: 0 GPUs").format(source=gpus.source),
            tr(ERROR_TEXT["gpu.none_found"].fix),
        )
    ]


def driver_version(facts: Facts) -> str | None:
    """The user-space driver version the GPU reader saw, else the kernel module's."""
    if facts.gpus is not None:
        for snapshot in reversed(facts.gpus.snapshots):
            if isinstance(snapshot.driver_version, str) and snapshot.driver_version:
                return snapshot.driver_version
    if facts.driver is not None and facts.driver.kernel_module_version:
        return facts.driver.kernel_module_version
    return None
