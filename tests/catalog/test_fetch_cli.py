"""`gpuwise catalog fetch` end to end against recorded responses: the file it writes is one `catalog import`
accepts, the imported offers keep their currency (CNY) and their own date, and `plan` sees them beside AWS
China's CNY offers and USD ones. The recorded API is injected at our own interface (the cloud module's
``sdk_api``), never by patching an SDK."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from fetch_fakes import RecordedApi

from gpuwise.catalog.fetch import aliyun, tencent
from gpuwise.catalog.fetch.common import ApiError
from gpuwise.catalog.offers import load_catalog
from gpuwise.cli.main import main

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def recorded_aliyun(monkeypatch: pytest.MonkeyPatch) -> RecordedApi:
    api = RecordedApi("aliyun")
    monkeypatch.setattr(aliyun, "sdk_api", lambda: api)
    return api


def test_fetch_writes_a_file_import_accepts_with_cny_prices_and_their_own_date(
    recorded_aliyun: RecordedApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "aliyun.csv"
    assert main(["catalog", "fetch", "aliyun", "--region", "cn-hangzhou", "-o", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())  # unwrapped: the console wraps long paths
    assert "Wrote 4 GPU rows (3 instance types, 1 region(s))" in said and "in CNY" in said
    assert f"gpuwise catalog import {out}" in said
    target = tmp_path / "catalog"
    assert main(["catalog", "import", str(out), "--catalog-dir", str(target), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu_rows_imported"] == {"aliyun": 4}
    assert doc["price_dates"] == {"aliyun": date.today().isoformat()}
    offers = [o for o in load_catalog(target).offers if o.provider == "aliyun"]
    assert {(o.gpu, o.currency, o.price_date_exact) for o in offers} == {
        ("A10", "CNY", True),
        ("A100-80GB", "CNY", True),
        ("L20", "CNY", True),
    }
    assert all(o.price_as_of == date.today() for o in offers)


def test_plan_sees_fetched_cny_offers_beside_aws_china_and_usd_ones(
    recorded_aliyun: RecordedApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "aliyun.csv"
    target = tmp_path / "catalog"
    assert main(["catalog", "fetch", "aliyun", "-o", str(out), "--import", "--catalog-dir", str(target)]) == 0
    capsys.readouterr()
    args = ["plan", str(REPO / "examples" / "llama3-8b-lora.toml"), "--catalog-dir", str(target), "--json"]
    args += ["--provider", "aliyun", "--provider", "aws", "--provider", "lambda", "--top", "400"]
    # the rate is the user's to give (a plain USD plan leaves CNY offers out rather than convert silently)
    assert main([*args, "--exchange-rate", "CNY=0.14"]) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    seen = {(o["provider"], o.get("currency", "USD"), o["region"].startswith("cn-")) for o in options}
    assert ("aliyun", "CNY", True) in seen
    assert ("aws", "CNY", True) in seen  # AWS China (cn-north-1 / cn-northwest-1), priced in yuan
    assert any(p != "aliyun" and c == "USD" for p, c, _ in seen)
    # A10 (24 GB) does not hold this LoRA in bf16; the 48 GB L20 and the 80 GB A100 do
    assert {o["gpu"] for o in options if o["provider"] == "aliyun"} == {"A100-80GB", "L20"}


def test_a_failing_region_warns_on_stderr_and_the_rest_is_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = RecordedApi("aliyun")  # cn-beijing has no recording: its listing call fails
    monkeypatch.setattr(aliyun, "sdk_api", lambda: api)
    out = tmp_path / "aliyun.csv"
    assert (
        main(
            [
                "catalog",
                "fetch",
                "aliyun",
                "--region",
                "cn-hangzhou",
                "--region",
                "cn-beijing",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "warning: cn-beijing: not fetched" in captured.err
    assert out.read_text(encoding="utf-8").count("cn-hangzhou,cn-hangzhou-") == 4


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["catalog", "fetch", "alyun"], "Did you mean 'aliyun'"),
        (["catalog", "fetch", "baidu"], "not built yet"),
        (["catalog", "fetch", "aws"], "other clouds' prices come with `gpuwise catalog update`"),
        (["catalog", "fetch", "aliyun", "--region", "cn-hangzou"], "Did you mean 'cn-hangzhou'"),
        (["catalog", "fetch", "aliyun", "--billed-in", "USD"], "--billed-in is for tencent only"),
        (["catalog", "fetch", "tencent", "--billed-in", "EUR"], "bills in CNY or USD"),
    ],
)
def test_bad_input_exits_2_with_a_fix_and_writes_nothing(  # noqa: PLR0917 - fixtures and parameters
    recorded_aliyun: RecordedApi,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
) -> None:
    monkeypatch.setattr(tencent, "sdk_api", lambda: RecordedApi("tencent"))
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "To fix:" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_missing_credentials_exit_2_naming_the_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (*aliyun.ENV_NAMES, *tencent.ENV_NAMES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDsecretvalue123")
    monkeypatch.chdir(tmp_path)
    assert main(["catalog", "fetch", "tencent"]) == 2
    err = capsys.readouterr().err
    assert "TENCENTCLOUD_SECRET_KEY is not set" in err and "AKIDsecretvalue123" not in err


def test_a_refused_key_exits_2_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = RecordedApi(
        "tencent", fail={("DescribeRegions", None): ApiError("AuthFailure.SecretIdNotFound", "no")}
    )
    monkeypatch.setattr(tencent, "sdk_api", lambda: api)
    monkeypatch.chdir(tmp_path)
    assert main(["catalog", "fetch", "tencent"]) == 2
    assert "refused the credentials (AuthFailure.SecretIdNotFound)" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_json_summary(
    recorded_aliyun: RecordedApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.csv"
    assert main(["catalog", "fetch", "aliyun", "--region", "cn-hangzhou", "-o", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {
        "provider": "aliyun",
        "file": str(out),
        "price_date": date.today().isoformat(),
        "currencies": ["CNY"],
        "rows": 4,
        "instance_types": 3,
        "regions": ["cn-hangzhou"],
        "skipped": {
            "GPU not known to gpuwise: NVIDIA GRID P4-1Q (aliyun family 'vgn5i' is not in gpuwise's "
            "instance-family table)": 1
        },
        "warnings": [],
    }


def test_a_file_named_otherwise_is_imported_with_its_provider(
    recorded_aliyun: RecordedApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.csv"
    assert main(["catalog", "fetch", "aliyun", "--region", "cn-hangzhou", "-o", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert f"gpuwise catalog import {out} --provider aliyun" in said


def test_a_cn_plan_for_a_7b_qlora_ranks_a10_a100_and_l20_of_more_than_one_provider_in_yuan(
    recorded_aliyun: RecordedApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20's third line with nothing stood in but the recorded API: Alibaba's fetched offers and the
    bundled AWS China ones (both CNY), ranked together in yuan at the bundled dated rate."""
    out = tmp_path / "aliyun.csv"
    target = tmp_path / "catalog"
    assert main(["catalog", "fetch", "aliyun", "-o", str(out), "--import", "--catalog-dir", str(target)]) == 0
    example = (REPO / "examples" / "qlora-consumer-gpu.toml").read_text(encoding="utf-8")
    work = tmp_path / "qlora-cn.toml"
    work.write_text(
        example.split("[constraints]")[0] + '[constraints]\nregions = ["cn-*"]\nmax_gpus = 1\n',
        encoding="utf-8",
    )
    capsys.readouterr()
    args = ["plan", str(work), "--catalog-dir", str(target), "--currency", "CNY", "--json", "--top", "400"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    options = doc["options"]
    assert options and all(o["region"].startswith("cn-") for o in options)
    by_gpu: dict[str, set[str]] = {}
    for o in options:
        by_gpu.setdefault(o["gpu"], set()).add(o["provider"])
    assert {"A10", "A100-80GB", "L20"} <= set(by_gpu)
    assert {"aliyun", "aws"} <= {p for providers in by_gpu.values() for p in providers}
    assert doc["money"]["currency"] == "CNY"
