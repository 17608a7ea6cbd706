"""Each normalisation rule on constructed rows: what the sources lump, split or get wrong."""

from __future__ import annotations

import json
from datetime import date

import pytest

from gpuwise.catalog.build import build_catalog
from gpuwise.catalog.models import Offer, SourceFile, SourceInfo
from gpuwise.catalog.normalise import gpuinfo_per_gpu_mib, offer_gpu

SKY_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"
GCP_HEADER = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,"
GCP_HEADER += "Price,SpotPrice"
DAY = date(2026, 5, 1)


def src(file: str, provider: str, text: str, *, exact: bool = False, as_of: date = DAY) -> SourceFile:
    return SourceFile(SourceInfo(file, provider, as_of, exact, f"test {file}"), text)


def sky(provider: str, *rows: str) -> SourceFile:
    return src(f"{provider}.csv", provider, "\n".join([SKY_HEADER, *rows]) + "\n")


def offers_of(*files: SourceFile) -> list[Offer]:
    return list(build_catalog(files).offers)


def test_lambda_pcie_instance_is_h100_pcie() -> None:
    (o,) = offers_of(sky("lambda", "gpu_1x_h100_pcie,H100,1.0,26,200,2.49,us-west-1,,"))
    assert o.gpu == "H100-PCIe"
    assert any("PCIe" in n for n in o.notes)


def test_a100_with_81920_mib_is_80gb_and_40960_stays_40gb() -> None:
    big = "{'Gpus': [{'Name': 'A100', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 81920}}]}"
    small = "{'Gpus': [{'Name': 'A100', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 40960}}]}"
    found = offers_of(sky("cudo", f'a,A100,1,2,4,1.5,r1,"{big}",', f'b,A100,1,2,4,1.0,r1,"{small}",'))
    assert [o.gpu for o in found] == ["A100-80GB", "A100"]
    assert found[0].gpu_memory_gib == 80


@pytest.mark.parametrize(
    ("provider", "info", "count", "expected"),
    [
        ("lambda", "{'MemoryInfo': {'SizeInMiB': 16384}}, 'TotalGpuMemoryInMiB': 16384", 8, 16384),  # per GPU
        ("vast", "{'MemoryInfo': {'SizeInMiB': 65214}}, 'TotalGpuMemoryInMiB': 65214", 2, 32607),  # whole box
        ("primeintellect", '{"SizeInMiB":655360}', 8, 81920),  # whole box
        ("shadeform", "{'MemoryInfo': {'SizeInMiB': 80}}", 8, 80 * 1024),  # GB, not MiB
        ("nebius", "{'MemoryInfo': {'SizeInMiB': 0}}", 1, None),
        ("azure", "A100", 1, None),
        ("do", "{'memoryinfo': {'sizeinmib': 81559}}", 1, 81559),  # lowercase keys
    ],
)
def test_gpuinfo_memory_units(provider: str, info: str, count: int, expected: float | None) -> None:
    assert gpuinfo_per_gpu_mib(provider, info, count) == expected


def test_variant_rules_by_name_and_memory() -> None:
    assert offer_gpu("V100", "x", 32768)[0] == "V100-32GB"
    assert offer_gpu("V100", "paperspace_V100-32GB", None)[0] == "V100-32GB"
    assert offer_gpu("A100", "lambdalabs__8xA100_80GB", None)[0] == "A100-80GB"
    assert offer_gpu("H100", "1x-H100_NVL", 95830)[0] == "H100-NVL"
    assert offer_gpu("H100-NVLINK", "H100_NVLINK_80GB::8", 81920) == ("H100", None)  # SXM with NVLink
    assert offer_gpu("A6000", "x", None) == ("RTXA6000", None)
    assert offer_gpu("RTX4070", "x", None) == ("RTX4070", None)  # unknown names are kept as given


def test_impossible_prices_are_dropped_or_skipped_and_counted() -> None:
    catalog = build_catalog(
        [
            sky(
                "p",
                "zero,H100,1,8,32,0,r,,",  # only price is zero -> row skipped
                "neg-spot,H100,1,8,32,2.0,r,,-1",  # spot dropped
                "spot-high,H100,1,8,32,2.0,r,,3.0",  # spot above on-demand -> dropped
                "spot-eq,H100,1,8,32,2.0,r,,2.0",  # spot equal -> dropped (not a real spot price)
                "placeholder,H100,8,8,32,8.0,r,,8.0",  # $1.00 per GPU for both -> skipped
                "none,H100,1,8,32,,r,,",  # no price at all -> skipped
                "spot-only,H100,1,8,32,,r,,0.9",  # kept with spot only
                "good,H100,1,8,32,2.0,r,,1.0",
            )
        ]
    )
    by = {o.instance_type: o for o in catalog.offers}
    assert set(by) == {"neg-spot", "spot-high", "spot-eq", "spot-only", "good"}
    assert by["neg-spot"].spot_price_usd_per_hour is None
    assert by["spot-high"].spot_price_usd_per_hour is None
    assert by["spot-eq"].spot_price_usd_per_hour is None
    assert (by["spot-only"].price_usd_per_hour, by["spot-only"].spot_price_usd_per_hour) == (None, 0.9)
    assert (by["good"].price_usd_per_hour, by["good"].spot_price_usd_per_hour) == (2.0, 1.0)
    st = catalog.stats
    assert st.skipped_rows == {"price_not_positive": 1, "placeholder_price": 1, "no_price": 1}
    assert st.dropped_prices["spot_price_not_positive"] == 1
    assert st.dropped_prices["spot_above_on_demand"] == 1
    assert st.dropped_prices["spot_equals_on_demand"] == 1


def test_malformed_rows_are_skipped_when_loading() -> None:
    catalog = build_catalog([sky("p", "ok,H100,1,8,32,2.0,r,,", "bad,H100,1,8,32,two,r,,", "short,H100,1")])
    assert [o.instance_type for o in catalog.offers] == ["ok"]
    assert catalog.stats.skipped_rows["malformed_row"] == 2


def gcp(*rows: str) -> SourceFile:
    return src("gcp.csv", "gcp", "\n".join([GCP_HEADER, *rows]) + "\n")


def test_gcp_accelerator_combined_with_host_in_same_zone() -> None:
    (o,) = offers_of(
        gcp(
            "a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-a,1.18251,0.5",
            "a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-b,9.0,5.0",
            ",,,H100,1,,us-central1,us-central1-a,4.20076,2.0",
        )
    )
    assert (o.instance_type, o.zone, o.vcpus, o.memory_gib) == ("a3-highgpu-1g", "us-central1-a", 26, 234)
    assert o.price_usd_per_hour == pytest.approx(5.38327)
    assert o.spot_price_usd_per_hour == pytest.approx(2.5)
    assert not o.gpu_only_price


def test_gcp_without_host_row_is_gpu_only() -> None:
    (o,) = offers_of(gcp(",,,H100,8,,us-east4,us-east4-a,30.0,"))
    assert o.gpu_only_price
    assert o.instance_type == "a3-highgpu-8g"
    assert o.price_usd_per_hour == 30.0
    assert any("GPU-only" in n for n in o.notes)


def test_gcp_host_with_zero_price_is_gpu_only() -> None:
    (o,) = offers_of(
        gcp(
            "a4-highgpu-8g,224,3968,,,,us-east1,us-east1-b,0.0,0.0",
            ",,,B200,8,,us-east1,us-east1-b,80.0,30.0",
        )
    )
    assert o.gpu_only_price and o.price_usd_per_hour == 80.0
    assert any("placeholder" in n for n in o.notes)


def test_gcp_n1_default_host_shape_per_gpu_count() -> None:
    found = offers_of(
        gcp(
            "n1-standard-8,8,30,,,,us-central1,us-central1-a,0.38,0.08",
            "n1-standard-16,16,60,,,,us-central1,us-central1-a,0.76,0.16",
            ",,,T4,1,,us-central1,us-central1-a,0.35,0.14",
            ",,,V100,2,,us-central1,us-central1-a,4.96,1.0",
        )
    )
    t4, v100 = found
    assert (t4.instance_type, t4.price_usd_per_hour, t4.spot_price_usd_per_hour) == (
        "n1-standard-8",
        0.73,
        0.22,
    )
    assert (v100.instance_type, v100.vcpus) == ("n1-standard-16", 16)
    assert v100.price_usd_per_hour == pytest.approx(5.72)


def test_gcp_accelerator_spot_above_on_demand_is_dropped_before_combining() -> None:
    (o,) = offers_of(
        gcp(
            "a3-highgpu-1g,26,234,,,,us-central1,us-central1-a,1.18,0.5",
            ",,,H100,1,,us-central1,us-central1-a,4.2,5.3",
        )
    )
    assert o.spot_price_usd_per_hour is None
    assert o.price_usd_per_hour == pytest.approx(5.38)


def aws_files(vantage: list[object], spot_csv: str) -> list[SourceFile]:
    return [
        src(
            "aws_vantage_gpu_instances.json", "aws", json.dumps(vantage), exact=True, as_of=date(2026, 1, 21)
        ),
        src("aws-gpu-spot.csv", "aws", spot_csv, exact=True, as_of=date(2025, 11, 30)),
    ]


SPOT_HEADER = (
    "instance_type,GPU,GPU_model,GPU_memory,vCPU,memory,region,ondemand,spot_min,spot_max,spot_avg,"
    "pct_interrupt,pct_savings_od"
)


def test_aws_each_price_from_the_newer_source_with_its_date() -> None:
    vantage = [
        {"name": "g5.xlarge", "gpu": "NVIDIA A10G", "gpuCount": 1, "vcpu": 4, "memory": "16 GB",
         "pricing": {"us-east-1": {"onDemand": 1.10}}},
    ]  # fmt: skip
    spot = "\n".join(
        [
            SPOT_HEADER,
            "g5.xlarge,1,NVIDIA A10G,24,4,16,us-east-1,1.006,0.3,0.5,0.39,>20%,61",  # older on-demand 1.006
            "g5.xlarge,1,NVIDIA A10G,24,4,16,eu-west-1,1.12,0.3,0.5,0.41,>20%,61",  # only in the spot file
            "inf2.xlarge,1,AWS Inferentia2,32,4,16,us-east-1,0.76,0.2,0.3,0.25,<5%,70",  # not a GPU
        ]
    )
    catalog = build_catalog(aws_files(vantage, spot))
    by = {o.region: o for o in catalog.offers}
    east = by["us-east-1"]
    assert (east.price_usd_per_hour, east.price_as_of) == (1.10, date(2026, 1, 21))
    assert (east.spot_price_usd_per_hour, east.spot_price_as_of) == (0.39, date(2025, 11, 30))
    west = by["eu-west-1"]
    assert (west.price_usd_per_hour, west.price_as_of) == (1.12, date(2025, 11, 30))
    assert set(by) == {"us-east-1", "eu-west-1"}
    assert catalog.sources["aws"] == date(2026, 1, 21)


def test_aws_china_is_cny() -> None:
    china = [
        {"instance_type": "g5.xlarge", "GPU_model": "NVIDIA A10G", "GPU": 1, "vCPU": 4, "memory": 16,
         "pricing": {"cn-north-1": {"linux": {"ondemand": "9.51389", "reserved": {}}}}},
    ]  # fmt: skip
    (o,) = offers_of(src("aws_china_vantage_gpu_instances_raw.json", "aws", json.dumps(china), exact=True))
    assert (o.currency, o.price_usd_per_hour, o.gpu) == ("CNY", 9.51389, "A10G")


def test_undated_source_keeps_collection_date_and_flag() -> None:
    (o,) = offers_of(
        src("x.csv", "x", SKY_HEADER + "\na,L4,1,4,16,0.5,r,,\n", exact=False, as_of=date(2026, 3, 1))
    )
    assert (o.price_as_of, o.price_date_exact) == (date(2026, 3, 1), False)


def test_tpu_rows_are_not_gpu_offers() -> None:
    catalog = build_catalog([gcp(",,,tpu-v2-8,1,,us-central1,us-central1-b,700.0,700.0")])
    assert catalog.offers == ()
    assert catalog.stats.skipped_rows == {"not a GPU (TPU)": 1}


def test_a100_pcie_instances_are_the_pcie_cards() -> None:
    # cudo's epyc-genoa-a100-pcie (80 GB) and vast's A100_PCIE (40 GB) were counted as SXM cards, whose
    # bandwidth and power the PCIe ones do not have
    assert offer_gpu("A100", "epyc-genoa-a100-pcie_1x2v4gb", 81920)[0] == "A100-80GB-PCIe"
    assert offer_gpu("A100", "1x-A100_PCIE-32-65536", 40960)[0] == "A100-PCIe"
    assert offer_gpu("A100", "a100-pcie-80gb", None)[0] == "A100-80GB-PCIe"
    assert offer_gpu("A100", "1x-A100_SXM4-32-65536", 40960) == ("A100", None)


def test_bundled_a100_pcie_offers_are_labelled_pcie() -> None:
    from gpuwise.catalog.offers import load_catalog

    pcie = {o.gpu for o in load_catalog(None).offers if "pcie" in o.instance_type.lower()}
    assert pcie <= {"H100-PCIe", "A100-PCIe", "A100-80GB-PCIe"}


def test_azure_nc_a100_v4_is_the_pcie_card_and_nd_stays_sxm() -> None:
    # Microsoft Docs (nc-a100-v4-series): "up to 4 NVIDIA A100 PCIe GPUs with 80GB memory each"
    assert offer_gpu("A100-80GB", "Standard_NC24ads_A100_v4", None)[0] == "A100-80GB-PCIe"
    assert offer_gpu("A100-80GB", "Standard_NC96ads_A100_v4", None)[0] == "A100-80GB-PCIe"
    assert offer_gpu("A100-80GB", "Standard_ND96amsr_A100_v4", None) == ("A100-80GB", None)
