"""Issue 17 item 2 and 5: a stop call that fails is said loudly every time (log, wall, webhook), tried again,
then the configured fallback; a fallback to a shutdown that is not known to end the billing is announced;
webhook notices carry `text` (Slack) / `content` (Discord) and are retried. The daemon runs on a fake clock
with recording stubs on PATH and fakes of the provider API and the webhook on 127.0.0.1."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from idle_fakes import FakeClock, make_stubs, stub_env, webhook_receiver
from provider_fakes import fake_api

from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.idle.actions import Runner, post_webhook
from gpuwise.idle.daemon import IdleDaemon
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.state import load_state
from gpuwise.webhook import chat_fields

UNREACHABLE = MetadataEndpoints.all_at("http://127.0.0.1:9", timeout_s=0.2)
KEY = "rp-SECRET-KEY-77"
STOP_AT_STEP = 121  # 60 min window + 10 min warning at 30 s


class EmptyGpu:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def read(self) -> Snapshot:
        return Snapshot((Sample(self.clock(), 0, util_gpu_pct=0.0, memory_used_bytes=1 << 20),))


def _daemon(tmp_path: Path, settings: IdleSettings, clock: FakeClock, env: dict[str, str]) -> IdleDaemon:
    make_stubs(tmp_path / "bin", tmp_path / "calls.log")
    full_env = {**stub_env(tmp_path / "bin"), **env}
    return IdleDaemon(
        settings,
        EmptyGpu(clock),
        [],
        tmp_path / "state" / "state.json",
        clock=clock,
        sleep=clock.sleep,
        runner=Runner(env=full_env, timeout_s=20),
        endpoints=UNREACHABLE,
        host="gpu-box",
        boot_time=lambda: 1_000.0,
    )


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_failed_stop_is_retried_then_the_configured_fallback_with_a_warning_each_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    marker = tmp_path / "fallback-ran"
    with fake_api(statuses=[500]) as api, webhook_receiver() as (hook, got):
        settings = IdleSettings(
            action="runpod",
            api_url=api.base,
            stop_attempts=2,
            stop_backoff_s=5,
            fallback=("command",),
            command=f'touch "{marker}"',
            webhook=hook + "/hooks/T0/SECRET",
        )
        d = _daemon(tmp_path, settings, clock, {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": KEY})
        with caplog.at_level(logging.DEBUG):
            d.run(max_steps=STOP_AT_STEP)
        calls = api.calls()
    # each try of the stop call is retried on 5xx by the HTTP client (3 tries), and the step is tried twice
    assert [(c.method, c.path) for c in calls] == [("POST", "/pods/pod-1/stop")] * 6
    assert all(c.header("Authorization") == f"Bearer {KEY}" for c in calls)
    assert marker.exists()  # then the fallback ran
    events = [g["event"] for g in got]
    assert events == ["warning", "stopping", "stop_failed", "stop_failed", "stopped"]
    first, second = (g for g in got if g["event"] == "stop_failed")
    assert (first["attempt"], second["attempt"], second["attempts"]) == (1, 2, 2)
    assert "next" not in first and second["next"] == "the configured stop command"
    assert "HTTP 500" in first["detail"] and "FAILED" in first["text"] and "still" in first["text"]
    walls = [c for c in _calls(tmp_path) if c.startswith("wall")]
    assert sum("stop call FAILED" in w for w in walls) == 2
    assert any("trying again (2 of 2)" in w for w in walls)
    assert any("falling back to: the configured stop command" in w for w in walls)
    assert caplog.text.count("the stop call FAILED") == 2
    state = load_state(tmp_path / "state" / "state.json")
    assert state is not None and state["stops"][-1]["ok"] is True
    assert state["stops"][-1]["action"] == "the configured stop command"
    # the key: in the request, nowhere else
    every_text = caplog.text + "\n".join(walls) + repr(got) + repr(state)
    assert KEY not in every_text and "SECRET" not in caplog.text


def test_a_fallback_shutdown_that_may_keep_billing_is_announced(tmp_path: Path) -> None:
    clock = FakeClock()
    with fake_api(statuses=[401]) as api, webhook_receiver() as (hook, got):
        settings = IdleSettings(action="auto", api_url=api.base, webhook=hook)
        env = {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": KEY}
        _daemon(tmp_path, settings, clock, env).run(max_steps=STOP_AT_STEP)
        assert len(api.calls()) == 1  # a 401 is not retried
    assert [c for c in _calls(tmp_path) if not c.startswith("wall")] == ["shutdown -h now"]
    warning = next(g for g in got if g["event"] == "stop_warning")
    assert "not known to end the billing on runpod" in warning["warning"]
    assert any("WARNING: shutdown -h now is not known" in c for c in _calls(tmp_path))


def test_no_provider_and_no_fallback_stops_nothing_and_says_so(tmp_path: Path) -> None:
    clock = FakeClock()
    with webhook_receiver() as (hook, got):
        d = _daemon(tmp_path, IdleSettings(action="auto", fallback=(), webhook=hook), clock, {})
        d.run(max_steps=STOP_AT_STEP)
    assert [c for c in _calls(tmp_path) if not c.startswith("wall")] == []
    assert any("cannot stop gpu-box" in c and "still billing" in c for c in _calls(tmp_path))
    assert got[-1]["event"] == "stop_failed"
    state = load_state(tmp_path / "state" / "state.json")
    assert state is not None and state["stops"][-1]["ok"] is False


def test_lambda_waits_for_a_failed_pre_stop_hook(tmp_path: Path) -> None:
    """Lambda's only stop deletes the disk: a checkpoint sync that failed must block it."""
    clock = FakeClock()
    with fake_api() as api:
        settings = IdleSettings(
            action="lambda", allow_terminate=True, instance_id="i-1", api_url=api.base, pre_stop_hook="exit 1"
        )
        _daemon(tmp_path, settings, clock, {"LAMBDA_API_KEY": "k"}).run(max_steps=STOP_AT_STEP + 5)
        assert api.calls() == []


# -- webhooks (item 5)


def test_every_idle_notice_has_a_text_for_chat_services(tmp_path: Path) -> None:
    clock = FakeClock()
    with webhook_receiver() as (hook, got):
        settings = IdleSettings(action="shutdown", webhook=hook)
        _daemon(tmp_path, settings, clock, {}).run(max_steps=STOP_AT_STEP)
    assert [g["event"] for g in got] == ["warning", "stopping", "stopped"]
    assert got[0]["text"].startswith("gpuwise idle on gpu-box: will stop in 10 min.")
    assert all(isinstance(g["text"], str) and "gpu-box" in g["text"] for g in got)
    assert "content" not in got[0]  # Discord's field only for Discord


def test_discord_gets_content_and_slack_compatible_endpoint_gets_text() -> None:
    assert chat_fields("https://discord.com/api/webhooks/1/abc", "hi") == {"text": "hi", "content": "hi"}
    assert chat_fields("https://discord.com/api/webhooks/1/abc/slack", "hi") == {"text": "hi"}
    assert chat_fields("https://hooks.slack.com/services/T/B/X", "hi") == {"text": "hi"}
    assert len(chat_fields("https://discordapp.com/api/webhooks/1/a", "x" * 5000)["content"]) == 2000


def test_webhook_is_retried_on_server_errors() -> None:
    waits: list[float] = []
    payload: dict[str, Any] = {"event": "stop_failed", "host": "h", "reason": "r"}
    with fake_api(statuses=[503, 502, 204]) as receiver:
        assert post_webhook(receiver.base + "/hook/SECRET", payload, sleep=waits.append) is None
        assert len(receiver.calls()) == 3 and len(waits) == 2
        assert receiver.calls()[-1].json()["text"] == "gpuwise idle on h: stop failed. r"
    with fake_api(statuses=[503]) as receiver:
        error = post_webhook(receiver.base + "/hook/SECRET", payload, sleep=waits.append)
    assert error is not None and "HTTP 503" in error and "SECRET" not in error
