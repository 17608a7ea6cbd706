"""Measured efficiencies from a bench result file, used by `--calibration`.

`load_calibration` is the only function here that reads a file; `Calibration` is pure data that
`estimate()` consults in place of the default efficiency for the GPU it was measured on.
Must not import the CLI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwise.errors import ConfigError


@dataclass(frozen=True)
class Calibration:
    """Fractions of datasheet peak measured on one machine."""

    gpu: str | None  # canonical GPU name when known; None applies to any GPU
    gemm_fraction: dict[str, float] = field(default_factory=dict)  # dtype -> fraction of dense peak
    memory_bandwidth_fraction: float | None = None
    source: str = ""

    def applies_to(self, gpu_name: str) -> bool:
        return self.gpu is None or self.gpu.lower() == gpu_name.lower()


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


def _canonical(name: str | None) -> str | None:
    if name is None:
        return None
    try:
        from gpuwise.catalog.specs import resolve_gpu  # type: ignore[import-not-found,unused-ignore]

        return str(resolve_gpu(name).name)
    except Exception:  # catalog absent or name unknown: keep the machine's own name
        return name


# What a calibration file holds: the fraction of datasheet peak measured per task (GEMM per dtype, memory
# bandwidth) on one GPU.
_FORMAT_FIX = (
    'give a JSON file such as {"machine": {"gpu": "H100"}, "results": [{"task": "gemm_bf16", '
    '"fraction_of_peak": 0.7}, {"task": "memory_bandwidth", "fraction_of_peak": 0.85}]}'
)


def parse_calibration(data: Any, source: str) -> Calibration:
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ConfigError(
            f"Calibration file {source} has no 'results' list",
            why="--calibration expects a bench result: JSON with the measured efficiencies per dtype",
            fix=_FORMAT_FIX,
        )
    gemm: dict[str, float] = {}
    bandwidth: float | None = None
    for row in data["results"]:
        if not isinstance(row, dict):
            continue
        task, frac = row.get("task"), row.get("fraction_of_peak")
        if not isinstance(task, str) or not isinstance(frac, int | float) or isinstance(frac, bool):
            continue
        if not math.isfinite(frac) or not 0 < frac <= 1.5:
            continue
        if task.startswith("gemm_"):
            gemm[task.removeprefix("gemm_")] = float(frac)
        elif task == "memory_bandwidth":
            bandwidth = float(frac)
    if not gemm and bandwidth is None:
        raise ConfigError(
            f"Calibration file {source} has no usable gemm_* or memory_bandwidth result",
            fix=_FORMAT_FIX,
        )
    return Calibration(
        gpu=_canonical(_machine_gpu(data.get("machine"))),
        gemm_fraction=gemm,
        memory_bandwidth_fraction=bandwidth,
        source=source,
    )


def load_calibration(path: Path) -> Calibration:
    """Read a bench result JSON. Raises ConfigError (exit 2) when it is missing or not a bench result."""
    from gpuwise.safe_read import load_json  # bounded: size, nesting, no pipes or devices

    data = load_json(path, what="Calibration file", fix=_FORMAT_FIX)
    return parse_calibration(data, str(path))
