"""The doctor's rules: facts → findings. Pure: no files, clock, environment, subprocesses or printing.

Each rule looks at one part of `Facts` and returns findings with a stable id (docs/json.md), a severity
("ok" | "info" | "warn" | "error"), the evidence (the exact line or value it judged) and the fix (the exact
command or setting). A rule whose facts were not gathered (None) returns nothing; a rule that ran and found
nothing wrong returns one "ok" finding, which the CLI shows only with --all.

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpuwise.doctor.facts import Facts, FrameworkFacts, GpuFacts, SpaceFacts, XidFact
from gpuwise.doctor.tables import Tables
from gpuwise.doctor.versions import Version, at_least, format_version, major_minor, parse_version
from gpuwise.gpu import throttle
from gpuwise.gpu.sample import Failed, Sample, Snapshot, has_value
from gpuwise.gpu.smi import ErrorKind, classify_error_text
from gpuwise.units import GIB, format_bytes

SEVERITIES = ("ok", "info", "warn", "error")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}

# A GPU this busy is "under load" for the PCIe generation check (links drop to gen 1 at idle to save power).
LOAD_UTIL_PCT = 30.0
# Docker's default /dev/shm is 64 MiB; PyTorch DataLoader workers pass batches through it and die with
# "bus error" well before 1 GiB on image or video batches.
SHM_MIN_BYTES = 1 * GIB
DISK_MIN_FREE_BYTES = 10 * GIB

# Clock-event reasons that cost performance and have a cause worth fixing (Sample.throttle_reasons ids).
_THROTTLE_SERIOUS = {r.id: r.description for r in throttle.REASONS if r.severity == "warn"}


@dataclass(frozen=True)
class Finding:
    """One diagnosis (docs/json.md)."""

    id: str
    severity: str  # "ok" | "info" | "warn" | "error"
    title: str
    evidence: str
    fix: str


def diagnose(facts: Facts, tables: Tables) -> list[Finding]:
    """Every rule over ``facts``: the most severe first, then by id (stable order)."""
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule(facts, tables))
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.id))


def verdict(findings: Iterable[Finding]) -> str:
    """One line for the bottom of the report."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        counts[finding.severity] += 1
    if counts["error"]:
        head = f"NOT OK: {counts['error']} error(s)"
    elif counts["warn"]:
        head = "OK with warnings"
    else:
        head = "OK"
    rest = ", ".join(f"{counts[s]} {s}" for s in ("warn", "info") if counts[s])
    return head + (f" ({rest})" if rest else "")


def _ok(rule_id: str, title: str, evidence: str) -> Finding:
    return Finding(rule_id, "ok", title, evidence, "")


# ---------------------------------------------------------------------------------------------- replay


def check_replay(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.replay_path is None and not facts.problems:
        return []
    found = [
        Finding(
            "replay.unparsed",
            "warn",
            f"Could not parse part of the recording ({problem.source})",
            problem.message,
            "record the output again (nvidia-smi -q -x > gpu.xml) and replay that; the other parts "
            "were checked",
        )
        for problem in facts.problems
    ]
    return found or [_ok("replay.unparsed", "Recording parsed completely", facts.replay_path or "")]


# ---------------------------------------------------------------------------------------------- driver

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


_ERROR_TEXT = {
    "driver.library_mismatch": (
        "NVIDIA kernel module and user-space library versions differ",
        "reboot (a driver upgrade replaced the libraries while the old kernel module stayed loaded); "
        "without a "
        "reboot: stop GPU processes, then sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && "
        "sudo modprobe "
        "nvidia; to stop it recurring, hold the driver packages: sudo apt-mark hold 'nvidia-*' 'libnvidia-*'",
    ),
    "driver.missing": (
        "The NVIDIA driver is not loaded or not installed",
        "install the driver (Ubuntu: sudo ubuntu-drivers install, or sudo apt install "
        "nvidia-driver-<branch>-server) "
        "and reboot; if it is installed, load it: sudo modprobe nvidia (check: lsmod | grep nvidia; "
        "dmesg | grep "
        "NVRM; Secure Boot may block unsigned modules)",
    ),
    "gpu.none_found": (
        "The driver is loaded but found no usable GPU",
        "check that the instance type has a GPU and it is attached (lspci -d 10de:); look for "
        "'RmInitAdapter failed' in sudo dmesg (driver too old for the GPU, or a hardware fault: stop "
        "and start "
        "the instance to get another host)",
    ),
    "gpu.lost": (
        "A GPU cannot be reached (lost, or fallen off the bus)",
        "stop the jobs on it and reset it: sudo nvidia-smi -r -i <bus id>; if that fails, reboot; if "
        "it recurs, "
        "the host is faulty: stop and start the instance to move to another host, or ask the provider",
    ),
    "driver.nvml_error": (
        "NVML (the library nvidia-smi and monitoring use) fails",
        "inside a container: restart the container (a systemd daemon-reload on the host can revoke "
        "GPU device "
        "access with cgroups v2; NVIDIA Container Toolkit >= 1.13 with 'nvidia-ctk system "
        "create-dev-char-symlinks' "
        "prevents it); on the host: check lsmod | grep nvidia and sudo dmesg | grep NVRM, then reboot",
    ),
}


def check_driver(facts: Facts, _tables: Tables) -> list[Finding]:
    """Error texts of the GPU reader, the kernel module vs the library, and no driver at all."""
    found: list[Finding] = []
    gpus, driver = facts.gpus, facts.driver
    if gpus is None and driver is None:
        return []
    errors = gpus.all_errors() if gpus is not None else ()
    by_id: dict[str, list[str]] = {}
    for text in errors:
        by_id.setdefault(classify_error(text), []).append(text)
    any_lost_sample = gpus is not None and any(s.lost for snap in gpus.snapshots for s in snap.samples)
    for rule_id, texts in by_id.items():
        if rule_id == "gpu.lost" and any_lost_sample:
            continue  # check_lost reports it per GPU
        title, fix = _ERROR_TEXT[rule_id]
        if rule_id == "gpu.lost":
            buses = [m.group(1) for t in texts if (m := _BUS_ID.search(t))]
            if buses:
                fix = fix.replace("<bus id>", buses[0])
        found.append(Finding(rule_id, "error", title, " | ".join(texts), fix))

    # The kernel module and the library each report a version; after an upgrade without reboot they differ.
    if driver is not None and driver.kernel_module_version and driver.nvml_library_version:
        kernel = parse_version(driver.kernel_module_version)
        library = parse_version(driver.nvml_library_version)
        if kernel and library and kernel != library and "driver.library_mismatch" not in by_id:
            title, fix = _ERROR_TEXT["driver.library_mismatch"]
            found.append(
                Finding(
                    "driver.library_mismatch",
                    "error",
                    title,
                    f"kernel module {driver.kernel_module_version} (/proc/driver/nvidia/version) vs "
                    f"user-space library {driver.nvml_library_version}",
                    fix,
                )
            )
            by_id["driver.library_mismatch"] = []

    no_readings = gpus is None or not any(s.samples for s in gpus.snapshots)
    if driver is not None and no_readings:
        # Nothing answered: judge by the kernel module and the PCI bus, which need no driver to read.
        pci = driver.nvidia_pci_devices
        said = " | ".join(errors)
        if driver.proc_version_line is None and pci == 0:
            return [
                Finding(
                    "gpu.none_found",
                    "error",
                    "This machine has no NVIDIA GPU (none on the PCI bus, no driver loaded)",
                    "no PCI device with vendor 0x10de under /sys/bus/pci/devices; "
                    "/proc/driver/nvidia/version absent" + (f"; GPU reader: {said}" if said else ""),
                    "use an instance type with a GPU (gpuwise plan lists them); in a container, the "
                    "host must pass "
                    "the GPU through (docker run --gpus all …)",
                )
            ]
        if driver.proc_version_line is None and "driver.library_mismatch" not in by_id:
            # No kernel module: every reader error follows from that; say it once, with the PCI evidence.
            found = [
                f for f in found if f.id not in {"driver.missing", "driver.nvml_error", "gpu.none_found"}
            ]
            where = (
                f"{pci} NVIDIA device(s) on the PCI bus" if pci else "NVIDIA devices on the PCI bus: unknown"
            )
            found.append(
                Finding(
                    "driver.missing",
                    "error",
                    _ERROR_TEXT["driver.missing"][0],
                    f"/proc/driver/nvidia/version absent; {where}"
                    + (f"; GPU reader: {said}" if said else ""),
                    _ERROR_TEXT["driver.missing"][1],
                )
            )
        elif driver.proc_version_line is not None and "driver.missing" in by_id:
            # The kernel module is loaded (possibly the host's, seen from a container); user space is missing.
            found = [f for f in found if f.id != "driver.missing"]
            found.append(
                Finding(
                    "driver.missing",
                    "error",
                    "The NVIDIA kernel module is loaded but its user-space part (libnvidia-ml, "
                    "nvidia-smi) is missing",
                    f"{driver.proc_version_line}; GPU reader: {' | '.join(by_id['driver.missing'])}",
                    "install the user-space driver of the same version as the kernel module (Ubuntu: "
                    "sudo apt install "
                    "nvidia-utils-<branch>-server); in a container, start it with --gpus all so the NVIDIA "
                    "Container Toolkit mounts them",
                )
            )
        elif driver.proc_version_line is not None and pci == 0 and not by_id:
            found.append(
                Finding(
                    "gpu.none_found",
                    "error",
                    _ERROR_TEXT["gpu.none_found"][0],
                    f"{driver.proc_version_line}; no NVIDIA device on the PCI bus",
                    _ERROR_TEXT["gpu.none_found"][1],
                )
            )
    if not found:
        version = _driver_version(facts)
        found.append(_ok("driver.missing", "NVIDIA driver loaded", f"driver {version or 'unknown version'}"))
    return found


def check_gpu_count(facts: Facts, _tables: Tables) -> list[Finding]:
    """Readings came back but listed no GPU (and no error text said so)."""
    gpus = facts.gpus
    if gpus is None or not gpus.snapshots:
        return []
    latest = gpus.snapshots[-1]
    if latest.samples:
        names = sorted({str(s.name) for s in latest.samples})
        return [_ok("gpu.none_found", "GPUs found", f"{len(latest.samples)} × {', '.join(names)}")]
    if any(classify_error(e) != "driver.nvml_error" for e in gpus.all_errors()):
        return []  # check_driver already explains the empty answer
    if gpus.all_errors():
        return []
    return [
        Finding(
            "gpu.none_found",
            "error",
            "The GPU reader answered but listed no GPU",
            f"{gpus.source}: 0 GPUs",
            _ERROR_TEXT["gpu.none_found"][1],
        )
    ]


# ---------------------------------------------------------------------------------------------- GPU state


def _gpu_label(sample: Sample) -> str:
    name = sample.name if has_value(sample.name) else "unknown model"
    bus = f", {sample.bus_id}" if has_value(sample.bus_id) else ""
    return f"GPU {sample.index} ({name}{bus})"


def _per_gpu(
    facts: Facts,
    rule_id: str,
    judge: Callable[[Sample], tuple[str, str] | None],
    applicable: Callable[[Sample], bool],
) -> tuple[dict[str, list[tuple[str, Sample]]], int]:
    """Run ``judge`` over every sample of every snapshot; returns {severity: [(evidence, sample) per GPU]}
    (one entry per GPU, the most severe seen) and how many samples the check applied to."""
    gpus = facts.gpus
    if gpus is None:
        return {}, 0
    worst: dict[str, tuple[str, str, Sample]] = {}  # GPU key -> (severity, evidence, sample)
    checked = 0
    for snapshot in gpus.snapshots:
        for sample in snapshot.samples:
            if sample.lost and rule_id != "gpu.lost":
                continue
            if not applicable(sample):
                continue
            checked += 1
            verdict_ = judge(sample)
            if verdict_ is None:
                continue
            key = str(sample.uuid) if has_value(sample.uuid) else f"{sample.index}/{sample.bus_id}"
            if key not in worst or SEVERITY_RANK[verdict_[0]] > SEVERITY_RANK[worst[key][0]]:
                worst[key] = (*verdict_, sample)
    grouped: dict[str, list[tuple[str, Sample]]] = {}
    for severity, evidence, sample in worst.values():
        grouped.setdefault(severity, []).append((evidence, sample))
    return grouped, checked


def _gpu_rule(  # noqa: PLR0917 - every per-GPU rule passes the same seven parts in the same order
    facts: Facts,
    rule_id: str,
    title: str,
    fix: str,
    ok_title: str,
    judge: Callable[[Sample], tuple[str, str] | None],
    applicable: Callable[[Sample], bool] = lambda _s: True,
) -> list[Finding]:
    grouped, checked = _per_gpu(facts, rule_id, judge, applicable)
    if not checked:
        return []
    if not grouped:
        return [_ok(rule_id, ok_title, f"{checked} reading(s) checked")]
    found = []
    for severity, items in sorted(grouped.items(), key=lambda kv: -SEVERITY_RANK[kv[0]]):
        first = items[0][1]  # the fix names the first affected GPU
        exact = fix.replace("<index>", str(first.index))
        if isinstance(first.bus_id, str):
            exact = exact.replace("<bus id>", first.bus_id)
        found.append(Finding(rule_id, severity, title, "; ".join(e for e, _ in items), exact))
    return found


def check_lost(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        if not s.lost:
            return None
        why = next((str(v) for v in vars(s).values() if isinstance(v, Failed)), "reported as lost")
        return "error", f"{_gpu_label(s)}: {why}"

    return _gpu_rule(
        facts, "gpu.lost", _ERROR_TEXT["gpu.lost"][0], _ERROR_TEXT["gpu.lost"][1], "Every GPU answers", judge
    )


def check_throttle(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        reasons = s.throttle_reasons
        if not isinstance(reasons, tuple):
            return None
        serious = [_THROTTLE_SERIOUS[r] for r in reasons if r in _THROTTLE_SERIOUS]
        if serious:
            return "warn", f"{_gpu_label(s)}: " + ", ".join(serious) + _temp_power(s)
        if "sw_power_cap" in reasons and "gpu_idle" not in reasons:
            return "info", f"{_gpu_label(s)}: SW power cap (drawing its power limit){_temp_power(s)}"
        return None

    return _gpu_rule(
        facts,
        "gpu.throttle",
        "GPU clocks are being slowed down (throttling)",
        "check temperature and cooling: nvidia-smi -q -d TEMPERATURE,PERFORMANCE (fans, airflow, data-centre "
        "inlet); power brake or HW slowdown on a cloud instance is a host problem: stop and start "
        "the instance "
        "to move hosts, or report it; a SW power cap alone under full load is normal (see nvidia-smi "
        "-q -d POWER)",
        "No clock slowdown",
        judge,
        lambda s: isinstance(s.throttle_reasons, tuple),
    )


def _temp_power(s: Sample) -> str:
    parts = []
    if isinstance(s.temperature_c, int | float):
        parts.append(f"{s.temperature_c:.0f} °C")
    if isinstance(s.power_draw_watts, int | float):
        limit = f" of {s.power_limit_watts:.0f} W" if isinstance(s.power_limit_watts, int | float) else ""
        parts.append(f"{s.power_draw_watts:.0f} W{limit}")
    return f" ({', '.join(parts)})" if parts else ""


def check_ecc(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        volatile = s.ecc_uncorrected_volatile
        aggregate = s.ecc_uncorrected_aggregate
        if isinstance(volatile, int) and volatile > 0:
            return (
                "error",
                f"{_gpu_label(s)}: {volatile} uncorrectable ECC error(s) since the last driver load",
            )
        if isinstance(aggregate, int) and aggregate > 0:
            return "warn", f"{_gpu_label(s)}: {aggregate} uncorrectable ECC error(s) over the GPU's lifetime"
        return None

    return _gpu_rule(
        facts,
        "gpu.ecc_uncorrectable",
        "Uncorrectable ECC memory errors",
        "stop the jobs on that GPU (results computed on it may be corrupt), reset it: sudo "
        "nvidia-smi -r -i <index> "
        "(or reboot) and check nvidia-smi -q -d ECC,ROW_REMAPPER; recurring errors mean a faulty "
        "GPU: move hosts "
        "or ask the provider for a replacement",
        "No uncorrectable ECC errors",
        judge,
        lambda s: has_value(s.ecc_uncorrected_volatile) or has_value(s.ecc_uncorrected_aggregate),
    )


def check_remap(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        parts = []
        if s.remapped_rows_pending is True:
            rows = s.remapped_rows_uncorrectable
            count = (
                f"{rows} row(s) remapped for uncorrectable errors, " if isinstance(rows, int) and rows else ""
            )
            parts.append(f"{count}row remapping pending")
        if s.retired_pages_pending is True:
            parts.append("page retirement pending")
        if s.remapped_rows_failure is True:
            parts.append("row remapping FAILED (no spare rows left)")
        if not parts:
            return None
        return "error", f"{_gpu_label(s)}: " + ", ".join(parts)

    return _gpu_rule(
        facts,
        "gpu.remap_pending",
        "GPU memory repair is waiting for a GPU reset",
        "stop the jobs on that GPU and reset it so the remapping takes effect: sudo nvidia-smi -r -i <index> "
        "(or reboot); a remapping failure means the GPU needs replacing: move hosts or contact the provider",
        "No memory repair pending",
        judge,
        lambda s: has_value(s.remapped_rows_pending) or has_value(s.retired_pages_pending),
    )


def check_pcie(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        problems = []
        width, width_max = s.pcie_width_current, s.pcie_width_max
        if isinstance(width, int) and isinstance(width_max, int) and 0 < width < width_max:
            problems.append(f"link width x{width} of x{width_max}")
        gen, gen_max, util = s.pcie_gen_current, s.pcie_gen_max, s.util_gpu_pct
        if (
            isinstance(gen, int)
            and isinstance(gen_max, int)
            and 0 < gen < gen_max
            and isinstance(util, int | float)
            and util >= LOAD_UTIL_PCT
        ):
            problems.append(f"PCIe gen {gen} of gen {gen_max} while {util:.0f} % busy")
        if not problems:
            return None
        return "warn", f"{_gpu_label(s)}: " + ", ".join(problems)

    return _gpu_rule(
        facts,
        "gpu.pcie_degraded",
        "PCIe link runs below its capability",
        "check the link under load: nvidia-smi -q -d PCIE (and lspci -vv -s <bus id> | grep LnkSta); "
        "a narrow or "
        "slow link is a seating, riser or host-slot problem: on a cloud instance stop and start it "
        "to move hosts, "
        "or report it to the provider",
        "PCIe links at full width (and full speed under load)",
        judge,
        lambda s: has_value(s.pcie_width_current) or has_value(s.pcie_gen_current),
    )


def check_persistence(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        if s.persistence_mode is False:
            return "info", f"{_gpu_label(s)}: persistence mode Disabled"
        return None

    return _gpu_rule(
        facts,
        "gpu.persistence_off",
        "Persistence mode is off (each CUDA start re-initialises the GPU; slower starts, settings lost)",
        "sudo systemctl enable --now nvidia-persistenced (or: sudo nvidia-smi -pm 1)",
        "Persistence mode on",
        judge,
        lambda s: has_value(s.persistence_mode),
    )


def check_fan(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        fan = s.fan_speed_pct
        if isinstance(fan, Failed):
            return "warn", f"{_gpu_label(s)}: fan reading failed ({fan.why})" + _temp_power(s)
        return None

    return _gpu_rule(
        facts,
        "gpu.fan_failure",
        "A GPU fan (or its sensor) has failed",
        "watch the temperature (nvidia-smi -q -d TEMPERATURE); a failed fan makes the GPU throttle "
        "and overheat: "
        "have the fan or card replaced (on a rented machine, report it and move hosts)",
        "Fans report normally",
        judge,
        lambda s: has_value(s.fan_speed_pct) or isinstance(s.fan_speed_pct, Failed),
    )


# ---------------------------------------------------------------------------------------------- Xid


def _xid_severity(action_class: str | None) -> str:
    if action_class is None:
        return "warn"
    if action_class == "informational":
        return "info"
    if action_class in {"app_bug", "restart_app"}:
        return "warn"
    return "error"  # reset_gpu, reboot, rma_candidate, check_hardware


def check_xid(facts: Facts, tables: Tables) -> list[Finding]:
    found: list[Finding] = []
    if facts.xids is not None:
        by_code: dict[int, list[XidFact]] = {}
        for event in facts.xids:
            by_code.setdefault(event.xid, []).append(event)
        for code, events in sorted(by_code.items()):
            info = tables.xids.get(code)
            buses = sorted({e.pci_bus for e in events if e.pci_bus})
            where = f" on {', '.join(buses)}" if buses else ""
            times = f" ({len(events)} times{where})" if len(events) > 1 else where and f" ({where.strip()})"
            title = f"Xid {code}" + (
                f" {info.mnemonic}: {info.meaning}" if info else ": not in the Xid table"
            )
            fix = (
                f"{info.recommended_action} (NVIDIA action: {info.immediate_action})"
                if info
                else "look the code up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) and run "
                "nvidia-bug-report.sh if it recurs"
            )
            found.append(
                Finding(
                    "gpu.xid",
                    _xid_severity(info.action_class if info else None),
                    title,
                    events[0].line.strip() + times,
                    fix,
                )
            )
    if not found and facts.gpus is not None:
        # NVML's own Xid counter, when the kernel log could not be read
        for snapshot in facts.gpus.snapshots[-1:]:
            for s in snapshot.samples:
                if isinstance(s.xid_errors, int) and s.xid_errors > 0:
                    last = s.xid_last if isinstance(s.xid_last, int) else None
                    info = tables.xids.get(last) if last is not None else None
                    found.append(
                        Finding(
                            "gpu.xid",
                            _xid_severity(info.action_class if info else None),
                            f"Xid {last}" + (f" {info.mnemonic}: {info.meaning}" if info else "")
                            if last
                            else "Xid errors reported",
                            f"{_gpu_label(s)}: {s.xid_errors} Xid event(s), last Xid {last}",
                            info.recommended_action if info else "read the kernel log: sudo dmesg | grep Xid",
                        )
                    )
    if found:
        return found
    if facts.xids is not None:
        return [_ok("gpu.xid", "No Xid errors in the kernel log", f"{len(facts.xids)} Xid line(s)")]
    return []


# ------------------------------------------------------------------------------------- CUDA / frameworks


def _driver_version(facts: Facts) -> str | None:
    if facts.gpus is not None:
        for snapshot in reversed(facts.gpus.snapshots):
            if isinstance(snapshot.driver_version, str) and snapshot.driver_version:
                return snapshot.driver_version
    if facts.driver is not None and facts.driver.kernel_module_version:
        return facts.driver.kernel_module_version
    return None


def _driver_cuda(facts: Facts) -> str | None:
    if facts.gpus is not None:
        for snapshot in reversed(facts.gpus.snapshots):
            if isinstance(snapshot.cuda_driver_version, str) and snapshot.cuda_driver_version:
                return snapshot.cuda_driver_version
    return None


_PYTORCH_INDEX = "https://download.pytorch.org/whl/"


def _torch_build_for_driver(tables: Tables, driver: Version) -> str | None:
    """The newest PyTorch build variant (cuXYZ) whose CUDA runs on ``driver`` with its own minimum."""
    best: tuple[Version, str] | None = None
    for row in tables.frameworks:
        if row.framework != "pytorch":
            continue
        cuda = parse_version(row.cuda_version)
        req = tables.cuda_requirement(cuda) if cuda else None
        if cuda is None or req is None or not at_least(driver, req.min_driver):
            continue
        if best is None or cuda > best[0]:
            best = (cuda, row.variant)
    return best[1] if best else None


def check_cuda_driver(facts: Facts, tables: Tables) -> list[Finding]:
    """Each framework's CUDA runtime against the installed driver (cuda-compat.csv, field by field)."""
    driver_text = _driver_version(facts)
    frameworks = [f for f in facts.frameworks or () if f.cuda_version]
    if driver_text is None or not frameworks:
        return []
    driver = parse_version(driver_text)
    if driver is None:
        return []
    driver_cuda = parse_version(_driver_cuda(facts) or "")
    found: list[Finding] = []
    checked = []
    for fw in frameworks:
        runtime = parse_version(fw.cuda_version or "")
        if runtime is None:
            continue
        label = f"{fw.name} {fw.version} (CUDA {fw.cuda_version})"
        req = tables.cuda_requirement(runtime)
        newest = _torch_build_for_driver(tables, driver)
        alt = (
            f"; or keep the driver and install a build for an older CUDA: pip install torch --index-url "
            f"{_PYTORCH_INDEX}{newest}"
            if newest and fw.name == "pytorch"
            else ""
        )
        if req is None:
            # Unknown to the table: fall back on the CUDA version the driver itself reports.
            if driver_cuda and runtime[0] > driver_cuda[0]:
                found.append(
                    Finding(
                        "cuda.driver_too_old",
                        "error",
                        f"The driver is too old for {label}",
                        f"driver {driver_text} supports CUDA {format_version(driver_cuda)}; {label}",
                        f"upgrade the NVIDIA driver to a branch for CUDA {runtime[0]}.x{alt}",
                    )
                )
            continue
        checked.append(label)
        if not at_least(driver, req.min_driver_minor_compat):
            found.append(
                Finding(
                    "cuda.driver_too_old",
                    "error",
                    f"The driver is too old for {label}",
                    f"driver {driver_text} < {format_version(req.min_driver_minor_compat)}, the "
                    "minimum for CUDA "
                    f"{format_version(major_minor(runtime))} (even with minor-version compatibility); "
                    "the toolkit's "
                    f"own driver is {format_version(req.min_driver)}",
                    f"upgrade the NVIDIA driver to >= {format_version(req.min_driver)} (Ubuntu: sudo "
                    "apt install "
                    f"nvidia-driver-{req.min_driver[0]}-server, then reboot){alt}",
                )
            )
        elif not at_least(driver, req.min_driver):
            found.append(
                Finding(
                    "cuda.driver_too_old",
                    "info",
                    f"{label} runs on driver {driver_text} only through minor-version compatibility",
                    f"driver {driver_text} < {format_version(req.min_driver)} (CUDA "
                    f"{format_version(req.cuda_version)}'s own driver) but >= "
                    f"{format_version(req.min_driver_minor_compat)} (minor-version compatibility)",
                    f"works, except features of newer drivers and JIT of newer PTX; for full support "
                    "upgrade the "
                    f"driver to >= {format_version(req.min_driver)}",
                )
            )
    if found or not checked:
        return found
    return [
        _ok(
            "cuda.driver_too_old",
            "Driver new enough for the installed CUDA builds",
            f"driver {driver_text}; " + ", ".join(checked),
        )
    ]


def arch_supported(capability: str, arch_list: Iterable[str]) -> bool:
    """Whether a GPU of compute capability "X.Y" can run a build with these targets.

    Binary code sm_XZ runs on X.Y for Z <= Y (same major; arch-specific "a"/"f" targets only on their exact
    GPU); PTX compute_XZ can be JIT-compiled for any GPU at or above X.Z.
    """
    cc = parse_version(capability)
    if cc is None:
        return True
    major, minor = major_minor(cc)
    for arch in arch_list:
        m = re.fullmatch(r"(sm|compute)_(\d+)([af]?)(?:\(PTX\))?", arch.strip())
        if m is None:
            continue
        number = int(m.group(2))
        a_major, a_minor = divmod(number, 10)  # sm_86 -> 8.6, sm_120 -> 12.0
        if m.group(1) == "compute" or arch.endswith("(PTX)"):
            if (major, minor) >= (a_major, a_minor):
                return True
            continue
        if m.group(3):
            if (major, minor) == (a_major, a_minor):
                return True
            continue
        if major == a_major and minor >= a_minor:
            return True
    return False


def _capabilities(facts: Facts, fw: FrameworkFacts) -> list[tuple[str, str]]:
    """(label, "X.Y") per GPU: from the framework's own view, else from the GPU reader."""
    if fw.device_capabilities:
        return [(f"device {i}", cc) for i, cc in enumerate(fw.device_capabilities)]
    out = []
    if facts.gpus is not None and facts.gpus.latest is not None:
        for s in facts.gpus.latest.samples:
            if isinstance(s.compute_capability, str):
                out.append((_gpu_label(s), s.compute_capability))
    return out


def _torch_fix_for(tables: Tables, capability: str) -> str:
    rows = [
        r
        for r in tables.frameworks
        if r.framework == "pytorch" and r.arch_list and arch_supported(capability, r.arch_list)
    ]
    if not rows:
        return "build PyTorch from source with TORCH_CUDA_ARCH_LIST set to this GPU's capability"
    newest = max(
        rows, key=lambda r: (parse_version(r.version) or (0,), parse_version(r.cuda_version) or (0,))
    )
    return (
        f"install a build that includes this GPU: pip install 'torch>={newest.version}' --index-url "
        f"{_PYTORCH_INDEX}{newest.variant} (and a driver new enough for CUDA {newest.cuda_version})"
    )


def check_torch(facts: Facts, tables: Tables) -> list[Finding]:
    """torch.cuda.get_arch_list() vs each GPU's compute capability; CPU-only builds; CUDA not available."""
    if facts.frameworks is None:
        return []
    found: list[Finding] = []
    has_gpus = facts.gpus is not None and facts.gpus.latest is not None and bool(facts.gpus.latest.samples)
    for fw in facts.frameworks:
        if fw.name != "pytorch" or fw.error:
            continue
        if fw.cuda_version is None:
            if has_gpus:
                driver = parse_version(_driver_version(facts) or "")
                variant = (_torch_build_for_driver(tables, driver) if driver else None) or "cu126"
                found.append(
                    Finding(
                        "torch.cpu_only",
                        "error",
                        f"PyTorch {fw.version} is a CPU-only build on a GPU machine",
                        f"torch.version.cuda is None (torch {fw.version})",
                        f"pip install --force-reinstall torch --index-url {_PYTORCH_INDEX}{variant}",
                    )
                )
            continue
        if fw.cuda_available is False and has_gpus:
            found.append(
                Finding(
                    "torch.cuda_unavailable",
                    "error",
                    "PyTorch cannot use the GPU (torch.cuda.is_available() is False)",
                    f"torch {fw.version} (CUDA {fw.cuda_version}): is_available() = False"
                    + (f"; {fw.cuda_error}" if fw.cuda_error else ""),
                    "see the driver, container and CUDA findings; check that CUDA_VISIBLE_DEVICES is "
                    "not empty",
                )
            )
        arch_list: tuple[str, ...] | None = fw.arch_list or None
        source = "torch.cuda.get_arch_list()"
        if arch_list is None and fw.version:
            row = tables.framework_build("pytorch", fw.version, None)
            if row is not None and row.arch_list:
                arch_list, source = row.arch_list, f"framework-cuda.csv ({row.version} {row.variant})"
        caps = _capabilities(facts, fw)
        if arch_list is None or not caps:
            continue
        bad = [(label, cc) for label, cc in caps if not arch_supported(cc, arch_list)]
        if bad:
            found.append(
                Finding(
                    "torch.arch_unsupported",
                    "error",
                    f"PyTorch {fw.version} has no kernels for this GPU ('no kernel image is available')",
                    "; ".join(f"{label}: compute capability {cc}" for label, cc in bad)
                    + f"; {source} = {','.join(arch_list)}",
                    _torch_fix_for(tables, bad[0][1]),
                )
            )
        else:
            found.append(
                _ok(
                    "torch.arch_unsupported",
                    "PyTorch has kernels for every GPU",
                    ", ".join(cc for _, cc in caps) + f" in {','.join(arch_list)}",
                )
            )
    return found


def check_framework_probes(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.frameworks is None:
        return []
    found = [
        Finding(
            "framework.probe_failed",
            "warn",
            f"Could not inspect {fw.name}",
            fw.error or "",
            f"run it by hand to see the error: python -c 'import {_import_name(fw.name)}'; a hang "
            "while importing "
            "or initialising CUDA points at the driver (see sudo dmesg | grep NVRM)",
        )
        for fw in facts.frameworks
        if fw.error
    ]
    if found:
        return found
    names = ", ".join(f"{fw.name} {fw.version}" for fw in facts.frameworks) or "none installed"
    return [_ok("framework.probe_failed", "Frameworks inspected", names)]


def _import_name(framework: str) -> str:
    return {"pytorch": "torch"}.get(framework, framework)


# ------------------------------------------------------------------------------------- container / system


def check_container(facts: Facts, _tables: Tables) -> list[Finding]:
    c = facts.container
    if c is None or not c.in_container:
        return []
    visible = (c.nvidia_visible_devices or "").strip().lower()
    if c.nvidia_device_nodes and visible not in {"void", "none"}:
        return [
            _ok(
                "container.no_gpu_access",
                "The container sees NVIDIA devices",
                ", ".join(c.nvidia_device_nodes[:4]),
            )
        ]
    why = ["no /dev/nvidia* device nodes" if not c.nvidia_device_nodes else ""]
    if c.nvidia_visible_devices is not None:
        why.append(f"NVIDIA_VISIBLE_DEVICES={c.nvidia_visible_devices}")
    return [
        Finding(
            "container.no_gpu_access",
            "error",
            "This container has no access to the GPUs",
            f"in a container ({', '.join(c.markers)}); " + "; ".join(w for w in why if w),
            "start it with GPU access: docker run --gpus all … (the host needs the NVIDIA Container Toolkit: "
            "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker); "
            "on Kubernetes "
            "request the resource nvidia.com/gpu: 1",
        )
    ]


def _space(s: SpaceFacts) -> str:
    return f"{s.path}: {format_bytes(s.free_bytes)} free of {format_bytes(s.total_bytes)}"


def check_shm(facts: Facts, _tables: Tables) -> list[Finding]:
    shm = facts.shm
    if shm is None:
        return []
    if shm.total_bytes >= SHM_MIN_BYTES:
        return [_ok("system.shm_small", "/dev/shm is large enough", _space(shm))]
    in_container = facts.container is not None and facts.container.in_container
    fix = (
        "restart the container with a larger /dev/shm: docker run --shm-size=16g … (or --ipc=host); "
        "on Kubernetes "
        "mount an emptyDir with medium: Memory at /dev/shm"
        if in_container
        else "sudo mount -o remount,size=16G /dev/shm (and set it in /etc/fstab)"
    )
    return [
        Finding(
            "system.shm_small",
            "warn",
            "/dev/shm is small: DataLoader workers will crash ('bus error', 'No space left on device')",
            _space(shm),
            fix + "; or use DataLoader(num_workers=0) as a stopgap",
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
            [_ok("system.disk_low", "Enough free disk space", "; ".join(_space(d) for d in facts.disks))]
            if facts.disks
            else []
        )
    return [
        Finding(
            "system.disk_low",
            "warn",
            "Little free disk space (checkpoints and datasets will not fit)",
            "; ".join(f"{d.role} {_space(d)}" for d in low),
            "free space (du -xh --max-depth=1 PATH | sort -h; pip cache purge; huggingface-cli delete-cache) "
            "or attach a larger volume",
        )
    ]


# ---------------------------------------------------------------------------------------------- security


def check_jupyter(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.services is None:
        return []
    found: list[Finding] = []
    for svc in facts.services:
        if not svc.exposed:
            continue
        evidence = f"{svc.kind} listening on {svc.address}:{svc.port}; {svc.auth_evidence}"
        if svc.kind == "jupyter":
            severity = {False: "error", None: "warn", True: "info"}[svc.auth_required]
            title = {
                "error": "Jupyter is open to the network WITHOUT a token or password",
                "warn": "Jupyter is open to the network (could not tell whether it needs a token)",
                "info": "Jupyter is reachable from the network (token-protected)",
            }[severity]
            found.append(
                Finding(
                    "security.jupyter_exposed",
                    severity,
                    title,
                    evidence,
                    "listen on loopback only: jupyter lab --ip=127.0.0.1 (c.ServerApp.ip = "
                    "'127.0.0.1') and connect "
                    f"through SSH: ssh -N -L {svc.port}:localhost:{svc.port} user@host; never run with "
                    "--ServerApp.token=''",
                )
            )
        else:
            found.append(
                Finding(
                    "security.service_exposed",
                    "warn" if svc.kind == "tensorboard" else "info",
                    f"{svc.kind} is reachable from the network"
                    + (" (TensorBoard has no authentication)" if svc.kind == "tensorboard" else ""),
                    evidence,
                    f"bind it to 127.0.0.1 (tensorboard --host 127.0.0.1) and use ssh -N -L "
                    f"{svc.port}:localhost:"
                    f"{svc.port} user@host, or close the port in the cloud firewall/security group",
                )
            )
    if not any(f.id == "security.jupyter_exposed" for f in found):
        found.append(
            _ok(
                "security.jupyter_exposed",
                "No Jupyter server open to the network",
                f"{len(facts.listening or ())} listening TCP socket(s) checked",
            )
        )
    return found


def check_sshd(facts: Facts, _tables: Tables) -> list[Finding]:
    sshd = facts.sshd
    if sshd is None:
        return []
    found: list[Finding] = []
    reload = (
        "then sudo sshd -t && sudo systemctl reload ssh "
        "(the first value wins: files in sshd_config.d are read first)"
    )
    if sshd.password_authentication == "yes":
        found.append(
            Finding(
                "security.ssh_password_auth",
                "warn",
                "SSH accepts passwords (brute-force target on a public IP)",
                f"{sshd.source}: {sshd.password_evidence}",
                "put 'PasswordAuthentication no' and 'KbdInteractiveAuthentication no' in "
                f"/etc/ssh/sshd_config.d/00-gpuwise.conf, {reload}; make sure your key login works first",
            )
        )
    else:
        found.append(
            _ok(
                "security.ssh_password_auth",
                "SSH password login is off",
                f"{sshd.source}: {sshd.password_evidence}",
            )
        )
    if sshd.permit_root_login == "yes":
        found.append(
            Finding(
                "security.ssh_root_login",
                "warn",
                "SSH allows root to log in with a password",
                f"{sshd.source}: {sshd.root_evidence}",
                f"put 'PermitRootLogin prohibit-password' (or no) in "
                f"/etc/ssh/sshd_config.d/00-gpuwise.conf, {reload}",
            )
        )
    return found


def check_keys(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.ssh_keys is None:
        return []
    loose = [k for k in facts.ssh_keys if k.mode & 0o077]
    if not loose:
        return [
            _ok(
                "security.key_permissions",
                "Private keys are private",
                f"{len(facts.ssh_keys)} private key file(s) checked",
            )
        ]
    severity = "error" if any(k.mode & 0o004 for k in loose) else "warn"
    return [
        Finding(
            "security.key_permissions",
            severity,
            "Private SSH keys are readable by other users (and ssh refuses to use them)",
            "; ".join(f"{k.path} mode {k.mode:03o}" for k in loose),
            "chmod 600 " + " ".join(k.path for k in loose),
        )
    ]


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
)


def gpu_count(gpus: GpuFacts | None) -> int:
    latest: Snapshot | None = gpus.latest if gpus is not None else None
    return len(latest.samples) if latest is not None else 0
