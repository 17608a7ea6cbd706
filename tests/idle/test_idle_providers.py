"""Each provider's stop call against a loopback fake of its API (method, path, body and auth header as the
provider documents them; the key never in a description, a failure detail or a log line), the CLI ones
against recording stubs on PATH, and identity detection from recorded environments and metadata answers."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from idle_fakes import make_stubs, stub_env
from provider_fakes import (
    HUAWEI_META_DATA,
    PLAIN_OPENSTACK_META_DATA,
    TENCENT_METADATA,
    FakeApi,
    fake_api,
)

from gpuwise import httpclient
from gpuwise.errors import ConfigError
from gpuwise.idle.actions import Runner
from gpuwise.idle.providers.base import StopContext
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.providers.plan import STEPS, identify, plan_steps
from gpuwise.idle.settings import PROVIDER_ACTIONS, IdleSettings

NOW = 1_777_000_000.0
KEYS = {
    "RUNPOD_API_KEY": "rp-SECRET-1",
    "VAST_API_KEY": "vast-SECRET-2",
    "LAMBDA_API_KEY": "lam-SECRET-3",
    "PAPERSPACE_API_KEY": "ps-SECRET-4",
    "HYPERSTACK_API_KEY": "hs-SECRET-5",
    "TENCENTCLOUD_SECRET_ID": "AKIDSECRET6",
    "TENCENTCLOUD_SECRET_KEY": "tc-SECRET-7",
    "HUAWEICLOUD_SDK_AK": "HWAKSECRET8",
    "HUAWEICLOUD_SDK_SK": "hw-SK-SECRET-9",
}
UNREACHABLE = MetadataEndpoints.all_at("http://127.0.0.1:9", timeout_s=0.2)


def _ctx(tmp_path: Path, api: FakeApi | None, env: dict[str, str] | None = None, **kw: Any) -> StopContext:
    full_env = {"PATH": "/usr/bin:/bin", **(KEYS if env is None else env)}
    return StopContext(
        env=full_env,
        runner=Runner(env=full_env, timeout_s=10),
        home=tmp_path,
        api_urls=dict.fromkeys(STEPS, api.base) if api else {},
        retry=httpclient.Retry(attempts=3, backoff_s=0.0, jitter=0.0),
        sleep=lambda _s: None,
        clock=lambda: NOW,
        **kw,
    )


def _stop(action: str, ctx: StopContext, endpoints: MetadataEndpoints = UNREACHABLE) -> Any:
    plan = plan_steps(action, command=None, fallback=None, ctx=ctx, endpoints=endpoints)
    assert len(plan.steps) == 1, plan
    return plan.steps[0], plan.steps[0].run()


def _no_secret(*texts: str) -> None:
    for text in texts:
        for secret in KEYS.values():
            assert secret not in text


# provider, method, path, body, auth header, auth value prefix
SIMPLE = [
    ("runpod", "POST", "/pods/4242/stop", None, "Authorization", "Bearer rp-SECRET-1"),
    ("vast", "PUT", "/instances/4242/", {"state": "stopped"}, "Authorization", "Bearer vast-SECRET-2"),
    (
        "lambda",
        "POST",
        "/instance-operations/terminate",
        {"instance_ids": ["4242"]},
        "Authorization",
        "Bearer lam-SECRET-3",
    ),
    ("paperspace", "PATCH", "/machines/4242/stop", None, "Authorization", "Bearer ps-SECRET-4"),
    ("hyperstack", "GET", "/core/virtual-machines/4242/hibernate", None, "api_key", "hs-SECRET-5"),
]


@pytest.mark.parametrize(("provider", "method", "path", "body", "header", "auth"), SIMPLE)
def test_api_providers_send_the_documented_request(  # noqa: PLR0917 - the parametrized case
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    provider: str,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    header: str,
    auth: str,
) -> None:
    with fake_api() as api, caplog.at_level(logging.DEBUG):
        step, result = _stop(provider, _ctx(tmp_path, api, instance_id="4242", allow_terminate=True))
    assert result.ok, result
    [req] = api.calls()
    assert (req.method, req.path) == (method, path)
    assert (req.json() if body is not None else req.body) == (body if body is not None else b"")
    assert req.header(header) == auth  # present in the recorded request …
    _no_secret(step.description, result.description, result.detail, caplog.text)  # … and nowhere else


def test_tencent_stop_charging_signed_tc3(tmp_path: Path) -> None:
    with (
        fake_api(metadata=TENCENT_METADATA, statuses=[404]) as meta,
        fake_api(answer={"Response": {"RequestId": "r-1"}}) as api,
    ):
        step, result = _stop("tencent", _ctx(tmp_path, api), MetadataEndpoints.all_at(meta.base, 2))
    assert result.ok, result
    [req] = api.calls()
    assert (req.method, req.path) == ("POST", "/")
    assert req.json() == {
        "InstanceIds": ["ins-a1b2c3d4"],
        "StopType": "SOFT_FIRST",
        "StoppedMode": "STOP_CHARGING",
    }
    h = req.header
    assert (h("X-TC-Action"), h("X-TC-Version"), h("X-TC-Region")) == (
        "StopInstances",
        "2017-03-12",
        "ap-guangzhou",
    )
    assert h("X-TC-Timestamp") == str(int(NOW))
    assert h("Authorization") == _tc3(h("Host"), req.body, int(NOW))
    _no_secret(step.description, result.detail)


def _tc3(host: str, payload: bytes, ts: int) -> str:
    """TC3-HMAC-SHA256 written again from Tencent's "Signature v3" steps
    (tencentcloud.com/document/product/267/37447)."""
    date = time.strftime("%Y-%m-%d", time.gmtime(ts))
    canonical = (
        f"POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:{host}\n\ncontent-type;host\n"
        + hashlib.sha256(payload).hexdigest()
    )
    scope = f"{date}/cvm/tc3_request"
    to_sign = f"TC3-HMAC-SHA256\n{ts}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    k = ("TC3" + KEYS["TENCENTCLOUD_SECRET_KEY"]).encode()
    for part in (date, "cvm", "tc3_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    sid = KEYS["TENCENTCLOUD_SECRET_ID"]
    return f"TC3-HMAC-SHA256 Credential={sid}/{scope}, SignedHeaders=content-type;host, Signature={sig}"


def test_tencent_error_in_a_200_answer_is_a_failed_stop(tmp_path: Path) -> None:
    error = {"Response": {"Error": {"Code": "UnsupportedOperation.StoppedModeStopCharging", "Message": "no"}}}
    with fake_api(metadata=TENCENT_METADATA, statuses=[404]) as meta, fake_api(answer=error) as api:
        _, result = _stop("tencent", _ctx(tmp_path, api), MetadataEndpoints.all_at(meta.base, 2))
    assert not result.ok and "StoppedModeStopCharging" in result.detail


def test_huawei_batch_stop_signed_with_ak_sk(tmp_path: Path) -> None:
    meta_json = json.dumps(HUAWEI_META_DATA)
    with (
        fake_api(metadata={"/openstack/latest/meta_data.json": meta_json}, statuses=[404]) as meta,
        fake_api(answer={"job_id": "ff80"}) as api,
    ):
        step, result = _stop("huawei", _ctx(tmp_path, api), MetadataEndpoints.all_at(meta.base, 2))
    assert result.ok, result
    [req] = api.calls()
    assert req.path == "/v1/0b9c7e2a6f8d4e1b8c3a5d7f9e1b2c4d/cloudservers/action"
    assert req.json() == {"os-stop": {"type": "SOFT", "servers": [{"id": HUAWEI_META_DATA["uuid"]}]}}
    assert req.header("X-Sdk-Date") == time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(NOW))
    signed = "content-type;host;x-sdk-date"
    canonical = "\n".join(
        [
            "POST",
            req.path + "/",
            "",
            f"content-type:application/json\nhost:{req.header('Host')}\nx-sdk-date:{req.header('X-Sdk-Date')}\n",
            signed,
            hashlib.sha256(req.body).hexdigest(),
        ]
    )
    to_sign = f"SDK-HMAC-SHA256\n{req.header('X-Sdk-Date')}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    sig = hmac.new(KEYS["HUAWEICLOUD_SDK_SK"].encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    assert (
        req.header("Authorization")
        == f"SDK-HMAC-SHA256 Access=HWAKSECRET8, SignedHeaders={signed}, Signature={sig}"
    )
    assert "cn-north-4" in step.description  # region from the zone, its letter dropped
    _no_secret(step.description, result.detail)


def test_a_key_the_provider_echoes_back_is_masked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with fake_api(statuses=[401], answer={"error": "bad key rp-SECRET-1"}) as api:
        _, result = _stop("runpod", _ctx(tmp_path, api, instance_id="4242"))
    assert not result.ok and "HTTP 401" in result.detail and "***" in result.detail
    _no_secret(result.detail, caplog.text)


def test_server_errors_are_retried_with_backoff_then_reported(tmp_path: Path) -> None:
    waits: list[float] = []
    with fake_api(statuses=[503, 502, 200]) as api:
        ctx = _ctx(tmp_path, api, instance_id="4242")
        ctx.retry, ctx.sleep = httpclient.Retry(attempts=3, backoff_s=2.0, jitter=0.0), waits.append
        _, ok = _stop("vast", ctx)
    assert ok.ok and len(api.calls()) == 3 and waits == [2.0, 4.0]
    with fake_api(statuses=[503]) as api:
        _, failed = _stop("vast", _ctx(tmp_path, api, instance_id="4242"))
    assert not failed.ok and "HTTP 503" in failed.detail and len(api.calls()) == 3


@pytest.mark.parametrize(
    ("provider", "env", "files", "expected"),
    [
        ("runpod", {}, {".runpod/config.toml": '[default]\napi_key = "rp-FILE"\n'}, "Bearer rp-FILE"),
        ("vast", {}, {".config/vastai/vast_api_key": "vast-FILE\n"}, "Bearer vast-FILE"),
        ("vast", {"CONTAINER_API_KEY": "vast-INSTANCE"}, {}, "Bearer vast-INSTANCE"),
        ("lambda", {}, {".lambda_cloud/lambda_keys": "api_key = lam-FILE\n"}, "Bearer lam-FILE"),
    ],
)
def test_credentials_from_the_providers_usual_places(
    tmp_path: Path, provider: str, env: dict[str, str], files: dict[str, str], expected: str
) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    with fake_api() as api:
        _, result = _stop(provider, _ctx(tmp_path, api, env=env, instance_id="7", allow_terminate=True))
    assert result.ok, result
    assert api.calls()[0].header("Authorization") == expected


def test_tencent_credentials_file(tmp_path: Path) -> None:
    (tmp_path / ".tencentcloud").mkdir()
    (tmp_path / ".tencentcloud" / "credentials").write_text(
        "[default]\nsecret_id = AKIDFILE\nsecret_key = tc-FILE\n", encoding="utf-8"
    )
    with (
        fake_api(metadata=TENCENT_METADATA, statuses=[404]) as meta,
        fake_api(answer={"Response": {"RequestId": "r"}}) as api,
    ):
        _, result = _stop("tencent", _ctx(tmp_path, api, env={}), MetadataEndpoints.all_at(meta.base, 2))
    assert result.ok and "Credential=AKIDFILE/" in api.calls()[0].header("Authorization")


def test_no_credentials_no_call_and_says_what_to_set(tmp_path: Path) -> None:
    with fake_api() as api:
        _, result = _stop("runpod", _ctx(tmp_path, api, env={}, instance_id="4242"))
    assert not result.ok and api.calls() == []
    assert "RUNPOD_API_KEY" in result.detail and "~/.runpod/config.toml" in result.detail


def test_lambda_terminates_only_when_allowed_and_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="terminates the instance") as err:
        IdleSettings(action="lambda").validate()
    assert "allow_terminate = true" in err.value.render()
    with fake_api() as api:
        step, result = _stop("lambda", _ctx(tmp_path, api, instance_id="4242"))  # allow_terminate False
        assert not result.ok and api.calls() == [] and "allow_terminate" in result.detail
        step, result = _stop("lambda", _ctx(tmp_path, api, instance_id="4242", allow_terminate=True))
    assert result.ok and "TERMINATES" in step.warning and "persistent filesystem" in step.warning


@pytest.mark.parametrize(
    ("provider", "expected"),
    [("jarvislabs", "jl pause 4242 --yes"), ("nebius", "nebius compute instance stop --id 4242")],
)
def test_cli_providers_run_their_own_cli(tmp_path: Path, provider: str, expected: str) -> None:
    make_stubs(tmp_path / "bin", tmp_path / "calls.log", names=("jl", "nebius"))
    env = stub_env(tmp_path / "bin")
    ctx = StopContext(env=env, runner=Runner(env=env, timeout_s=10), home=tmp_path, instance_id="4242")
    step, result = _stop(provider, ctx)
    assert result.ok and step.description == expected
    assert (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines() == [expected]


# -- identity


@pytest.mark.parametrize(
    ("env", "provider", "instance"),
    [
        ({"RUNPOD_POD_ID": "abc123xyz", "RUNPOD_GPU_COUNT": "1"}, "runpod", "abc123xyz"),
        ({"VAST_CONTAINERLABEL": "C.98765", "PUBLIC_IPADDR": "1.2.3.4"}, "vast", "98765"),
        ({"CONTAINER_ID": "98765", "VAST_TCP_PORT_22": "40022"}, "vast", "98765"),
    ],
)
def test_identity_from_the_platforms_variables(
    tmp_path: Path, env: dict[str, str], provider: str, instance: str
) -> None:
    found = identify(None, _ctx(tmp_path, None, env=env), UNREACHABLE)
    assert found is not None and (found.provider, found.ids) == (provider, {"instance_id": instance})


def test_a_lone_container_id_is_not_vast(tmp_path: Path) -> None:
    """Other container platforms set CONTAINER_ID too: stopping "the Vast instance" there would be wrong."""
    assert identify(None, _ctx(tmp_path, None, env={"CONTAINER_ID": "98765"}), UNREACHABLE) is None


def test_identity_from_metadata_answers(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, None, env={})
    with fake_api(metadata=TENCENT_METADATA, statuses=[404]) as meta:
        found = identify(None, ctx, MetadataEndpoints.all_at(meta.base, 2))
    assert found is not None and found.provider == "tencent"
    assert found.ids == {"instance_id": "ins-a1b2c3d4", "region": "ap-guangzhou"}
    path = "/openstack/latest/meta_data.json"
    with fake_api(metadata={path: json.dumps(HUAWEI_META_DATA)}, statuses=[404]) as meta:
        found = identify(None, ctx, MetadataEndpoints.all_at(meta.base, 2))
    assert found is not None and found.provider == "huawei" and found.ids["region"] == "cn-north-4"
    # another OpenStack cloud (Hyperstack is one) serves the same file without Huawei's keys: not Huawei
    with fake_api(metadata={path: json.dumps(PLAIN_OPENSTACK_META_DATA)}, statuses=[404]) as meta:
        assert identify(None, ctx, MetadataEndpoints.all_at(meta.base, 2)) is None


def test_identity_from_config_only_for_a_named_provider(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, None, env={}, instance_id="ps-m1")
    assert identify(None, ctx, UNREACHABLE) is None  # auto never guesses the provider from an id
    found = identify("paperspace", ctx, UNREACHABLE)
    assert found is not None and found.ids == {"instance_id": "ps-m1"}
    _, result = _stop("paperspace", _ctx(tmp_path, None, env={}))
    assert not result.ok and "instance_id" in result.detail


def test_every_provider_action_is_a_valid_setting_and_listed() -> None:
    from gpuwise.idle.providers.table import PROVIDER_ACTIONS as LISTED

    assert set(PROVIDER_ACTIONS) == {*STEPS, "aliyun"}
    assert {p.config_action for p in LISTED} == {*STEPS, "command", "shutdown"} - {"aliyun"}
    with pytest.raises(ConfigError, match="Did you mean 'runpod'"):
        IdleSettings(action="command", command="x", fallback=("runpd",)).validate()
