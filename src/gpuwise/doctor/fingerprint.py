"""Node fingerprints: what multi-node jobs need identical (driver, CUDA, frameworks, NCCL, GPU models and
count), as stable JSON, and the comparison of two. Pure: facts in, dicts out; comparing takes parsed JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuwise.doctor.facts import Facts
from gpuwise.gpu.sample import has_value

SCHEMA = "gpuwise-doctor-fingerprint/1"

# Keys (dotted) that may differ between nodes without breaking a multi-node job.
_MAY_DIFFER = ("hostname", "schema", "generated_by", "kernel", "os", "python")


def fingerprint(facts: Facts) -> dict[str, Any]:
    """The node's identity for multi-node jobs. Unknown values are null, never guessed."""
    latest = facts.gpus.latest if facts.gpus is not None else None
    samples = latest.samples if latest is not None else ()
    models = sorted(str(s.name) for s in samples if has_value(s.name))
    driver = None
    cuda_driver = None
    if latest is not None:
        driver = latest.driver_version if isinstance(latest.driver_version, str) else None
        cuda_driver = latest.cuda_driver_version if isinstance(latest.cuda_driver_version, str) else None
    if driver is None and facts.driver is not None:
        driver = facts.driver.kernel_module_version
    frameworks = {
        fw.name: {
            "version": fw.version,
            "cuda": fw.cuda_version,
            "cudnn": fw.cudnn_version,
            "nccl": fw.nccl_version,
        }
        for fw in sorted(facts.frameworks or (), key=lambda f: f.name)
    }
    nccl = next((fw.nccl_version for fw in facts.frameworks or () if fw.nccl_version), None)
    return {
        "schema": SCHEMA,
        "hostname": facts.system.get("hostname"),
        "driver": driver,
        "cuda_driver": cuda_driver,
        "gpu_count": len(samples),
        "gpu_models": models,
        "compute_capabilities": sorted(
            {str(s.compute_capability) for s in samples if has_value(s.compute_capability)}
        ),
        "frameworks": frameworks,
        "nccl": nccl,
        "os": facts.system.get("os"),
        "kernel": facts.system.get("kernel"),
        "python": facts.system.get("python"),
    }


@dataclass(frozen=True)
class Difference:
    key: str
    a: Any
    b: Any
    must_match: bool  # multi-node jobs need this identical


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): data}


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """Every key whose values differ, sorted; `must_match` marks what a multi-node job needs identical."""
    flat_a, flat_b = _flatten(a), _flatten(b)
    diffs = []
    for key in sorted(set(flat_a) | set(flat_b)):
        va, vb = flat_a.get(key), flat_b.get(key)
        if va == vb:
            continue
        top = key.split(".", 1)[0]
        diffs.append(Difference(key, va, vb, top not in _MAY_DIFFER))
    return diffs
