"""GPU probes: one `Sample` per GPU per instant, from NVML, nvidia-smi output or a recording."""
