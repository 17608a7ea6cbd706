"""GPU names as a newcomer types them: the product name nvidia-smi prints on the machine they rented, a bare
GeForce number, a name with the card's memory after it. Each must name the right card; a memory that is
not the card's, or a number shared by several cards, must stay unknown rather than pick one."""

from __future__ import annotations

import json

import pytest

from gpuwise.catalog.specs import canonical_gpu_name, parse_gpu_request
from gpuwise.cli.main import main


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        # product names exactly as nvidia-smi prints them (tests/fixtures/recordings, NVIDIA's docs)
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA GeForce RTX 4090", "RTX4090"),
        ("NVIDIA GeForce RTX 3090", "RTX3090"),
        ("NVIDIA RTX A6000", "RTXA6000"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX6000-Ada"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTXPRO6000"),
        ("Tesla V100-SXM2-32GB", "V100-32GB"),
        ("AMD Instinct MI300X", "MI300X"),
        ("H100 80GB HBM3", "H100"),
        ("H200 141GB HBM3e", "H200"),
        # bare GeForce numbers
        ("4090", "RTX4090"),
        ("5090", "RTX5090"),
        ("3090 Ti", "RTX3090Ti"),
        ("geforce 4090", "RTX4090"),
        # the card's own memory after its name
        ("RTX 4090 24GB", "RTX4090"),
        ("4090 24gb", "RTX4090"),
        ("h100 sxm5 80gb", "H100"),
        ("A100 80GB", "A100-80GB"),  # an alias of its own: the 80 GB card, never the 40 GB A100
    ],
)
def test_names_people_copy_or_type_find_the_right_card(typed: str, canonical: str) -> None:
    assert canonical_gpu_name(typed) == canonical


@pytest.mark.parametrize("typed", ["6000", "A10 48GB", "a100 96gb", "nvidia", "80gb", "NVIDIA", "A100 HBM2e"])
def test_a_number_of_several_cards_or_a_memory_not_the_cards_stays_unknown(typed: str) -> None:
    # "6000": Quadro RTX 6000, RTX 6000 Ada or RTX PRO 6000; the A10 has 24 GB, the A100 40 or 80 (HBM2e:
    # the 80 GB one, so never dropped to "A100")
    assert canonical_gpu_name(typed) is None


def test_catalog_offers_takes_a_bare_geforce_number(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "offers", "--gpu", "4090", "--json"]) == 0
    offers = json.loads(capsys.readouterr().out)["offers"]
    assert offers and {o["gpu"] for o in offers} == {"RTX4090"}


def test_catalog_gpus_shows_only_the_gpus_named(capsys: pytest.CaptureFixture[str]) -> None:
    # `gpuwise catalog gpus h100` was refused ("unexpected extra argument"): a newcomer looking up one card
    assert main(["catalog", "gpus", "h100", "4090", "--json"]) == 0
    assert [g["name"] for g in json.loads(capsys.readouterr().out)["gpus"]] == ["H100", "RTX4090"]
    assert main(["catalog", "gpus", "NVIDIA A100-SXM4-80GB"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line[:1].isalnum()]
    assert "A100-80GB" in rows and "H100" not in rows


def test_catalog_gpus_refuses_an_unknown_name_with_close_matches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "gpus", "h10o"]) == 2
    err = capsys.readouterr().err
    assert "Unknown GPU 'h10o'" in err and "Did you mean 'H100'" in err


@pytest.mark.parametrize(
    ("typed", "request_"),
    [
        ("8xH100", ("H100", 8)),
        ("8x H100", ("H100", 8)),
        ("8×H100", ("H100", 8)),
        ("H100x8", ("H100", 8)),
        ("2x A100 80GB", ("A100 80GB", 2)),
        ("RTX4090x2", ("RTX4090", 2)),
        ("MI300Xx8", ("MI300X", 8)),
        # a GPU name is never read as a count: not 'RT' times 4090, nor 'MI300' times nothing
        ("RTX4090", ("RTX4090", None)),
        ("MI300X", ("MI300X", None)),
        ("0xH100", ("0xH100", None)),  # left to the unknown-GPU error with its close matches
    ],
)
def test_a_count_written_as_providers_write_it_is_the_count(
    typed: str, request_: tuple[str, int | None]
) -> None:
    assert parse_gpu_request(typed) == request_


def test_catalog_offers_takes_8x_h100(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "offers", "--gpu", "8x H100", "--json"]) == 0
    offers = json.loads(capsys.readouterr().out)["offers"]
    assert offers and {(o["gpu"], o["gpus"]) for o in offers} == {("H100", 8)}
