"""Set up a suite run: import torch (the optional `bench` extra), choose the device, find the GPU's row in
the spec table, and write the results document.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuwise import __version__
from gpuwise.bench.context import Context
from gpuwise.bench.cpu import read_cpu
from gpuwise.bench.results import TaskResult
from gpuwise.bench.suite import sizes_for
from gpuwise.errors import ConfigError, UsageError
from gpuwise.locale import _

DEVICES = ("cuda", "cpu")
INSTALL_HINT = "pip install 'gpuwise[bench]'"


def import_torch() -> Any:
    """torch, or bad input saying how to install it (the suite needs it; `bench task` does not)."""
    try:
        import torch
    except ImportError as exc:
        raise UsageError(
            _("gpuwise bench needs PyTorch, which is not installed"),
            why=_("torch is an optional extra: the measurements run real kernels through it"),
            fix=_("{install} (or install the torch build for your CUDA version first)").format(
                install=INSTALL_HINT
            ),
        ) from exc
    return torch


def choose_device(torch: Any, device: str | None) -> str:
    """The device asked for, or CUDA when torch sees one, else the CPU."""
    if device is not None and device not in DEVICES:
        from gpuwise.errors import NotFoundError

        raise NotFoundError(_("device"), device, DEVICES, fix=_("use --device cuda or --device cpu"))
    available = bool(torch.cuda.is_available())
    if device == "cuda" and not available:
        raise ConfigError(
            _("--device cuda, but torch cannot use a GPU here"),
            why=_no_gpu_why(torch),
            fix=_("use --device cpu"),
        )
    return device or ("cuda" if available else "cpu")


def _no_gpu_why(torch: Any) -> str:
    if not getattr(torch.version, "cuda", None):
        return _("this torch is a CPU-only build")
    return _("no CUDA device is visible to torch")


def cpu_fallback_note(torch: Any) -> str:
    """What to tell someone whose `gpuwise bench` (no --device) measures the CPU because torch sees no GPU:
    on a rented GPU box that is a broken install, not a slow GPU, and the figures must not pass for the
    GPU's."""
    if not getattr(torch.version, "cuda", None):
        fix = _("install a CUDA build of PyTorch (gpuwise setup prints the commands)")
    else:
        fix = _("run gpuwise doctor to see why")
    return _(
        "Note: no GPU here for torch ({why}), so these are the CPU's figures. If this machine has a GPU: "
        "{fix}; --device cpu silences this note."
    ).format(why=_no_gpu_why(torch), fix=fix)


def check_disk_path(path: Path | None) -> Path:
    target = path if path is not None else Path(tempfile.gettempdir())
    if not target.is_dir():
        raise ConfigError(
            _("--path {path} is not a folder").format(path=target),
            fix=_("give an existing folder on the disk to test"),
        )
    if not os.access(target, os.W_OK | os.X_OK):
        raise ConfigError(
            _("--path {path} is not writable").format(path=target), fix=_("choose a folder you can write in")
        )
    return target


def make_context(torch: Any, suite: str, device: str, disk_path: Path, pcie_gen: int | None) -> Context:
    from gpuwise.catalog.specs import canonical_gpu_name_from_driver, load_gpu_specs

    spec, gpus = None, 0
    if device == "cuda":
        gpus = int(torch.cuda.device_count())
        name = canonical_gpu_name_from_driver(str(torch.cuda.get_device_name(0)))
        spec = load_gpu_specs().get(name) if name else None
    return Context(
        torch=torch,
        device=device,
        sizes=sizes_for(suite, device),
        cpu=read_cpu(),
        gpu_spec=spec,
        gpus=gpus,
        disk_path=disk_path,
        pcie_gen=pcie_gen,
    )


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def results_document(
    machine: dict[str, Any], results: list[TaskResult], *, started_at: str, suite: str, device: str
) -> dict[str, Any]:
    return {
        "kind": "gpuwise-bench",
        "machine": machine,
        "suite": suite,
        "device": device,
        "results": [r.to_dict() for r in results],
        "started_at": started_at,
        "gpuwise_version": __version__,
    }
