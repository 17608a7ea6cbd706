"""Pure estimation: memory, FLOPs, communication and time for a workload on a GPU configuration.

    estimate(workload, gpu, count=1, nodes=None, calibration=None, network_gbps=None) -> Estimate
    load_calibration(path) -> Calibration

Importing this package imports pydantic (through the workload models): the CLI imports it lazily.
"""

from __future__ import annotations

from gpuwise.estimate.calibration import Calibration, load_calibration, parse_calibration
from gpuwise.estimate.core import default_nodes, estimate
from gpuwise.estimate.models import Estimate, MemoryBreakdown

__all__ = [
    "Calibration",
    "Estimate",
    "MemoryBreakdown",
    "default_nodes",
    "estimate",
    "load_calibration",
    "parse_calibration",
]
