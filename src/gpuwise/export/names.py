"""GPU names in the targets' own vocabularies: SkyPilot's accelerator names and the Kubernetes node label.

SkyPilot names the same GPU differently per cloud (Lambda's "A6000" is Cudo's "RTXA6000"), so
data/skypilot-gpus.csv holds one default name per canonical GPU and the providers that differ; a test derives
the table again from the bundled SkyPilot-schema catalog files (every row's AcceleratorName, read through the
catalog's own name rules) and fails when they disagree.

On Kubernetes, NVIDIA's GPU feature discovery labels each node with ``nvidia.com/gpu.product``: the NVML
product name with spaces replaced by dashes ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"; SkyPilot
reads the same label, sky/provision/kubernetes/utils.py GFDLabelFormatter). data/gfd-products.csv lists the
values per GPU and says which ones our recordings show. Pure look-ups over package data; standard
library only.
"""

from __future__ import annotations

import csv
import io
from functools import cache
from importlib import resources

GFD_PRODUCT_LABEL = "nvidia.com/gpu.product"

# Cloud ids SkyPilot accepts in a task's `resources.cloud` (sky.utils.registry.CLOUD_REGISTRY of skypilot
# 0.14, less the ones that are not a rented cloud: kubernetes, ssh, slurm, vsphere).
SKYPILOT_CLOUDS = frozenset({
    "aws", "azure", "cudo", "do", "fluidstack", "gcp", "hyperbolic", "ibm", "lambda", "mithril", "nebius",
    "oci", "paperspace", "primeintellect", "runpod", "scp", "seeweb", "shadeform", "vast", "verda", "yotta",
})  # fmt: skip


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("gpuwise.export").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@cache
def _skypilot_table() -> dict[tuple[str, str], str]:
    return {(row["gpu"], row["provider"]): row["skypilot_name"] for row in _rows("skypilot-gpus.csv")}


def skypilot_gpu_name(gpu: str, provider: str | None) -> str:
    """SkyPilot's accelerator name for a canonical GPU on this provider (its default name elsewhere).

    A GPU the table does not know keeps its canonical name: the catalog's names are SkyPilot's own
    convention, so that is the best guess, and SkyPilot says so at launch if it does not know it.
    """
    table = _skypilot_table()
    if provider is not None and (gpu, provider) in table:
        return table[(gpu, provider)]
    return table.get((gpu, "*"), gpu)


@cache
def gfd_products(gpu: str) -> tuple[str, ...]:
    """The ``nvidia.com/gpu.product`` label values of this GPU's nodes (empty when not known)."""
    for row in _rows("gfd-products.csv"):
        if row["gpu"] == gpu:
            return tuple(value for value in row["products"].split("|") if value)
    return ()
