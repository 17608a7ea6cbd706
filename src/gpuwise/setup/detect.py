"""What the GPU reader (live, or a `--replay` recording) says about the machine: which GPU, which driver.

Pure over the doctor's `GpuFacts`; reading them is the caller's edge (doctor.live / doctor.replay).
"""

from __future__ import annotations

from gpuwise.doctor.facts import GpuFacts
from gpuwise.doctor.rules.finding import tr
from gpuwise.errors import NotFoundError, UsageError
from gpuwise.locale import N_, _
from gpuwise.setup.choose import GpuTarget, gpu_target
from gpuwise.setup.tables import SetupTables

_GIVE_GPU = N_("give the GPU by hand, e.g. --gpu H100 (see `gpuwise catalog gpus`)")


def detected_gpu(gpus: GpuFacts | None, setup_tables: SetupTables) -> GpuTarget:
    """The machine's GPU model. All GPUs must share one architecture (one driver and build serve them)."""
    latest = gpus.latest if gpus is not None else None
    samples = latest.samples if latest is not None else ()
    if not samples:
        said = "; ".join(gpus.all_errors()) if gpus is not None else ""
        raise UsageError(
            _("No GPU could be read: {reason}").format(reason=said) if said else _("No GPU could be read"),
            why=_("a fresh instance has no NVIDIA driver yet, so nothing can name its GPU"),
            fix=tr(_GIVE_GPU),
        )
    found: dict[str, GpuTarget] = {}
    for sample in samples:
        name = sample.name if isinstance(sample.name, str) else ""
        capability = sample.compute_capability if isinstance(sample.compute_capability, str) else None
        if not name and capability is None:
            continue
        try:
            target = gpu_target(name, capability, setup_tables)
        except NotFoundError as exc:  # "Unknown GPU … Did you mean 'NVIDIA T4'?" read as a typo of the user's
            raise UsageError(
                _("The GPU this machine has, {gpu}, is not in gpuwise's GPU table").format(gpu=repr(name)),
                why=_("the GPU reader gave no compute capability to place it by"),
                fix=_(
                    "give a GPU of the same architecture with --gpu (see `gpuwise catalog gpus`), e.g. --gpu "
                    "V100 for a Volta card"
                ),
            ) from exc
        found.setdefault(target.architecture.name, target)
    if not found:
        raise UsageError(_("The GPU reader named no GPU model"), fix=tr(_GIVE_GPU))
    if len(found) > 1:
        raise UsageError(
            _("This machine has GPUs of several architectures: {architectures}").format(
                architectures=", ".join(sorted(found))
            ),
            why=_("one script installs one driver and one framework build"),
            fix=tr(_GIVE_GPU),
        )
    return next(iter(found.values()))


def detected_driver(gpus: GpuFacts | None) -> str | None:
    """The driver version the reader saw, or None."""
    if gpus is None:
        return None
    for snapshot in reversed(gpus.snapshots):
        if isinstance(snapshot.driver_version, str) and snapshot.driver_version:
            return snapshot.driver_version
    return None
