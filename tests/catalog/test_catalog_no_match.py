"""`gpuwise catalog offers` that finds nothing says which filter matched nothing and what dropping each
would show, instead of a bare "No offers match" (a newcomer cannot tell a GPU nobody sells from a count no
instance has). Runs on the bundled catalog through the real entry point."""

from __future__ import annotations

import json

import pytest

from gpuwise.cli.main import main


def _said(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["catalog", "offers", *argv]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_a_known_gpu_no_provider_sells_is_named_with_gpus_that_have_offers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = _said(capsys, "--gpu", "h20")
    assert "No provider in the catalog sells H20." in said
    assert "similar name: H200" in said


def test_a_gpu_count_no_instance_has_lists_the_counts_there_are(capsys: pytest.CaptureFixture[str]) -> None:
    said = _said(capsys, "--gpu", "H100:5")
    assert "No offers match --gpu H100 --count 5." in said
    assert "have 1, 2, 3, 4, 8 GPUs each" in said
    assert "Without --count: 355 offer(s)." in said


def test_each_filter_says_what_dropping_it_would_show(capsys: pytest.CaptureFixture[str]) -> None:
    said = _said(capsys, "--gpu", "H100", "--provider", "lambda", "--spot")
    assert "Without --spot: 68 offer(s)." in said and "Without --provider:" in said
    assert "Without --gpu" not in said  # lambda sells no spot at all: dropping --gpu gives nothing either


def test_the_same_explanation_in_another_currency_and_json_stays_an_empty_list(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert "have 1, 2, 3, 4, 8 GPUs each" in _said(capsys, "--gpu", "H100:5", "--currency", "CNY")
    assert main(["catalog", "offers", "--gpu", "H100:5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["offers"] == []


def test_an_exact_gpu_names_the_variants_it_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    # --gpu A100 is the 40 GB card only: a newcomer who meant any A100 missed the 80 GB ones unseen
    said = _said(capsys, "--gpu", "a100", "--limit", "1")
    assert "Not included, as --gpu A100 names one card exactly: A100-80GB (145 offers)" in said
    assert "A100-80GB-PCIe (99 offers)" in said
    said = _said(capsys, "--gpu", "A100", "--provider", "cudo")  # cudo sells only the 80 GB card
    assert "No offers match" in said and "A100-80GB (" in said
    assert "Not included" not in _said(capsys, "--gpu", "L4", "--limit", "1")  # L40S is no L4 variant
    assert main(["catalog", "offers", "--gpu", "A100", "--json"]) == 0
    assert "Not included" not in capsys.readouterr().out


def test_offers_in_another_currency_listed_after_the_usd_ones_are_said_to_be_unranked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # AWS China's T4 offers (CNY) sit after all 555 USD ones: the default 30 rows never showed them
    said = _said(capsys, "--gpu", "T4")
    assert "Offers priced in CNY (12) follow the USD ones, not ranked with them" in said
    assert "Offers priced in" not in _said(capsys, "--gpu", "T4", "--currency", "USD")  # ranked together
    assert "Offers priced in" not in _said(capsys, "--gpu", "T4", "--region", "cn-*")  # CNY only
