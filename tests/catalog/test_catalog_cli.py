"""`gpuwise catalog gpus | offers | stats` through the real entry point, against CONTRACTS §3a."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpuwise.catalog.spot import all_interruption_rates, interruption_rate
from gpuwise.cli.main import main

CONTRACT_KEYS = {
    "provider", "instance_type", "region", "zone", "gpu", "gpus", "gpu_memory_gib", "vcpus", "memory_gib",
    "price_usd_per_hour", "spot_price_usd_per_hour", "currency", "price_as_of", "price_date_exact", "source",
}  # fmt: skip


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """The list inside `catalog gpus|offers --json`, after checking the document's envelope."""
    assert main(["catalog", *argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    if argv[0] not in ("gpus", "offers"):
        return doc
    assert set(doc) == {"schema_version", argv[0]}
    assert doc["schema_version"] == 1
    return doc[argv[0]]


def test_offers_h100_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    offers = run_json(capsys, "offers", "--gpu", "H100")
    assert len({o["provider"] for o in offers}) >= 8
    for o in offers:
        assert set(o) >= CONTRACT_KEYS
        assert o["gpu"] == "H100"
        assert o["source"]
        assert o["price_as_of"][:2] == "20"
        if not o["price_date_exact"]:
            assert o["stale"] is True  # undated prices are flagged like stale ones
    usd = [o["price_usd_per_hour"] for o in offers if o["currency"] == "USD" and o["price_usd_per_hour"]]
    assert usd == sorted(usd)
    assert any(o["region"] is None for o in offers) or all(o["region"] for o in offers)


def test_offers_shorthand_limit_and_filters(capsys: pytest.CaptureFixture[str]) -> None:
    offers = run_json(capsys, "offers", "--gpu", "h100-sxm:8", "--provider", "aws", "--limit", "3")
    assert len(offers) == 3
    assert all(o["gpus"] == 8 and o["provider"] == "aws" for o in offers)
    spot = run_json(capsys, "offers", "--gpu", "T4", "--spot", "--region", "us-*")
    assert spot and all(o["spot_price_usd_per_hour"] is not None for o in spot)
    assert [o["spot_price_usd_per_hour"] for o in spot] == sorted(o["spot_price_usd_per_hour"] for o in spot)


def test_misspelt_gpu_exits_2_with_close_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "offers", "--gpu", "H10O", "--json"]) == 2
    captured = capsys.readouterr()
    assert "Did you mean 'H100'" in captured.err
    assert captured.out == ""


def test_unknown_provider_and_conflicting_count_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "offers", "--provider", "lamda"]) == 2
    assert "Did you mean 'lambda'" in capsys.readouterr().err
    assert main(["catalog", "offers", "--gpu", "H100:8", "--count", "4"]) == 2


def test_offers_table_shows_age_and_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "offers", "--gpu", "H100", "--provider", "lambda", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "date unknown" in out
    assert "collected" in out
    assert "⚠" in out
    assert "more" in out


def test_gpus_json_lists_figures_with_sources(capsys: pytest.CaptureFixture[str]) -> None:
    gpus = run_json(capsys, "gpus")
    by = {g["name"]: g for g in gpus}
    assert by["H100"]["tflops"]["bf16"] == {"value": 989.4, "source": by["H100"]["tflops"]["bf16"]["source"]}
    assert "H100" in by["H100"]["tflops"]["bf16"]["source"]
    assert by["B300"]["tflops"]["bf16"]["value"] is None
    assert "not published" in by["B300"]["tflops"]["bf16"]["source"]
    # A10G: NVIDIA publishes nothing; third-party figures, labelled as not a datasheet.
    assert by["A10G"]["tflops"]["bf16"]["value"] == 70.0
    assert "not datasheet" in by["A10G"]["tflops"]["bf16"]["source"]
    assert main(["catalog", "gpus"]) == 0
    table = capsys.readouterr().out
    assert "n/p = not published" in table
    assert "NVIDIA H100 Tensor Core GPU datasheet" in table  # the sources are listed under the table


def test_stats_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "stats")
    providers = {p["provider"]: p for p in doc["providers"]}
    assert providers["aws"]["price_date_exact"] is True
    assert providers["lambda"]["price_date_exact"] is False
    assert doc["skipped_rows"]["placeholder_price"] == 4
    assert doc["dropped_prices"]["spot_above_on_demand"] >= 77
    assert doc["location"] == "bundled"
    assert main(["catalog", "stats"]) == 0
    assert "Rows skipped" in capsys.readouterr().out


def test_spot_advisor_buckets() -> None:
    p5 = interruption_rate("aws", "p5.48xlarge", "us-east-1")
    assert p5 is not None
    assert (p5.bucket, p5.low_pct, p5.high_pct, p5.savings_pct) == ("5-10%", 5.0, 10.0, 49.0)
    assert p5.as_of.isoformat() == "2025-11-30"
    assert "aws-gpu-spot.csv" in p5.source
    g5 = interruption_rate("AWS", "g5.xlarge", "us-east-1")
    assert g5 is not None and g5.bucket == ">20%" and g5.high_pct is None
    assert interruption_rate("gcp", "a3-highgpu-8g", "us-central1") is None
    assert interruption_rate("aws", "g2.2xlarge", "ap-northeast-1") is None  # no spot data for old types
    assert len(all_interruption_rates()) == 869  # README: 869 rows have pct_interrupt
