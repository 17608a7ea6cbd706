"""The GPU spec table: canonical names (CONTRACTS §1), aliases, dense figures with sources, unknowns."""

from __future__ import annotations

import pytest

from gpuwise.catalog.specs import (
    TFLOPS_DTYPES,
    canonical_gpu_name,
    canonical_gpu_names,
    load_gpu_specs,
    parse_gpu_request,
    resolve_gpu,
)
from gpuwise.errors import NotFoundError, UsageError

CONTRACT_NAMES = [
    "H200", "H100", "H100-PCIe", "A100-80GB", "A100", "L40S", "L4", "A10G", "A10", "T4", "V100",
    "V100-32GB", "RTX4090", "RTXA6000", "MI300X", "B200", "GH200",
]  # fmt: skip


def test_every_contract_gpu_has_a_spec() -> None:
    names = canonical_gpu_names()
    for name in CONTRACT_NAMES:
        assert name in names


def test_gpus_seen_in_offer_files_have_specs() -> None:
    for name in (
        "L40",
        "A40",
        "A30",
        "RTX3090",
        "P100",
        "P4",
        "K80",
        "M60",
        "H100-MEGA",
        "RTX6000-Ada",
        "RTXPRO6000",
    ):
        assert canonical_gpu_name(name) == name


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("h100-sxm", "H100"),
        ("H100 SXM", "H100"),
        ("A100 80GB", "A100-80GB"),
        ("a100-40gb", "A100"),
        ("a100", "A100"),
        ("h100-pcie", "H100-PCIe"),
        ("rtx a6000", "RTXA6000"),
        ("A6000", "RTXA6000"),
        ("RTX6000Ada", "RTX6000-Ada"),
        ("v100 32gb", "V100-32GB"),
        ("gaudi2", "Gaudi2"),
    ],
)
def test_aliases_resolve_case_insensitively(alias: str, canonical: str) -> None:
    assert resolve_gpu(alias).name == canonical


def test_unknown_gpu_gets_close_match() -> None:
    with pytest.raises(NotFoundError) as info:
        resolve_gpu("H10O")
    assert "H100" in info.value.matches
    assert info.value.exit_code == 2
    assert "Did you mean" in info.value.render()


def test_h100_figures_are_dense_datasheet_values_with_sources() -> None:
    h100 = resolve_gpu("H100")
    assert h100.tflops["bf16"].value == pytest.approx(989.4)  # 1979 with sparsity / 2
    assert h100.tflops["fp8"].value == pytest.approx(1978.9)
    assert "H100" in h100.tflops["bf16"].source
    assert h100.memory_bandwidth_gbs.value == 3350
    assert h100.nvlink_bidir_gbs.value == 900
    assert h100.memory_gib == pytest.approx(81559 / 1024, abs=0.01)  # nvidia-smi total of an H100 80GB HBM3
    assert h100.compute_capability == "9.0"
    assert h100.form_factor == "SXM"
    assert h100.pcie_gen == 5


def test_v100_row_is_split_into_16_and_32_gb() -> None:
    small, large = resolve_gpu("V100"), resolve_gpu("V100-32GB")
    assert (small.memory_gib, large.memory_gib) == (16, 32)
    assert small.tflops["fp16"].value == large.tflops["fp16"].value == 125


def test_every_spec_has_every_dtype_key_and_unknowns_say_so() -> None:
    for spec in load_gpu_specs().values():
        assert set(spec.tflops) == set(TFLOPS_DTYPES)
        for fig in spec.tflops.values():
            assert fig.source
            if fig.value is None:
                assert "not published" in fig.source
    a10g = resolve_gpu("A10G")
    # No NVIDIA datasheet for the AWS part: third-party figures, labelled as such.
    assert a10g.tflops["bf16"].value == 70.0
    assert "not datasheet" in a10g.tflops["bf16"].source
    assert resolve_gpu("A100").tflops["fp8"].value is None  # Ampere has no FP8


def test_b200_has_fp4_and_gh200_matches_h100_die() -> None:
    b200 = resolve_gpu("B200")
    assert b200.tflops["fp4"].value == 9000
    assert b200.tflops["bf16"].value == 2250
    assert resolve_gpu("GH200").tflops["bf16"].value == resolve_gpu("H100").tflops["bf16"].value


def test_non_nvidia_have_no_compute_capability() -> None:
    assert resolve_gpu("MI300X").compute_capability is None
    assert resolve_gpu("Gaudi2").compute_capability is None


@pytest.mark.parametrize(("text", "expected"), [("H100:8", ("H100", 8)), ("a100-80gb", ("a100-80gb", None))])
def test_gpu_request_shorthand(text: str, expected: tuple[str, int | None]) -> None:
    assert parse_gpu_request(text) == expected


@pytest.mark.parametrize("text", ["H100:0", "H100:1.5", "H100:x"])
def test_bad_gpu_request(text: str) -> None:
    with pytest.raises(UsageError):
        parse_gpu_request(text)
