"""Watching GPUs: the sampler loop, live view, history store, alerts, bottleneck hints and the exporter.

Everything here reads `gpuwise.gpu.sample.Snapshot`s from a probe (NVML, nvidia-smi or a replay) and
never talks to NVML itself. Only `gpuwise.cli` prints; this package logs.
"""
