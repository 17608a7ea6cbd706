"""Alerts: hysteresis, every rule, and delivery to the log, a webhook and a command."""

from __future__ import annotations

import itertools
import json
import logging
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from monitor_fakes import GIB, gpu, snap

from gpuwise.errors import ConfigError
from gpuwise.gpu.sample import NOT_SUPPORTED, Sample
from gpuwise.monitor.alerts import AlertDelivery, AlertEngine, AlertEvent, AlertsConfig, alerts_config


def engine(**kw: Any) -> AlertEngine:
    return AlertEngine.from_config(AlertsConfig(**kw))


def run(eng: AlertEngine, temps: list[float]) -> list[tuple[str, str]]:
    out = []
    for t in temps:
        out += [(e.rule, e.state) for e in eng.update(snap(gpu(0, temperature_c=t)))]
    return out


def test_temperature_fires_after_n_and_clears_after_m_below_the_lower_line() -> None:
    eng = engine(temperature_c=85, temperature_clear_c=80, for_samples=3, clear_samples=2)
    assert run(eng, [90, 90]) == []
    assert run(eng, [90]) == [("temperature", "firing")]
    # between the lines (80..85): stays firing, no flapping
    assert run(eng, [83, 84, 82, 90, 83]) == []
    assert eng.firing() == [("temperature", 0)]
    assert run(eng, [79]) == []
    assert run(eng, [79]) == [("temperature", "resolved")]
    assert eng.firing() == []


@given(st.lists(st.floats(70, 100), max_size=60))
def test_events_alternate_firing_then_resolved(temps: list[float]) -> None:
    """Invariant: a rule never fires twice without resolving in between, whatever the values."""
    states = [s for _, s in run(engine(), temps)]
    assert all(a != b for a, b in itertools.pairwise(states))
    assert not states or states[0] == "firing"


def test_unsupported_reading_changes_nothing() -> None:
    eng = engine(for_samples=2)
    eng.update(snap(gpu(0, temperature_c=95.0)))
    eng.update(snap(gpu(0, temperature_c=NOT_SUPPORTED)))
    assert [e.rule for e in eng.update(snap(gpu(0, temperature_c=95.0)))] == ["temperature"]


def test_health_rules_fire_at_once() -> None:
    eng = engine()
    sample = gpu(
        0,
        ecc_uncorrected_volatile=2,
        remapped_rows_pending=True,
        xid_errors=1,
        memory_used_bytes=int(79.5 * GIB),
        throttle_reasons=("hw_thermal_slowdown",),
    )
    first = {e.rule for e in eng.update(snap(sample))}
    assert first == {"ecc_uncorrectable", "remapped_rows", "xid"}  # no confirmation needed
    eng.update(snap(sample))
    third = {e.rule for e in eng.update(snap(sample))}
    assert third == {"memory_full", "throttling"}  # after for_samples = 3


def test_gpu_lost_reported_or_vanished() -> None:
    eng = engine()
    eng.update(snap(gpu(0), gpu(1)))
    events = eng.update(snap(gpu(0)))  # GPU 1 fell off the bus
    assert [(e.rule, e.gpu, e.state) for e in events] == [("gpu_lost", 1, "firing")]
    lost = Sample(timestamp_s=5.0, index=0, lost=True)
    assert [(e.rule, e.gpu) for e in eng.update(snap(lost))] == [("gpu_lost", 0)]


def test_bad_config_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="for_samples"):
        alerts_config({"for_samples": 0})
    with pytest.raises(ConfigError, match="tempreature_c"):
        alerts_config({"tempreature_c": 80})
    with pytest.raises(ConfigError, match="webhook_url"):
        alerts_config({"webhook_url": "file:///etc/passwd"})


EVENT = AlertEvent("temperature", 3, "firing", 91.0, "GPU 3: GPU temperature high (91 C)", 1000.0)


class _Hook(BaseHTTPRequestHandler):
    got: list[tuple[dict[str, str], bytes]] = []  # noqa: RUF012 - per-test class state, reset by the fixture
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).got.append((dict(self.headers), body))
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:  # noqa: ARG002 - quiet: the test reads the log itself
        return None


@pytest.fixture
def webhook() -> Iterator[tuple[str, type[_Hook]]]:
    handler = type("Hook", (_Hook,), {"got": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/SECRET-PATH", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_webhook_gets_the_alert_json_and_secrets_stay_out_of_the_log(
    webhook: tuple[str, type[_Hook]], caplog: pytest.LogCaptureFixture
) -> None:
    url, handler = webhook
    caplog.set_level(logging.DEBUG, logger="gpuwise")
    cfg = AlertsConfig(webhook_url=url, webhook_headers={"Authorization": "Bearer tok-123"})
    AlertDelivery(cfg).deliver(EVENT)
    ((headers, body),) = handler.got
    assert headers["Authorization"] == "Bearer tok-123"
    data = json.loads(body)
    assert data["rule"] == "temperature" and data["gpu"] == 3 and data["state"] == "firing"
    assert data["source"] == "gpuwise"
    handler.status = 500
    AlertDelivery(cfg).deliver(EVENT)
    assert "HTTP 500" in caplog.text
    assert "tok-123" not in caplog.text and "SECRET-PATH" not in caplog.text


def test_webhook_unreachable_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    cfg = AlertsConfig(webhook_url=f"http://127.0.0.1:{port}/x", webhook_timeout_s=2)
    AlertDelivery(cfg).deliver(EVENT)
    assert "alert webhook to 127.0.0.1 failed" in caplog.text


def test_command_gets_the_alert_json_on_stdin(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "alert.json"
    script = f"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())"
    AlertDelivery(AlertsConfig(command=[sys.executable, "-c", script])).deliver(EVENT)
    assert json.loads(out.read_text())["message"] == EVENT.message
    slow = AlertsConfig(command=[sys.executable, "-c", "import time; time.sleep(5)"], command_timeout_s=0.3)
    AlertDelivery(slow).deliver(EVENT)
    assert "timed out" in caplog.text
    AlertDelivery(AlertsConfig(command=str(tmp_path / "no-such-program"))).deliver(EVENT)
    assert "could not start" in caplog.text
