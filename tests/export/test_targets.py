"""Targets from a plan option or flags, and the GPU-name tables checked against the bundled data."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from export_helpers import option, plan_doc

from gpuwise.catalog.normalise import cell_number, gpuinfo_per_gpu_mib, offer_gpu
from gpuwise.catalog.specs import resolve_gpu
from gpuwise.errors import ConfigError, UsageError
from gpuwise.export.names import SKYPILOT_CLOUDS, gfd_products, skypilot_gpu_name
from gpuwise.export.target import disk_gb_for, job_name, plan_workload, target_from_flags, target_from_plan

OFFERS = Path(__file__).resolve().parents[2] / "src" / "gpuwise" / "catalog" / "data" / "offers"


def test_a_plan_option_becomes_a_target() -> None:
    doc = plan_doc(option(), option("A100-80GB", 8, 2, pricing="spot", provider="lambda", region="us-east-1"))
    target = target_from_plan(doc, 2)
    assert (target.gpu, target.gpus_per_node, target.nodes, target.spot) == ("A100-80GB", 8, 2, True)
    assert (target.provider, target.region, target.gpus) == ("lambda", "us-east-1", 16)
    assert "plan option 2" in target.source
    assert plan_workload(doc) == ("llama-ft", 40)


@pytest.mark.parametrize("pick", [0, 3, 99])
def test_a_plan_with_no_option_n_is_bad_input_with_the_range(pick: int) -> None:
    with pytest.raises(UsageError) as err:
        target_from_plan(plan_doc(option(), option()), pick)
    assert err.value.exit_code == 2
    assert f"no option {pick}" in err.value.message
    assert "--pick between 1 and 2" in err.value.fix


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"x": 1}, "no 'options' list"),
        ([], "no 'options' list"),
        (plan_doc(), "no options to export"),
        (plan_doc({**option(), "gpu": None}), "no valid 'gpu'"),
        (plan_doc({**option(), "gpus_per_node": "8"}), "no valid 'gpus_per_node'"),
        (plan_doc({**option(), "nodes": 0}), "0 nodes"),
    ],
)
def test_a_document_that_is_not_a_usable_plan_is_bad_input(doc: object, words: str) -> None:
    with pytest.raises(UsageError) as err:
        target_from_plan(doc, 1)
    assert words in err.value.message
    assert err.value.fix


def test_flags_split_gpus_over_nodes_of_at_most_eight() -> None:
    assert target_from_flags("H100:16").nodes == 2
    assert target_from_flags("h100-sxm:4").gpu == "H100"
    one = target_from_flags("A100-80GB:12", nodes=3, spot=True, provider="GCP", region="us-east1")
    assert (one.gpus_per_node, one.nodes, one.spot, one.provider) == (4, 3, True, "gcp")
    with pytest.raises(ConfigError, match="does not split evenly"):
        target_from_flags("H100:12", nodes=5)


def test_names_and_disks() -> None:
    assert job_name("Llama 3 / 8B LoRA!") == "llama-3-8b-lora"
    assert job_name("***") == "gpuwise-job"
    assert len(job_name("x" * 200)) <= 40
    assert disk_gb_for(0) == 100
    assert disk_gb_for(40.2) == 141


def _bundled_skypilot_names() -> list[tuple[str, str, str]]:
    """(canonical GPU, provider, the AcceleratorName of the row) for every row of the bundled SkyPilot-schema
    files, canonicalised by the catalog's own rules (name, instance type, per-GPU memory)."""
    found = []
    for path in sorted(OFFERS.glob("*.csv")):
        provider = path.stem
        if provider not in SKYPILOT_CLOUDS:
            continue
        with path.open(encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                raw = (row.get("AcceleratorName") or "").strip()
                if not raw:
                    continue
                count = cell_number(row, "AcceleratorCount") or 1
                per_gpu = gpuinfo_per_gpu_mib(provider, row.get("GpuInfo", ""), count)
                gpu, _ = offer_gpu(raw, row["InstanceType"], per_gpu)
                found.append((gpu, provider, raw))
    return found


def test_skypilot_names_are_the_ones_each_clouds_catalog_uses() -> None:
    """The table must give, for every offer SkyPilot's catalogs list, the accelerator name that catalog uses
    (Lambda's RTXA6000 rows say "A6000"; Cudo's A100 80 GB rows say "A100")."""
    rows = _bundled_skypilot_names()
    assert len(rows) > 500
    wrong = {(g, p, raw, skypilot_gpu_name(g, p)) for g, p, raw in rows if skypilot_gpu_name(g, p) != raw}
    assert not wrong
    assert skypilot_gpu_name("RTXA6000", "lambda") == "A6000"
    assert skypilot_gpu_name("RTXA6000", "cudo") == "RTXA6000"
    assert skypilot_gpu_name("H100", None) == "H100"
    assert skypilot_gpu_name("A10G", "aws") == "A10G"  # not in any SkyPilot-schema file: its own name


# (NVML product name in our recordings, canonical GPU): GPU feature discovery writes the name with dashes
RECORDED_PRODUCTS = [
    ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA A10", "A10"),
    ("Tesla T4", "T4"),
    ("NVIDIA RTX A5000", "RTXA5000"),
]


@pytest.mark.parametrize(("product", "gpu"), RECORDED_PRODUCTS)
def test_the_node_label_values_include_the_recorded_product_names(product: str, gpu: str) -> None:
    assert product.replace(" ", "-") in gfd_products(gpu)


def test_every_node_label_value_is_a_valid_kubernetes_label_value() -> None:
    path = Path(__file__).resolve().parents[2] / "src" / "gpuwise" / "export" / "data" / "gfd-products.csv"
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    for row in rows:
        assert resolve_gpu(row["gpu"]).name == row["gpu"]
        for value in gfd_products(row["gpu"]):
            assert re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", value), value
