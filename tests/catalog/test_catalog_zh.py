"""`gpuwise --lang zh catalog …` speaks Chinese: table titles, headings, notes, the fetch report and errors
(with their fixes); the JSON documents are the same in both languages. Runs that import the catalog
command's module go through a subprocess, so its option help (fixed when the module is imported) never
leaks Chinese into other tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fetch_fakes import RecordedApi

import gpuwise.cli.catalog  # noqa: F401 - imported in English first: typer fixes option help at import
from gpuwise.catalog.fetch import aliyun
from gpuwise.cli.main import main
from gpuwise.locale import use_language


def _gpuwise(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "LANGUAGE": "", "LC_ALL": "", "LANG": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-m", "gpuwise", *args], capture_output=True, text=True, check=False, env=env
    )


@pytest.fixture
def english_after() -> Iterator[None]:
    yield
    use_language("en")  # an in-process --lang zh must not leave the next test in Chinese


def test_catalog_gpus_titles_and_notes_are_chinese() -> None:
    out = _gpuwise("--lang", "zh", "catalog", "gpus")
    assert out.returncode == 0, out.stderr
    assert "GPU 规格：稠密 TFLOPS（不计稀疏）" in out.stdout
    assert "来源：" in out.stdout and "别名不区分大小写" in out.stdout
    assert "GPU specs" not in out.stdout and "Sources:" not in out.stdout
    assert "H100" in out.stdout  # GPU names stay as they are


def test_catalog_offers_table_headings_are_chinese_and_json_is_unchanged() -> None:
    table = _gpuwise("--lang", "zh", "catalog", "offers", "--gpu", "H100", "--limit", "3")
    assert table.returncode == 0, table.stderr
    for heading in ("云厂商", "地域", "价格日期", "条报价，价格从低到高"):
        assert heading in table.stdout
    assert "cheapest first" not in table.stdout
    en = _gpuwise("catalog", "offers", "--gpu", "H100", "--json", "--limit", "5")
    zh = _gpuwise("--lang", "zh", "catalog", "offers", "--gpu", "H100", "--json", "--limit", "5")
    assert en.returncode == zh.returncode == 0
    assert json.loads(zh.stdout) == json.loads(en.stdout)  # keys, ids and values: never translated


def test_a_bad_gpu_request_is_explained_in_chinese_with_its_fix() -> None:
    out = _gpuwise("--lang", "zh", "catalog", "offers", "--gpu", "H100:x")
    assert out.returncode == 2
    said = " ".join(out.stderr.split())
    assert "GPU 请求 'H100:x' 不是 NAME 或 NAME:COUNT 的形式" in said
    assert "请写成例如 --gpu H100:8" in said
    assert "Traceback" not in out.stderr


def test_fetch_reports_what_it_wrote_in_chinese(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], english_after: None
) -> None:
    monkeypatch.setattr(aliyun, "sdk_api", lambda: RecordedApi("aliyun"))
    out = tmp_path / "aliyun.csv"
    assert (
        main(["--lang", "zh", "catalog", "fetch", "aliyun", "--region", "cn-hangzhou", "-o", str(out)]) == 0
    )
    said = " ".join(capsys.readouterr().out.split())
    assert "已写入 4 行 GPU（3 种实例类型，1 个地域）" in said and "币种 CNY" in said
    assert f"使用方法：gpuwise catalog import {out}" in said
    assert out.read_text(encoding="utf-8").startswith("InstanceType,")  # the file stays machine-readable


def test_missing_credentials_are_bad_input_in_chinese(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], english_after: None
) -> None:
    for name in aliyun.ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    assert main(["--lang", "zh", "catalog", "fetch", "aliyun"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "没有 Alibaba Cloud 的凭据：未设置" in said and "ALIBABA_CLOUD_ACCESS_KEY_ID" in said
