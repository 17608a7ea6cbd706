"""The loaders against the real bundled files: row counts, spot-checked prices per provider, dates, quirks.

Counts and prices come from data/offers/README.md (the provenance of each file) and the files themselves.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gpuwise.catalog.models import Catalog, Offer
from gpuwise.catalog.offers import load_catalog
from gpuwise.catalog.query import is_stale, query_offers


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    # An empty user catalog dir: only the bundled files load.
    return load_catalog(tmp_path_factory.mktemp("no-user-catalog"))


def find(catalog: Catalog, **fields: object) -> list[Offer]:
    return [o for o in catalog.offers if all(getattr(o, k) == v for k, v in fields.items())]


def one(catalog: Catalog, **fields: object) -> Offer:
    found = find(catalog, **fields)
    assert len(found) == 1, (fields, found)
    return found[0]


# Rows per file as the README of the bundled catalog states them.
README_ROWS = {
    "gcp.csv": 753, "gcp-host-vms.csv": 2145, "lambda.csv": 374, "cudo.csv": 156, "vast.csv": 64,
    "nebius.csv": 22, "seeweb.csv": 27, "ibm.csv": 27, "fluidstack.csv": 1, "shadeform.csv": 118,
    "primeintellect.csv": 115, "hyperstack.csv": 25, "verda.csv": 22, "jarvislabs.csv": 16, "yotta.csv": 8,
    "mithril.csv": 4, "hyperbolic.csv": 3, "paperspace.csv": 14, "do.csv": 2, "azure.csv": 921,
    "aws-gpu-spot.csv": 1127,
}  # fmt: skip


def test_row_counts_match_the_readme(catalog: Catalog) -> None:
    for file, rows in README_ROWS.items():
        assert catalog.stats.rows_read[file] == rows, file


def test_providers_and_offer_counts(catalog: Catalog) -> None:
    by = catalog.stats.offers_by_provider
    assert by["lambda"] == 374  # every Lambda row is a priced GPU offer
    assert by["gcp"] == 753  # one offer per accelerator row, host VMs folded in
    assert by["azure"] == 921 - 92  # 92 rows have no AcceleratorName
    assert "mithril" not in by  # its four rows are placeholder prices
    assert len(by) >= 18
    assert catalog.stats.offers == len(catalog.offers)


def test_lambda_prices_and_variant(catalog: Catalog) -> None:
    pcie = find(catalog, provider="lambda", instance_type="gpu_1x_h100_pcie")
    assert pcie
    assert {o.gpu for o in pcie} == {"H100-PCIe"}
    sxm8 = one(catalog, provider="lambda", instance_type="gpu_8x_h100_sxm5", region="europe-central-1")
    assert (sxm8.gpu, sxm8.gpus, sxm8.price_usd_per_hour) == ("H100", 8, 31.92)
    assert sxm8.price_date_exact is False
    assert sxm8.price_as_of == date(2026, 5, 20)
    assert "lambda.csv" in sxm8.source


def test_gcp_host_plus_accelerator(catalog: Catalog) -> None:
    # README examples: a3-highgpu-1g 1.18251 + H100x1 4.20076; g2-standard-4 0.14679 + L4x1 0.56004.
    h100 = one(catalog, provider="gcp", instance_type="a3-highgpu-1g", zone="us-central1-a")
    assert h100.price_usd_per_hour == pytest.approx(5.38327)
    assert h100.vcpus == 26
    assert h100.gpu_only_price is False
    assert h100.spot_price_usd_per_hour is None  # accelerator spot 5.3387 > on-demand 4.20076 in the source
    l4 = one(catalog, provider="gcp", instance_type="g2-standard-4", zone="us-central1-a")
    assert l4.price_usd_per_hour == pytest.approx(0.70683)
    a100 = one(catalog, provider="gcp", instance_type="a2-highgpu-1g", zone="us-central1-a")
    assert a100.price_usd_per_hour == pytest.approx(3.67339)


def test_gcp_n1_gpus_get_the_default_host(catalog: Catalog) -> None:
    t4 = one(catalog, provider="gcp", gpu="T4", gpus=1, zone="us-central1-a")
    assert t4.instance_type == "n1-standard-8"
    assert t4.vcpus == 8
    assert any("default N1 shape" in n for n in t4.notes)
    v100x4 = one(catalog, provider="gcp", gpu="V100", gpus=4, zone="us-central1-a")
    assert v100x4.instance_type == "n1-standard-32"


def test_gcp_b200_host_placeholder_gives_gpu_only_price(catalog: Catalog) -> None:
    b200 = find(catalog, provider="gcp", gpu="B200")
    assert len(b200) == 12
    assert all(o.gpu_only_price and o.instance_type == "a4-highgpu-8g" for o in b200)
    assert all(o.price_usd_per_hour and o.price_usd_per_hour > 0 for o in b200)


def test_aws_prices_dates_and_spot(catalog: Catalog) -> None:
    p5 = one(catalog, provider="aws", instance_type="p5.48xlarge", region="us-east-1")
    assert (p5.gpu, p5.gpus, p5.price_usd_per_hour) == ("H100", 8, 55.04)
    assert p5.spot_price_usd_per_hour == pytest.approx(28.106467)
    assert p5.price_as_of == date(2026, 1, 21) and p5.price_date_exact
    assert p5.spot_price_as_of == date(2025, 11, 30)
    g5 = one(catalog, provider="aws", instance_type="g5.xlarge", region="us-east-1")
    assert (g5.gpu, g5.price_usd_per_hour, g5.spot_price_usd_per_hour) == ("A10G", 1.006, 0.39388)
    assert one(catalog, provider="aws", instance_type="p4de.24xlarge", region="us-east-1").gpu == "A100-80GB"
    assert one(catalog, provider="aws", instance_type="p4d.24xlarge", region="us-east-1").gpu == "A100"
    assert one(catalog, provider="aws", instance_type="p3dn.24xlarge", region="us-east-1").gpu == "V100-32GB"
    assert not find(catalog, provider="aws", instance_type="inf2.xlarge")  # not a GPU


def test_aws_china_keeps_cny(catalog: Catalog) -> None:
    g5 = one(catalog, provider="aws", instance_type="g5.xlarge", region="cn-north-1")
    assert g5.currency == "CNY"
    assert g5.price_usd_per_hour == pytest.approx(9.51389)  # README: ¥9.51/h
    usd = query_offers(catalog, gpu="A10G", provider="aws")
    assert usd[-1].currency == "CNY"  # other currencies sort after USD, never compared with it


def test_azure_prices_and_fake_spot(catalog: Catalog) -> None:
    nd = one(catalog, provider="azure", instance_type="Standard_ND96isr_H100_v5", region="eastus")
    assert (nd.price_usd_per_hour, nd.spot_price_usd_per_hour) == (98.32, 18.169536)
    assert nd.price_date_exact and nd.price_as_of == date(2026, 5, 20)
    nc = one(catalog, provider="azure", instance_type="Standard_NC24ads_A100_v4", region="eastus")
    assert nc.gpu == "A100-80GB-PCIe"  # NC A100 v4: A100 PCIe 80GB (Microsoft Docs)
    h200 = find(catalog, provider="azure", gpu="H200")
    assert len(h200) == 28
    assert all(o.spot_price_usd_per_hour is None for o in h200)  # spot == on-demand in the source


def test_variant_from_gpuinfo_memory(catalog: Catalog) -> None:
    cudo = find(catalog, provider="cudo", instance_type="epyc-genoa-a100-pcie_1x2v4gb")
    assert cudo and {o.gpu for o in cudo} == {"A100-80GB-PCIe"}  # AcceleratorName A100, 81920 MiB, pcie
    sxm4 = {o.region: o.gpu for o in find(catalog, provider="vast", instance_type="1x-A100_SXM4-32-65536")}
    assert sxm4 == {"Czechia, CZ, EU": "A100-80GB", "Georgia, US, NA": "A100"}  # 81920 vs 40960 MiB
    assert one(catalog, provider="vast", instance_type="2x-A100_PCIE-32-65536").gpu == "A100-PCIe"  # 81920/2
    assert one(catalog, provider="vast", instance_type="1x-H100_NVL-32-65536").gpu == "H100-NVL"
    assert {o.gpu for o in find(catalog, provider="shadeform", instance_type="paperspace_V100-32GB")} == {
        "V100-32GB"
    }


def test_other_providers_spot_checks(catalog: Catalog) -> None:
    assert one(catalog, provider="do", instance_type="gpu-h100x1-80gb").price_usd_per_hour == 6.74
    assert one(catalog, provider="fluidstack").gpu == "H100"  # H100-NVLINK is an SXM H100
    assert {o.gpu for o in find(catalog, provider="hyperstack", instance_type="n3-H100x1")} == {"H100-PCIe"}
    spot_only = one(
        catalog, provider="primeintellect", instance_type="datacrunch__1xH200_141GB__44__182__SPOT"
    )
    assert (spot_only.price_usd_per_hour, spot_only.spot_price_usd_per_hour) == (None, 0.94)
    verda = one(catalog, provider="verda", instance_type="2B300.60V")
    assert (verda.price_usd_per_hour, verda.spot_price_usd_per_hour) == (None, 4.893)
    vast = find(catalog, provider="vast")
    assert all(o.spot_price_usd_per_hour is None for o in vast)  # SpotPrice 0.00 everywhere
    assert vast[0].price_as_of == date(2026, 4, 29)
    neb = one(catalog, provider="nebius", instance_type="gpu-h100-sxm_1gpu-16vcpu-200gb")
    assert (neb.price_usd_per_hour, neb.spot_price_usd_per_hour) == (2.95, 1.25)
    assert one(catalog, provider="ibm", zone="us-south-1").price_usd_per_hour == 2.497


def test_skip_and_drop_reasons_are_counted(catalog: Catalog) -> None:
    st = catalog.stats
    assert st.skipped_rows["placeholder_price"] == 4  # mithril's 1.0 / 8.0 rows
    assert st.skipped_rows["no_accelerator_name"] == 92  # azure rows without AcceleratorName
    assert st.dropped_prices["spot_price_not_positive"] == 64  # vast's 0.00
    assert st.dropped_prices["spot_equals_on_demand"] >= 47 - 8  # azure H200/GB200 (GB200 rows have no name)
    assert st.dropped_prices["spot_above_on_demand"] >= 77  # GCP accelerator rows
    for o in catalog.offers:
        if o.price_usd_per_hour is not None and o.spot_price_usd_per_hour is not None:
            assert o.spot_price_usd_per_hour < o.price_usd_per_hour
        for price in (o.price_usd_per_hour, o.spot_price_usd_per_hour):
            assert price is None or price > 0


def test_h100_offers_from_at_least_eight_providers_cheapest_first(catalog: Catalog) -> None:
    found = query_offers(catalog, gpu="H100")
    assert len({o.provider for o in found}) >= 8
    assert {o.gpu for o in found} == {"H100"}  # an H100-PCIe offer is not an H100
    prices = [o.price_usd_per_hour for o in found if o.currency == "USD" and o.price_usd_per_hour is not None]
    assert prices == sorted(prices)


def test_query_filters(catalog: Catalog) -> None:
    eight = query_offers(catalog, gpu="h100-sxm", count=8, provider="AWS")
    assert eight and all(o.gpus == 8 and o.provider == "aws" for o in eight)
    eu = query_offers(catalog, gpu="H100", region="europe-*")
    assert eu and all(o.region.startswith("europe-") for o in eu)
    zone = query_offers(catalog, gpu="T4", region="us-central1-a")
    assert zone and all(o.zone == "us-central1-a" for o in zone)
    spot = query_offers(catalog, gpu="A10G", spot=True)
    assert spot and all(o.spot_price_usd_per_hour is not None for o in spot)
    usd = [o.spot_price_usd_per_hour for o in spot if o.currency == "USD"]
    assert usd == sorted(usd)


def test_undated_prices_are_flagged_like_stale_ones(catalog: Catalog) -> None:
    lam = find(catalog, provider="lambda")[0]
    azure = find(catalog, provider="azure")[0]
    just_after = date(2026, 5, 21)
    assert is_stale(lam, just_after)  # no date of its own: flagged even when young
    assert not is_stale(azure, just_after)
    assert is_stale(azure, date(2026, 8, 19))  # 91 days


def test_sources_give_each_providers_newest_date(catalog: Catalog) -> None:
    assert catalog.sources["aws"] == date(2026, 1, 21)
    assert catalog.sources["azure"] == date(2026, 5, 20)
    assert catalog.sources["vast"] == date(2026, 4, 29)


def test_load_is_cached(tmp_path: Path) -> None:
    assert load_catalog(tmp_path) is load_catalog(tmp_path)


def test_region_without_wildcard_is_exact(catalog: Catalog) -> None:
    exact = query_offers(catalog, gpu="T4", provider="aws", region="us-east-1")
    assert exact and {o.region for o in exact} == {"us-east-1"}  # not the us-east-1-atl-1 Local Zone
    local = query_offers(catalog, gpu="T4", provider="aws", region="us-east-1-*")
    assert local and all(o.region.startswith("us-east-1-") for o in local)
