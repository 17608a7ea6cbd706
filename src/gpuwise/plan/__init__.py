"""Pure planning: cost model (compute, storage, egress, spot interruptions), constraints, ranking, Pareto.

`gpuwise.plan.run(PlanRequest)` is the room's entry point for a whole `gpuwise plan` (plan/request.py);
the pieces live in their modules (`gpuwise.plan.planner.plan`, `gpuwise.plan.rates`, …). This file imports
nothing at import time, so that importing the package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuwise.plan.request import PlanOutcome, PlanRequest


def run(request: PlanRequest) -> PlanOutcome:
    """Load what the request needs, check it against the catalog and plan (gpuwise.plan.request.run)."""
    from gpuwise.plan.request import run as run_request

    return run_request(request)
