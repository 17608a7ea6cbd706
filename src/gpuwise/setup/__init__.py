"""`gpuwise setup`: the shell script that brings a fresh GPU machine to a working stack.

Modules: `tables` (the bundled OS, driver-branch, architecture and image tables, data/README.md), `osinfo`
(/etc/os-release), `choose` (the pure choice of driver branch, CUDA, cuDNN, framework build and base image,
with the reason for each), `script` (the idempotent bash script), `check` (which steps a machine still needs).
Reuses the doctor's compatibility tables so `setup` never installs what `doctor` would flag. Nothing here
runs a command: the CLI prints, the user runs. May import `doctor` and `catalog` only (tests/test_layers.py).
"""
