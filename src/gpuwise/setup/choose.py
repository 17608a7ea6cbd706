"""The pure choice behind `gpuwise setup`: OS, GPU and framework in; driver branch, CUDA toolkit, cuDNN,
framework build and CUDA base image out, each with the reason it was chosen.

Every version comes from the doctor's compatibility tables (cuda-compat.csv, framework-cuda.csv) and the
setup tables (data/README.md), and is held to the doctor's own rules: a framework build is only chosen for a
driver branch whose lowest release meets its CUDA toolkit's own driver (so `doctor` raises no
`cuda.driver_too_old`, not even the minor-version-compatibility note), and only when its kernels include
the GPU (`torch.arch_unsupported`). A combination that cannot work raises `UnsupportedCombinationError`
(exit 2) with the reason and the nearest choice that does work.

Pure: no files, environment or subprocesses. Imports gpuwise.doctor, gpuwise.catalog and gpuwise.errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuwise.doctor.rules.frameworks import arch_supported
from gpuwise.doctor.tables import FrameworkBuild, Tables
from gpuwise.doctor.versions import Version, at_least, format_version, major_minor, parse_version
from gpuwise.errors import ConfigError, NotFoundError, UsageError
from gpuwise.locale import _
from gpuwise.setup.images import CudaImage, build_min_driver, build_rank, choose_base_image
from gpuwise.setup.osinfo import normalize_os_id
from gpuwise.setup.python import python_too_old, runs_on
from gpuwise.setup.tables import Architecture, DriverBranch, OsSupport, SetupTables, driver_text

FRAMEWORKS = {"torch": "pytorch", "pytorch": "pytorch"}
_FRAMEWORK = re.compile(r"^\s*(?P<name>[A-Za-z_-]+)\s*(?:==\s*(?P<version>[0-9][0-9A-Za-z.+*-]*))?\s*$")
# setup prefers long-term support branches, then production branches, then the rest (NVIDIA's lifecycle)
_DESIGNATION_RANK = {"ltsb": 0, "pb": 1}
_DESIGNATION_NAME = {
    "ltsb": "long-term support branch",
    "pb": "production branch",
    "nfb": "new feature branch",
    "unknown": "branch",
}


# GPUs sold only with an Arm CPU (NVIDIA GH200 Grace Hopper Superchip datasheet: Arm Neoverse V2 Grace CPU)
_ARM_SYSTEMS = frozenset({"GH200"})


class UnsupportedCombinationError(UsageError):
    """The OS, GPU, driver and framework asked for cannot work together (exit 2): why, and the nearest
    choice that works (in `fix`)."""


@dataclass(frozen=True)
class GpuTarget:
    name: str  # canonical name, or the product name as the GPU reported it
    capability: str  # "9.0"
    architecture: Architecture


@dataclass(frozen=True)
class Reason:
    """One version choice and why: a comment in the script, a row of `--json`."""

    what: str  # "driver", "cuda", "cudnn", "framework", "image"
    value: str
    why: str


@dataclass(frozen=True)
class Target:
    """The stack a setup script installs."""

    system: OsSupport
    gpu: GpuTarget
    branch: DriverBranch
    build: FrameworkBuild
    cuda: Version  # the toolkit installed: the build's CUDA, major.minor
    cudnn_major: int | None  # a system cuDNN from NVIDIA's repository (9), or None when none is installed
    open_modules: bool
    image: CudaImage | None
    reasons: tuple[Reason, ...]
    pin: str | None = None  # the exact release asked for ("2.8.0"); None: the newest of build.version


# ------------------------------------------------------------------------------------------------ input


def resolve_system(os_id: str, setup_tables: SetupTables) -> OsSupport:
    system = setup_tables.system(normalize_os_id(os_id))  # rocky-9.4 -> rocky-9, as detected
    if system is None:
        raise NotFoundError(
            _("OS"),
            os_id,
            [s.os for s in setup_tables.systems],
            why=_("setup writes scripts for {systems}").format(
                systems=", ".join(s.os for s in setup_tables.systems)
            ),
            fix=_("give --os as /etc/os-release's ID-VERSION_ID, e.g. --os ubuntu-22.04"),
        )
    return system


def gpu_target(name: str, capability: str | None, setup_tables: SetupTables) -> GpuTarget:
    """A GPU by canonical name or alias (`--gpu`), or as a GPU reader saw it (name plus capability)."""
    from gpuwise.catalog.specs import canonical_gpu_name_from_driver, resolve_gpu

    canonical = canonical_gpu_name_from_driver(name)
    if capability is None:
        spec = resolve_gpu(canonical or name)  # NotFoundError with close matches
        if spec.vendor != "NVIDIA" or spec.compute_capability is None:
            raise UsageError(
                _("{gpu} is not an NVIDIA GPU").format(gpu=spec.name),
                why=_("setup installs NVIDIA's driver, CUDA and CUDA builds of frameworks"),
                fix=_("give an NVIDIA GPU with --gpu (see `gpuwise catalog gpus`)"),
            )
        if spec.name in _ARM_SYSTEMS:
            raise UsageError(
                _("{gpu} comes in Arm (Grace CPU) systems; setup writes scripts for x86_64 machines").format(
                    gpu=spec.name
                ),
                why=_("NVIDIA's repositories and PyTorch's wheels for Arm (sbsa, aarch64) differ"),
                fix=_("follow NVIDIA's sbsa instructions for this machine, or give an x86_64 GPU with --gpu"),
            )
        capability, canonical = spec.compute_capability, spec.name
    architecture = setup_tables.architecture_of(capability)
    if architecture is None:
        raise UsageError(
            _("GPU {gpu} (compute capability {cc}) is of an architecture setup has no facts for").format(
                gpu=name, cc=capability
            ),
            why=_("the architecture table lists {architectures}").format(
                architectures=", ".join(
                    f"{a.name} ({'/'.join(a.capabilities)})" for a in setup_tables.architectures
                )
            ),
            fix=_("give a GPU from `gpuwise catalog gpus` with --gpu"),
        )
    return GpuTarget(canonical or _safe_name(name), capability, architecture)


def _safe_name(name: str) -> str:
    """A GPU's name as a recording or driver gave it, reduced to the characters product names use: it is
    written into a shell script's comments, where a newline would start a command."""
    return re.sub(r"[^A-Za-z0-9 ._()+/-]", "", name)[:80] or "unnamed GPU"


def parse_framework(text: str, tables: Tables) -> tuple[str, str | None]:
    """'torch==2.5' -> ('pytorch', '2.5'); 'torch' -> ('pytorch', None). The version must be a release
    the framework table holds (major.minor; a patch such as 2.5.1 is matched on 2.5)."""
    match = _FRAMEWORK.match(text)
    if match is None or match.group("name").lower() not in FRAMEWORKS:
        raise ConfigError(
            _("--framework {text} is not torch==VERSION").format(text=repr(text)),
            why=_("setup installs PyTorch builds (the framework table's CUDA builds)"),
            fix=_("write e.g. --framework torch==2.8"),
        )
    framework = FRAMEWORKS[match.group("name").lower()]
    version = match.group("version")
    if version is None:
        return framework, None
    parsed = parse_version(version)
    known = _versions(tables, framework)
    wanted = format_version(major_minor(parsed)) if parsed else version
    if wanted not in known:
        raise NotFoundError(
            _("PyTorch version"),
            version,
            known,
            why=_("the compatibility table holds PyTorch {versions}").format(versions=", ".join(known)),
            fix=_("give one of those with --framework torch==X.Y"),
        )
    return framework, wanted


def _versions(tables: Tables, framework: str) -> list[str]:
    seen: dict[str, None] = {}
    for row in tables.frameworks:
        if row.framework == framework:
            seen[row.version] = None
    return sorted(seen, key=lambda v: parse_version(v) or (0,))


# ------------------------------------------------------------------------------------------------ rules


def branch_problem(branch: int, architecture: Architecture) -> str | None:
    """Why a driver branch cannot drive this architecture, or None when it can."""
    first, last = architecture.first_driver_branch, architecture.last_driver_branch
    if first is not None and branch < first:
        text = _("driver branch {branch} predates {architecture}: its first branch is {first}")
        return text.format(branch=branch, architecture=architecture.name, first=first)
    if last is not None and branch > last:
        text = _("driver branch {branch} dropped {architecture}: its last branch is {last}")
        return text.format(branch=branch, architecture=architecture.name, last=last)
    return None


def build_runs_on(build: FrameworkBuild, branch: DriverBranch, tables: Tables) -> bool:
    """Whether every release of ``branch`` runs ``build``'s CUDA with the toolkit's own driver (the
    doctor's `cuda.driver_too_old` rule, without leaning on minor-version compatibility)."""
    need = build_min_driver(build, tables)  # the rule export applies to a driver version too
    return need is not None and at_least(branch.min_version, need)


def build_has_kernels(build: FrameworkBuild, capability: str) -> bool:
    return bool(build.arch_list) and arch_supported(capability, build.arch_list)


def _os_offers(system: OsSupport, branch: DriverBranch, build: FrameworkBuild | None = None) -> bool:
    if system.max_driver_branch is not None and branch.branch > system.max_driver_branch:
        return False
    return build is None or system.carries_cuda(build.cuda_version)


def _branch_rank(branch: DriverBranch) -> tuple[int, int]:
    return (_DESIGNATION_RANK.get(branch.designation, 2), -branch.branch)


# ------------------------------------------------------------------------------------------------ choice


def choose_target(
    system: OsSupport,
    gpu: GpuTarget,
    version: str | None,
    driver: int | None,
    *,
    container: bool,
    tables: Tables,
    setup_tables: SetupTables,
) -> Target:
    """The stack for this OS and GPU: the PyTorch ``version`` (newest with kernels for the GPU when None),
    the driver ``branch`` (long-term support first when None), their CUDA and cuDNN, and with ``container``
    the CUDA base image. Raises UnsupportedCombinationError with the nearest working choice."""
    try:
        return _choose(
            system, gpu, version, driver, container=container, tables=tables, setup_tables=setup_tables
        )
    except UnsupportedCombinationError as exc:
        fix = _nearest_fix(system, gpu, (version, driver), tables=tables, setup_tables=setup_tables)
        raise UnsupportedCombinationError(exc.message, why=exc.why, fix=fix or exc.fix) from None


def _nearest_fix(
    system: OsSupport,
    gpu: GpuTarget,
    given: tuple[str | None, int | None],
    *,
    tables: Tables,
    setup_tables: SetupTables,
) -> str:
    """The nearest working choice: change the driver branch alone, or the PyTorch release alone (each to
    the nearest value that works), else both. Empty when only another OS or GPU would do."""
    version, driver = given

    def works(new_version: str | None, new_driver: int | None) -> bool:
        try:
            _choose(
                system,
                gpu,
                new_version,
                new_driver,
                container=False,
                tables=tables,
                setup_tables=setup_tables,
            )
        except UsageError:
            return False
        return True

    branches = [b.branch for b in setup_tables.branches]
    if driver is not None:
        branches.sort(key=lambda b: (abs(b - driver), -b))
    versions = _versions(tables, "pytorch")
    if version is not None:
        versions = _by_distance(version, versions)
    options: list[str] = []
    if driver is not None:
        branch = next((b for b in branches if works(version, b)), None)
        if branch is not None:
            options.append(f"--driver {branch}")
    if version is not None:
        nearest = next((v for v in versions if works(v, driver)), None)
        if nearest is not None:
            options.append(f"--framework torch=={nearest}")
    if not options and driver is not None and version is not None:
        both = next(
            (f"--driver {b} --framework torch=={v}" for v in versions for b in branches if works(v, b)), None
        )
        options += [both] if both else []
    nearest_choice = _("use {options}, the nearest choice that works")
    return nearest_choice.format(options=_(" or ").join(options)) if options else ""


def _choose(
    system: OsSupport,
    gpu: GpuTarget,
    version: str | None,
    driver: int | None,
    *,
    container: bool,
    tables: Tables,
    setup_tables: SetupTables,
) -> Target:
    branches = _branches_for(system, gpu, driver, setup_tables)
    builds = _builds_for(gpu, version, tables)
    if not container and builds and not (runs := [b for b in builds if runs_on(b.version, system.os)]):
        what, why, fix = python_too_old(
            system.os, system.name, [b.version for b in builds], asked=bool(version)
        )
        raise UnsupportedCombinationError(what, why=why, fix=fix)
    pairs = [
        (build, branch)
        for build in (builds if container else runs)
        for branch in branches
        if build_runs_on(build, branch, tables) and _os_offers(system, branch, build)
    ]
    if not pairs:
        raise _no_pair(system, gpu, version, driver, tables, setup_tables)
    build, branch = _best(pairs, version)
    cuda = major_minor(parse_version(build.cuda_version) or (0, 0))
    cudnn = parse_version(build.cudnn_version)
    cudnn_major = 9 if cudnn is not None and cudnn[0] == 9 else None
    image = (  # only a container needs one (and only then may "no image runs on this driver" refuse)
        cuda_base_image(build.cuda_version, branch.min_version, tables=tables, setup_tables=setup_tables)
        if container
        else None
    )
    reasons = _reasons(system, gpu, branch, build, cudnn_major, given=(version, driver), tables=tables)
    if image is not None:
        reasons += (
            Reason(
                "image",
                image.image,
                f"the CUDA {format_version(major_minor(image.cuda_version))} runtime image whose own driver "
                f"({_own_driver(image.cuda_version, tables)}) every {branch.branch} release meets; "
                f"{image.source}",
            ),
        )
    return Target(
        system=system,
        gpu=gpu,
        branch=branch,
        build=build,
        cuda=cuda,
        cudnn_major=cudnn_major,
        open_modules=gpu.architecture.open_modules != "unsupported",
        image=image,
        reasons=reasons,
    )


def _branches_for(
    system: OsSupport, gpu: GpuTarget, driver: int | None, setup_tables: SetupTables
) -> list[DriverBranch]:
    usable = [
        b
        for b in setup_tables.branches
        if branch_problem(b.branch, gpu.architecture) is None and _os_offers(system, b)
    ]
    if driver is None:
        if not usable:
            raise _no_branch(system, gpu, setup_tables)
        return usable
    branch = setup_tables.branch(driver)
    if branch is None:
        raise NotFoundError(
            _("driver branch"),
            str(driver),
            [str(b.branch) for b in setup_tables.branches],
            why=_("setup knows branches {branches}").format(
                branches=", ".join(str(b.branch) for b in setup_tables.branches)
            ),
            fix=_("give --driver as a branch number, e.g. --driver 580"),
        )
    problem = branch_problem(driver, gpu.architecture)
    if problem is None and not _os_offers(system, branch):
        problem = _("{os} offers driver branches up to {branch} ({source})").format(
            os=system.name, branch=system.max_driver_branch, source=system.source
        )
    if problem is not None:
        raise UnsupportedCombinationError(
            _("{gpu} cannot run on driver branch {branch} on {os}").format(
                gpu=gpu.name, branch=driver, os=system.name
            ),
            why=problem,
            fix=_("choose another driver branch"),
        )
    return [branch]


def _no_branch(system: OsSupport, gpu: GpuTarget, setup_tables: SetupTables) -> UnsupportedCombinationError:
    known = ", ".join(str(b.branch) for b in setup_tables.branches)
    if not any(branch_problem(b.branch, gpu.architecture) is None for b in setup_tables.branches):
        return UnsupportedCombinationError(
            _("No driver branch setup installs runs {gpu}").format(gpu=gpu.name),
            why=_("{architecture} needs branches {span}; setup installs {known}").format(
                architecture=gpu.architecture.name,
                span=gpu.architecture.branch_span(translated=True),
                known=known,
            ),
            fix=_("choose another GPU (Maxwell or newer), or install NVIDIA's legacy driver by hand"),
        )
    return UnsupportedCombinationError(
        _("No driver branch setup knows runs {gpu} on {os}").format(gpu=gpu.name, os=system.name),
        why=_("{architecture} needs branches {span}; {os} offers up to {branch}").format(
            architecture=gpu.architecture.name,
            span=gpu.architecture.branch_span(translated=True),
            os=system.name,
            branch=system.max_driver_branch,
        ),
        fix=_("choose another OS, e.g. --os ubuntu-24.04"),
    )


def _builds_for(gpu: GpuTarget, version: str | None, tables: Tables) -> list[FrameworkBuild]:
    rows = [r for r in tables.frameworks if r.framework == "pytorch" and version in {None, r.version}]
    with_kernels = [r for r in rows if build_has_kernels(r, gpu.capability)]
    if version is not None and not with_kernels:
        raise UnsupportedCombinationError(
            _("PyTorch {version} has no build with kernels for {gpu} (compute capability {cc})").format(
                version=version, gpu=gpu.name, cc=gpu.capability
            ),
            why=_("its builds target {targets}").format(
                targets="; ".join(f"{r.variant}: {','.join(r.arch_list) or 'unknown'}" for r in rows)
            ),
            fix=_("choose another PyTorch release"),
        )
    return with_kernels


def _by_distance(version: str, candidates: list[str]) -> list[str]:
    """``candidates`` nearest to ``version`` first (newer first on a tie)."""
    target = _as_number(parse_version(version) or (0,))
    return sorted(
        candidates,
        key=lambda v: (
            abs(_as_number(parse_version(v) or (0,)) - target),
            -_as_number(parse_version(v) or (0,)),
        ),
    )


def _as_number(version: Version) -> int:
    major, minor = major_minor(version)
    return major * 1000 + minor


def _no_pair(  # noqa: PLR0917 - the inputs the message names
    system: OsSupport,
    gpu: GpuTarget,
    version: str | None,
    driver: int | None,
    tables: Tables,
    setup_tables: SetupTables,
) -> UnsupportedCombinationError:
    """No build of the asked PyTorch runs on the asked (or any offered) branch: say why (choose_target
    adds the nearest working choice)."""
    builds = _builds_for(gpu, version, tables)
    cudas = sorted({b.cuda_version for b in builds}, key=lambda c: parse_version(c) or (0,))
    what, used = f"PyTorch {version}" if version else "PyTorch", ", ".join(cudas)
    if driver is not None:
        branch = setup_tables.branch(driver)
        cuda = format_version(branch.cuda_version) if branch else "?"
        why = _("its builds for this GPU use CUDA {cudas}; branch {branch} ships CUDA {cuda}")
        why, with_what = why.format(cudas=used, branch=driver, cuda=cuda), _("driver branch {branch}")
    else:
        why = _("its builds for this GPU use CUDA {cudas}; {source}").format(cudas=used, source=system.source)
        with_what = _("the driver branches {os} offers")
    with_what = with_what.format(branch=driver, os=system.name)
    return UnsupportedCombinationError(
        _("{what} cannot run on {gpu} with {driver}").format(what=what, gpu=gpu.name, driver=with_what),
        why=why,
        fix=_("choose another driver branch or PyTorch release"),
    )


def _best(
    pairs: list[tuple[FrameworkBuild, DriverBranch]], version: str | None
) -> tuple[FrameworkBuild, DriverBranch]:
    """The newest PyTorch (unless one was asked for), stable builds before experimental ones, the most
    preferred branch, and on it the build with the newest CUDA."""
    if version is None:
        newest = max((b.version for b, _ in pairs), key=lambda v: parse_version(v) or (0,))
        pairs = [(b, br) for b, br in pairs if b.version == newest]
    stable = [(b, br) for b, br in pairs if b.status == "stable"]
    pairs = stable or pairs
    branch = min((br for _cuda, br in pairs), key=_branch_rank)
    build = max((b for b, br in pairs if br == branch), key=build_rank)  # the ranking export uses too
    return build, branch


def _own_driver(cuda: Version, tables: Tables) -> str:
    req = tables.cuda_requirement(cuda)
    return driver_text(req.min_driver) if req else "unknown"


def _reasons(
    system: OsSupport,
    gpu: GpuTarget,
    branch: DriverBranch,
    build: FrameworkBuild,
    cudnn_major: int | None,
    *,
    given: tuple[str | None, int | None],
    tables: Tables,
) -> tuple[Reason, ...]:
    version, driver = given
    arch = gpu.architecture
    eol = f", end of life {branch.end_of_life}" if branch.end_of_life else ""
    how = "given with --driver" if driver is not None else "the most preferred branch that runs both"
    cuda = parse_version(build.cuda_version) or (0,)
    own = _own_driver(cuda, tables)
    modules = {
        "required": f"{arch.name} runs only on NVIDIA's open kernel modules",
        "supported": f"NVIDIA's open kernel modules support {arch.name} and are its default since R560",
        "unsupported": f"{arch.name} predates the open kernel modules (Turing or later): proprietary modules",
    }[arch.open_modules]
    picked = "asked for" if version is not None else "the newest release with kernels for this GPU"
    cudnn = (
        f"cudnn{cudnn_major}-cuda-{cuda[0]} from NVIDIA's repository: the cuDNN major torch {build.version}+"
        f"{build.variant} was built with ({build.cudnn_version}), for code compiled here; the wheel brings "
        "its own copy"
        if cudnn_major is not None
        else f"none: torch {build.version}+{build.variant} was built with cuDNN {build.cudnn_version}, "
        "which its wheel brings; NVIDIA's repository packages only cuDNN 9 as cudnn9-cuda-XX"
    )
    return (
        Reason(
            "driver",
            f"{branch.branch} ({_DESIGNATION_NAME.get(branch.designation, 'branch')}{eol})",
            f"{how}: supports {arch.name} (compute capability {gpu.capability}; {arch.branch_span()}), its "
            f"lowest release {branch.min_version_text} ships CUDA "
            f"{format_version(branch.cuda_version)}; {modules}. Sources: {arch.source}; {branch.source}",
        ),
        Reason(
            "framework",
            f"torch {build.version} ({build.variant}, {build.status or 'status unknown'})",
            f"{picked}; its kernels ({','.join(build.arch_list)}) include compute capability "
            f"{gpu.capability}; CUDA {build.cuda_version} needs driver >= {own} (the toolkit's own), met by "
            f"every {branch.branch} release. Source: {build.source}",
        ),
        Reason(
            "cuda",
            f"CUDA toolkit {build.cuda_version}",
            "the CUDA the framework build uses, so code compiled here matches torch.version.cuda; "
            + (
                f"{system.name}: {system.source}"
                if system.min_cuda
                else f"NVIDIA's {system.nvidia_repo} repository"
            ),
        ),
        Reason("cudnn", f"cuDNN {build.cudnn_version}", cudnn),
    )


def cuda_base_image(
    cuda_version: str | Version,
    driver: str | Version,
    *,
    tables: Tables | None = None,
    setup_tables: SetupTables | None = None,
) -> CudaImage:
    """The `nvidia/cuda` runtime image for a framework build of ``cuda_version`` on a machine whose driver
    is ``driver`` (a version, or a branch's lowest release): images.choose_base_image, the one choice that
    `export dockerfile` makes too. An image runs on a driver that meets its exact CUDA release's own driver
    (the stricter rule; no minor-version compatibility). Raises UnsupportedCombinationError when the driver
    is older than every image needs. Pure given the tables (loaded from package data when not passed)."""
    if tables is None:
        from gpuwise.doctor.tables import load_tables

        tables = load_tables()
    if setup_tables is None:
        from gpuwise.setup.tables import load_setup_tables

        setup_tables = load_setup_tables()
    want = parse_version(cuda_version) if isinstance(cuda_version, str) else cuda_version
    have = parse_version(driver) if isinstance(driver, str) else driver
    if want is None or have is None:
        raise ConfigError(
            f"Not a version: {cuda_version!r} / {driver!r}", fix="give e.g. ('12.6', '560.35.03')"
        )
    image = choose_base_image(want, have, tables=tables, images=setup_tables.images)
    if image is None:
        oldest = min(setup_tables.images, key=lambda i: i.cuda_version)
        raise UnsupportedCombinationError(
            _("No CUDA base image runs on driver {driver}").format(driver=driver_text(have)),
            why=_("the oldest image setup knows, {image}, needs driver >= {minimum}").format(
                image=oldest.image, minimum=_own_driver(oldest.cuda_version, tables)
            ),
            fix=_("upgrade the driver to >= {minimum}").format(
                minimum=_own_driver(oldest.cuda_version, tables)
            ),
        )
    return image
