"""CUDA and framework rules: each framework's CUDA runtime against the driver (cuda-compat.csv), PyTorch
builds against the GPUs' compute capabilities (CPU-only builds, missing kernels, CUDA not available), and
framework probes that failed.

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpuwise.doctor.facts import Facts, FrameworkFacts
from gpuwise.doctor.rules.driver import driver_version
from gpuwise.doctor.rules.finding import Finding, ok_finding, tr
from gpuwise.doctor.rules.fixes import FIX
from gpuwise.doctor.rules.gpu_health import gpu_label
from gpuwise.doctor.tables import CudaCompat, Tables
from gpuwise.doctor.versions import Version, at_least, format_version, major_minor, parse_version
from gpuwise.locale import _


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
    driver_text = driver_version(facts)
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
            _(
                "; or keep the driver and install a build for an older CUDA: "
                "pip install torch --index-url {url}"
            ).format(url=f"{_PYTORCH_INDEX}{newest}")
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
                        _("The driver is too old for {label}").format(label=label),
                        _("driver {driver} supports CUDA {cuda}; {label}").format(
                            driver=driver_text, cuda=format_version(driver_cuda), label=label
                        ),
                        _("upgrade the NVIDIA driver to a branch for CUDA {major}.x").format(major=runtime[0])
                        + alt,
                    )
                )
            continue
        checked.append(label)
        package = f"nvidia-driver-{req.min_driver[0]}-server" + ("-open" if _open_modules_only(facts) else "")
        finding = _against_table(
            label, runtime, req, driver=driver, driver_text=driver_text, alt=alt, package=package
        )
        if finding is not None:
            found.append(finding)
    if found or not checked:
        return found
    return [
        ok_finding(
            "cuda.driver_too_old",
            _("Driver new enough for the installed CUDA builds"),
            _("driver {version}").format(version=driver_text) + "; " + ", ".join(checked),
        )
    ]


def _open_modules_only(facts: Facts) -> bool:
    """Whether a GPU is Blackwell or newer (compute capability 10.0 and up), which runs only on NVIDIA's open
    kernel modules (NVIDIA Driver Installation Guide, "Kernel Modules"): Ubuntu's driver package for it is
    the -open one, and the proprietary one leaves it without a driver."""
    latest = facts.gpus.latest if facts.gpus is not None else None
    for sample in latest.samples if latest is not None else ():
        cc = parse_version(sample.compute_capability) if isinstance(sample.compute_capability, str) else None
        if cc is not None and cc[0] >= 10:
            return True
    return False


def _against_table(
    label: str,
    runtime: Version,
    req: CudaCompat,
    *,
    driver: Version,
    driver_text: str,
    alt: str,
    package: str,
) -> Finding | None:
    """A CUDA runtime the table knows: an error below the minor-version-compatibility minimum, a note
    between that and the toolkit's own driver, nothing at or above it. ``alt`` is an extra fix (an older
    build) appended to the error's."""
    if not at_least(driver, req.min_driver_minor_compat):
        return Finding(
            "cuda.driver_too_old",
            "error",
            _("The driver is too old for {label}").format(label=label),
            _(
                "driver {driver} < {minimum}, the minimum for CUDA {cuda} (even with minor-version "
                "compatibility); the toolkit's own driver is {own}"
            ).format(
                driver=driver_text,
                minimum=format_version(req.min_driver_minor_compat),
                cuda=format_version(major_minor(runtime)),
                own=format_version(req.min_driver),
            ),
            _(
                "upgrade the NVIDIA driver to >= {own} (Ubuntu: sudo apt install {package}, then reboot)"
            ).format(own=format_version(req.min_driver), package=package)
            + alt,
        )
    if not at_least(driver, req.min_driver):
        return Finding(
            "cuda.driver_too_old",
            "info",
            _("{label} runs on driver {driver} only through minor-version compatibility").format(
                label=label, driver=driver_text
            ),
            _(
                "driver {driver} < {own} (CUDA {cuda}'s own driver) but >= {minimum} "
                "(minor-version compatibility)"
            ).format(
                driver=driver_text,
                own=format_version(req.min_driver),
                cuda=format_version(req.cuda_version),
                minimum=format_version(req.min_driver_minor_compat),
            ),
            _(
                "works, except features of newer drivers and JIT of newer PTX; for full support upgrade the "
                "driver to >= {own}"
            ).format(own=format_version(req.min_driver)),
        )
    return None


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
                out.append((gpu_label(s), s.compute_capability))
    return out


def _torch_fix_for(tables: Tables, capability: str) -> str:
    rows = [
        r
        for r in tables.frameworks
        if r.framework == "pytorch" and r.arch_list and arch_supported(capability, r.arch_list)
    ]
    if not rows:
        return tr(FIX["torch.arch_unsupported/no_build"])
    newest = max(
        rows, key=lambda r: (parse_version(r.version) or (0,), parse_version(r.cuda_version) or (0,))
    )
    return _(
        "install a build that includes this GPU: pip install 'torch>={version}' --index-url {url} "
        "(and a driver new enough for CUDA {cuda})"
    ).format(version=newest.version, url=f"{_PYTORCH_INDEX}{newest.variant}", cuda=newest.cuda_version)


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
                driver = parse_version(driver_version(facts) or "")
                variant = (_torch_build_for_driver(tables, driver) if driver else None) or "cu126"
                found.append(
                    Finding(
                        "torch.cpu_only",
                        "error",
                        _("PyTorch {version} is a CPU-only build on a GPU machine").format(
                            version=fw.version
                        ),
                        f"torch.version.cuda is None (torch {fw.version})",
                        f"pip install --force-reinstall torch --index-url {_PYTORCH_INDEX}{variant}",
                    )
                )
            continue
        if fw.cuda_available is False and has_gpus:
            hidden = _hidden_by_visible_devices(facts)
            found.append(
                Finding(
                    "torch.cuda_unavailable",
                    "error",
                    _("PyTorch cannot use the GPU (torch.cuda.is_available() is False)"),
                    f"torch {fw.version} (CUDA {fw.cuda_version}): is_available() = False"
                    + (f"; {fw.cuda_error}" if fw.cuda_error else "")
                    + (f"; CUDA_VISIBLE_DEVICES={hidden!r}" if hidden is not None else ""),
                    tr(FIX["torch.cuda_unavailable"]) if hidden is None else _hidden_fix(facts, hidden),
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
                    _(
                        "PyTorch {version} has no kernels for this GPU ('no kernel image is available')"
                    ).format(version=fw.version),
                    "; ".join(
                        _("{gpu}: compute capability {cc}").format(gpu=label, cc=cc) for label, cc in bad
                    )
                    + f"; {source} = {','.join(arch_list)}",
                    _torch_fix_for(tables, bad[0][1]),
                )
            )
        else:
            found.append(
                ok_finding(
                    "torch.arch_unsupported",
                    _("PyTorch has kernels for every GPU"),
                    ", ".join(cc for _label, cc in caps) + f" in {','.join(arch_list)}",
                )
            )
    return found


def _gpu_total(facts: Facts) -> int:
    latest = facts.gpus.latest if facts.gpus is not None else None
    return len(latest.samples) if latest is not None else 0


def _hidden_fix(facts: Facts, value: str) -> str:
    return _(
        "CUDA_VISIBLE_DEVICES={value} names no GPU of this machine, so CUDA sees none: unset it (unset "
        "CUDA_VISIBLE_DEVICES) or list GPUs that exist (0 to {last}, or their UUIDs from nvidia-smi -L)"
    ).format(value=repr(value), last=_gpu_total(facts) - 1)


def _hidden_by_visible_devices(facts: Facts) -> str | None:
    """CUDA_VISIBLE_DEVICES as the doctor's environment had it (the probes inherit it), when it hides every
    GPU: CUDA reads the list up to its first entry that names no device, so an empty value, "-1", "none"
    or a first entry that is not an index below the GPU count nor a prefix of a GPU's or MIG UUID leaves
    no device (CUDA C++ Programming Guide, "CUDA Environment Variables"). None when unset or fine."""
    value = facts.system.get("cuda_visible_devices")
    if value is None:
        return None
    first = value.split(",")[0].strip()
    if first.isdigit():
        return None if int(first) < _gpu_total(facts) else value
    latest = facts.gpus.latest if facts.gpus is not None else None
    uuids = [s.uuid for s in latest.samples if isinstance(s.uuid, str)] if latest is not None else []
    if first.startswith(("GPU-", "MIG-")) and (not uuids or any(u.startswith(first) for u in uuids)):
        return None  # MIG ids and UUIDs the reader did not give are not judged
    return value


def check_framework_probes(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.frameworks is None:
        return []
    found = [
        Finding(
            "framework.probe_failed",
            "warn",
            _("Could not inspect {framework}").format(framework=fw.name),
            fw.error or "",
            tr(FIX["framework.probe_failed"]).format(module=_import_name(fw.name)),
        )
        for fw in facts.frameworks
        if fw.error
    ]
    if found:
        return found
    names = ", ".join(f"{fw.name} {fw.version}" for fw in facts.frameworks) or _("none installed")
    return [ok_finding("framework.probe_failed", _("Frameworks inspected"), names)]


def _import_name(framework: str) -> str:
    return {"pytorch": "torch"}.get(framework, framework)
