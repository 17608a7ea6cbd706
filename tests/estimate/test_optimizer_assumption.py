"""The optimizer-state assumption states the figure the estimate used for the workload's optimizer."""

from __future__ import annotations

import pytest

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import estimate
from gpuwise.workload import parse_workload


@pytest.mark.parametrize(
    ("optimizer", "expected"),
    [("sgd", "4 B/param (sgd)"), ("adamw", "8 B/param (adamw)"), ("adamw8bit", "2 B/param (adamw8bit)")],
)
def test_the_optimizer_state_line_names_the_workload_s_optimizer(optimizer: str, expected: str) -> None:
    train = {"method": "full", "precision": "bf16", "samples": 1e6, "micro_batch": 32, "optimizer": optimizer}
    work = parse_workload({"task": "train", "model": {"preset": "resnet-50"}, "train": train}, "k.toml")
    said = estimate(work, resolve_gpu("A100-80GB"), 1).assumptions
    lines = [a for a in said if "optimizer_state_bytes" in a]
    assert len(lines) == 1 and lines[0].startswith(f"optimizer_state_bytes = {expected} ("), lines
