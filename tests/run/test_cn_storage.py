"""Alibaba OSS (oss://) and Tencent COS (cos://) through their S3-compatible APIs: moto's S3 server on
127.0.0.1 stands in for both endpoints (passed with --endpoint-url); what is built from --region, the
credentials each reads, and the bad input (no region, a malformed one) are checked without a network."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from run_fakes import TRAINER, job
from run_support import FAKE_KEY_ID, FAKE_SECRET, S3, Result

from gpuwise.errors import ConfigError
from gpuwise.run.endpoints import open_filesystem, redact, s3_options
from gpuwise.run.manifest import MANIFEST_NAME
from gpuwise.run.store import CheckpointStore, scan_local, storage_error

_AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL")
PROVIDER_KEYS = {
    "cos": ("COS_SECRET_ID", "COS_SECRET_KEY"),
    "oss": ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET"),
}


@pytest.fixture(params=["cos", "oss"])
def provider(request: pytest.FixtureRequest, s3: S3, monkeypatch: pytest.MonkeyPatch) -> str:
    """Only the provider's own credential variables are set: the AWS ones are removed."""
    scheme = str(request.param)
    for var in _AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    key_var, secret_var = PROVIDER_KEYS[scheme]
    monkeypatch.setenv(key_var, FAKE_KEY_ID)
    monkeypatch.setenv(secret_var, FAKE_SECRET)
    return scheme


def test_run_list_verify_pull_through_the_s3_compatible_api(
    provider: str, s3: S3, tmp_path: Path, gw: Callable[..., Result]
) -> None:
    url = f"{provider}://{s3.bucket}/runs"
    where = (
        "--endpoint-url",
        s3.endpoint,
        "--region",
        "ap-guangzhou" if provider == "cos" else "cn-hangzhou",
    )
    r = gw(
        "run", "--preemption", "off", "--sync", url, *where, "--run-id", "cn1", "--poll-s", "0.2",
        "--checkpoint-dir", str(tmp_path / "ck"), "--", *job(TRAINER),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"runs/cn1/step-3/{MANIFEST_NAME}" in s3.keys("runs/cn1/")

    listed = gw("checkpoints", "list", url, *where, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [c["name"] for c in json.loads(listed.stdout)["checkpoints"]][-1] == "step-3"
    assert gw("checkpoints", "verify", url, *where).returncode == 0
    pulled = gw("checkpoints", "pull", url, *where, "--to", str(tmp_path / "back"), "--json")
    assert pulled.returncode == 0, pulled.stderr
    assert json.loads((tmp_path / "back" / "step-3" / "state.json").read_text()) == {"step": 3}
    everything = r.stdout + r.stderr + listed.stdout + listed.stderr + pulled.stdout + pulled.stderr
    assert FAKE_SECRET not in everything and FAKE_KEY_ID not in everything


def test_a_damaged_object_is_caught(provider: str, s3: S3, tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    (ck / "step-1").mkdir(parents=True)
    (ck / "step-1" / "w.bin").write_bytes(b"x" * 1000)
    (ck / "step-1" / "COMPLETE").write_text("")
    store = CheckpointStore(f"{provider}://{s3.bucket}/runs", endpoint_url=s3.endpoint)
    (m,) = [store.upload(scan_local(ck)[0], "r")]
    assert store.verify(m) == []
    s3.client.put_object(Bucket=s3.bucket, Key="runs/r/step-1/w.bin", Body=b"y" * 1000)  # same size
    assert store.verify(m) == ["w.bin checksum differs"]


@pytest.mark.parametrize(
    ("scheme", "region", "endpoint"),
    [
        ("cos", "ap-guangzhou", "https://cos.ap-guangzhou.myqcloud.com"),
        ("oss", "cn-hangzhou", "https://s3.oss-cn-hangzhou.aliyuncs.com"),
    ],
)
def test_the_endpoint_is_built_from_the_region(scheme: str, region: str, endpoint: str) -> None:
    opts = s3_options(scheme, None, region, {})
    assert opts["endpoint_url"] == endpoint
    assert opts["client_kwargs"] == {"region_name": region}
    assert opts["config_kwargs"]["s3"] == {"addressing_style": "virtual"}
    # botocore >= 1.36 sends CRC32 checksum headers third-party S3 APIs have rejected: only when required
    assert opts["config_kwargs"]["request_checksum_calculation"] == "when_required"
    env_var = "COS_REGION" if scheme == "cos" else "OSS_REGION"
    assert s3_options(scheme, None, None, {env_var: region})["endpoint_url"] == endpoint
    # an explicit endpoint wins, and a bare host name means HTTPS
    bare = endpoint.removeprefix("https://")
    assert s3_options(scheme, bare, region, {})["endpoint_url"] == endpoint


def test_aws_s3_keeps_its_defaults() -> None:
    opts = s3_options("s3", None, None, {})
    assert "endpoint_url" not in opts and "key" not in opts
    assert opts["config_kwargs"] == {"read_timeout": 60.0}  # botocore's checksum defaults stay on


def test_credentials_come_from_the_provider_variables_in_order() -> None:
    tencent = {"TENCENTCLOUD_SECRET_ID": "tc-id", "TENCENTCLOUD_SECRET_KEY": "tc-key"}
    assert s3_options("cos", None, "ap-beijing", tencent)["key"] == "tc-id"
    both = {**tencent, "COS_SECRET_ID": "cos-id", "COS_SECRET_KEY": "cos-key", "COS_SESSION_TOKEN": "tok"}
    opts = s3_options("cos", None, "ap-beijing", both)
    assert (opts["key"], opts["secret"], opts["token"]) == ("cos-id", "cos-key", "tok")
    ali = {"ALIBABA_CLOUD_ACCESS_KEY_ID": "ali-id", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "ali-secret"}
    assert s3_options("oss", None, "cn-beijing", ali)["secret"] == "ali-secret"
    assert "key" not in s3_options("oss", None, "cn-beijing", {})  # botocore's own chain (AWS_*, profile)


@pytest.mark.parametrize("url", ["cos://bucket-1250000000/x", "oss://bucket/x"])
def test_no_region_and_no_endpoint_is_bad_input(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        open_filesystem(url, None, None, {})
    text = info.value.render()
    assert info.value.exit_code == 2 and "--region" in text and "To fix:" in text
    with pytest.raises(ConfigError, match="is not a"):
        open_filesystem(url, None, "../etc", {})


def test_no_region_is_one_message_from_the_cli(
    gw: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("COS_REGION", "TENCENTCLOUD_REGION"):
        monkeypatch.delenv(var, raising=False)
    r = gw("checkpoints", "list", "cos://bucket-1250000000/runs")
    assert r.returncode == 2 and "--region ap-guangzhou" in r.stderr and "Traceback" not in r.stderr


def test_provider_secrets_are_redacted_and_named_in_access_errors() -> None:
    env = {
        "COS_SECRET_KEY": "cos-s3cr3t",
        "OSS_ACCESS_KEY_SECRET": "oss-s3cr3t",
        "TENCENTCLOUD_SECRET_ID": "tcid",
    }
    assert redact("cos-s3cr3t oss-s3cr3t tcid", env) == "*** *** ***"
    denied = storage_error("upload to", "cos://b/x", PermissionError("AccessDenied")).render()
    assert "COS_SECRET_ID/COS_SECRET_KEY" in denied
    denied = storage_error("upload to", "oss://b/x", PermissionError("AccessDenied")).render()
    assert "OSS_ACCESS_KEY_ID/OSS_ACCESS_KEY_SECRET" in denied
