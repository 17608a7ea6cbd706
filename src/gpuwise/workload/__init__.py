"""Workload files (docs/workload.md): the schema, presets and validation.

Importing this package imports pydantic: the CLI imports it inside its command functions.
"""

from __future__ import annotations

from gpuwise.workload.loading import load_workload, parse_workload
from gpuwise.workload.presets import get_preset, preset_names
from gpuwise.workload.spec import Constraints, DataSpec, InferenceSpec, ModelSpec, TrainSpec, Workload

__all__ = [
    "Constraints",
    "DataSpec",
    "InferenceSpec",
    "ModelSpec",
    "TrainSpec",
    "Workload",
    "get_preset",
    "load_workload",
    "parse_workload",
    "preset_names",
]
