"""gpuwise: choose, verify, watch and stop rented cloud GPUs.

The package root stays import-cheap: it must not import typer, rich, pydantic, NVML or any
heavy library, so `import gpuwise` costs nothing for scripts that only want a sub-module.
"""

__version__ = "0.1.0"
