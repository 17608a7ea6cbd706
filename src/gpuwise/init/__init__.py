"""`gpuwise init DIR`: a project template for rented GPUs (train.py, workload.toml, Dockerfile, SkyPilot task,
README), shipped as package data under data/ and written by :mod:`gpuwise.init.template`.

Imports only the standard library and gpuwise's leaf modules.
"""
