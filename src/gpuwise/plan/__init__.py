"""Pure planning: cost model (compute, storage, egress, spot interruptions), constraints, ranking, Pareto.

Import the pieces from their modules (`gpuwise.plan.planner.plan`, `gpuwise.plan.rates`, …); this package
file stays empty so that importing it costs nothing.
"""
