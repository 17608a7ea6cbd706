"""Shared by the export tests: a `plan --json` document with chosen options, and reading YAML back."""

from __future__ import annotations

from typing import Any

import yaml


def option(gpu: str = "H100", per_node: int = 8, nodes: int = 1, **extra: Any) -> dict[str, Any]:
    """One option of `gpuwise plan --json`, with the fields export reads (and a few it ignores)."""
    return {
        "provider": "gcp",
        "instance_type": "a3-highgpu-8g",
        "region": "us-central1",
        "gpu": gpu,
        "gpus_per_node": per_node,
        "nodes": nodes,
        "pricing": "on_demand",
        "price_usd_per_hour": 88.0,
        "hours": 3.5,
        **extra,
    }


def plan_doc(*options: dict[str, Any], name: str = "llama-ft", dataset_gb: float = 40) -> dict[str, Any]:
    return {
        "workload": {"name": name, "task": "finetune", "data": {"dataset_gb": dataset_gb}},
        "options": list(options),
        "picks": {"cheapest": 0, "fastest": 0, "balanced": 0},
    }


def load_yaml(text: str) -> Any:
    """What a YAML 1.1 reader (PyYAML: SkyPilot's and kubectl-style tools') makes of the text."""
    return yaml.safe_load(text)
