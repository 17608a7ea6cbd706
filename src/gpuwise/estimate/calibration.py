"""What `--calibration FILE` brings to `estimate` and `plan`: measured efficiencies or measured hours ratios.

Two kinds of file, told apart by their top-level keys:
- a bench result (`gpuwise bench --json`: "machine" and "results"): GEMM fraction of peak per dtype,
  memory-bandwidth fraction and training-step MFU measured on one GPU. On that GPU they replace the default
  efficiency; on other GPUs of the same generation the measured/default ratio scales their default
  (labelled); other generations are unchanged (said).
- a report calibration (`gpuwise report --save-calibration`: "kind": "gpuwise-calibration"): actual ÷
  planned hours per (GPU, task), from the user's own runs. An estimate's hours (and range) are multiplied by
  the entry for its GPU and task; no entry for that GPU applies nothing and says so (never guessed across
  GPUs).

`load_calibration` is the only function here that reads a file; `Calibration` is pure data that
`estimate()` consults. A file that is neither kind, or holds a bad value, is one ConfigError naming it.
Must not import the CLI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwise.catalog.models import GpuSpec
from gpuwise.errors import ConfigError
from gpuwise.locale import N_, _


@dataclass(frozen=True)
class HoursRatio:
    """One report-calibration entry: actual ÷ planned hours of the user's runs of `task` on `gpu`."""

    gpu: str
    task: str
    ratio: float
    runs: int | None
    source: str


@dataclass(frozen=True)
class Calibration:
    """Fractions of datasheet peak measured on one machine, or hours ratios from the user's runs."""

    gpu: str | None  # canonical GPU name when known; None applies to any GPU
    gemm_fraction: dict[str, float] = field(default_factory=dict)  # dtype -> fraction of dense peak
    memory_bandwidth_fraction: float | None = None
    source: str = ""
    # The measured GPU's spec (its generation and default efficiency); None when not in the spec table.
    reference: GpuSpec | None = None
    train_mfu: float | None = None  # measured training-step MFU (bench task train_step_transformer)
    hours_ratios: tuple[HoursRatio, ...] = ()  # report kind only
    kind: str = "bench"  # "bench" | "report"

    def applies_to(self, gpu_name: str) -> bool:
        return self.kind == "bench" and (self.gpu is None or self.gpu.lower() == gpu_name.lower())

    def same_generation(self, gpu: GpuSpec) -> bool:
        """A different GPU of the measured GPU's architecture (the measured ratio to the default carries)."""
        ref = self.reference
        return (
            self.kind == "bench"
            and ref is not None
            and ref.name.lower() != gpu.name.lower()
            and ref.vendor == gpu.vendor
            and ref.architecture.lower() == gpu.architecture.lower()
        )


def _machine_gpu(machine: Any) -> str | None:
    if not isinstance(machine, dict):
        return None
    for key in ("gpu", "gpu_name", "name"):
        value = machine.get(key)
        if isinstance(value, str) and value:
            return value
    gpus = machine.get("gpus")
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
        for key in ("name", "gpu"):
            value = gpus[0].get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _spec(name: str | None) -> GpuSpec | None:
    if name is None:
        return None
    from gpuwise.catalog.specs import canonical_gpu_name_from_driver, load_gpu_specs

    # bench files written before bench named GPUs canonically carry the driver's product name
    # ("Tesla V100-PCIE-16GB"), or null 'gpu' beside it in 'gpu_name'
    canonical = canonical_gpu_name_from_driver(name)
    return None if canonical is None else load_gpu_specs()[canonical]


def _canonical(name: str | None) -> str | None:
    spec = _spec(name)
    return name if spec is None else spec.name  # unknown: keep the machine's own name


# What a calibration file holds: the fraction of datasheet peak measured per task (GEMM per dtype, memory
# bandwidth) on one GPU.
_FORMAT_FIX = N_(
    'give a JSON file such as {"machine": {"gpu": "H100"}, "results": [{"task": "gemm_bf16", '
    '"fraction_of_peak": 0.7}, {"task": "memory_bandwidth", "fraction_of_peak": 0.85}]}'
)


def _mfu(row: dict[str, Any]) -> float | None:
    mfu = row.get("mfu")
    if isinstance(mfu, int | float) and not isinstance(mfu, bool) and math.isfinite(mfu) and 0 < mfu <= 1:
        return float(mfu)
    return None


def parse_calibration(data: Any, source: str) -> Calibration:
    """Either kind of calibration file, already parsed (module docstring)."""
    if isinstance(data, dict) and "kind" in data:
        from gpuwise.estimate.calibration_report import parse_report_calibration

        ratios, said = parse_report_calibration(data, source)
        return Calibration(gpu=None, source=f"{source} ({said})", hours_ratios=ratios, kind="report")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ConfigError(
            _("Calibration file {source} has no 'results' list").format(source=source),
            why=_(
                "--calibration takes either a `gpuwise bench --json` result (JSON with 'machine' and "
                "'results') or a `gpuwise report --save-calibration` file (JSON with "
                '"kind": "gpuwise-calibration")'
            ),
            fix=_(
                "pass the file one of those commands wrote; a bench result looks like "
                '{"machine": {"gpu": "H100"}, "results": [{"task": "gemm_bf16", "fraction_of_peak": 0.7}]}'
            ),
        )
    _refuse_cpu_result(data, source)
    gemm: dict[str, float] = {}
    bandwidth: float | None = None
    mfu: float | None = None
    for row in data["results"]:
        if not isinstance(row, dict):
            continue
        if row.get("task") == "train_step_transformer":
            mfu = _mfu(row)
        task, frac = row.get("task"), row.get("fraction_of_peak")
        if not isinstance(task, str) or not isinstance(frac, int | float) or isinstance(frac, bool):
            continue
        if not math.isfinite(frac) or not 0 < frac <= 1.5:
            continue
        if task.startswith("gemm_"):
            gemm[task.removeprefix("gemm_")] = float(frac)
        elif task == "memory_bandwidth":
            bandwidth = float(frac)
    if not gemm and bandwidth is None and mfu is None:
        raise ConfigError(
            _(
                "Calibration file {source} has no usable gemm_*, memory_bandwidth or train_step_transformer "
                "result"
            ).format(source=source),
            fix=_(_FORMAT_FIX),
        )
    gpu = _machine_gpu(data.get("machine"))
    return Calibration(
        gpu=_canonical(gpu),
        gemm_fraction=gemm,
        memory_bandwidth_fraction=bandwidth,
        source=source,
        reference=_spec(gpu),
        train_mfu=mfu,
    )


def _refuse_cpu_result(data: dict[str, Any], source: str) -> None:
    """A suite run without a GPU (`gpuwise bench --device cpu`: "device": "cpu", or a machine whose "gpu" is
    null) measured a CPU's efficiencies; applied to GPUs they would move every estimate for no reason."""
    machine = data.get("machine")
    no_gpu = isinstance(machine, dict) and "gpu" in machine and machine["gpu"] is None
    if data.get("device") == "cpu" or (no_gpu and _machine_gpu(machine) is None):
        raise ConfigError(
            _("Calibration file {source} was measured without a GPU").format(source=source),
            why=_("a CPU's GEMM and memory efficiencies say nothing about a GPU's"),
            fix=_("run `gpuwise bench --device cuda --out FILE` on the GPU to calibrate and pass that file"),
        )


def load_calibration(path: Path) -> Calibration:
    """Read a bench result JSON. Raises ConfigError (exit 2) when it is missing or not a bench result."""
    from gpuwise.safe_read import load_json  # bounded: size, nesting, no pipes or devices

    data = load_json(path, what=_("Calibration file"), fix=_(_FORMAT_FIX))
    return parse_calibration(data, str(path))
