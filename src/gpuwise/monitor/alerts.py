"""Alerts: rules with hysteresis over snapshots (pure state machine) and their delivery (an edge).

A rule reads one number per GPU per snapshot. It fires after `for_samples` consecutive snapshots at or
above its threshold and clears after `clear_samples` consecutive snapshots below its (lower) clear
threshold, so a value hovering at the line does not flap. A reading that is unsupported or failed
changes nothing (it is neither a breach nor a recovery).

Delivery: always the log; optionally a webhook (a JSON POST through gpuwise.webhook, with a timeout)
and/or a command (the alert JSON on its stdin, with a timeout). Webhook URLs, headers and tokens are never
logged.

Config (`[alerts]` in config.toml; every key optional):

    enabled = true
    temperature_c = 85          # fire at or above; clear below temperature_clear_c
    temperature_clear_c = 80
    memory_pct = 98             # memory used, % of total
    memory_clear_pct = 90
    for_samples = 3             # consecutive breaches before firing
    clear_samples = 3           # consecutive recoveries before clearing
    webhook_url = "https://…"
    webhook_headers = {Authorization = "Bearer …"}
    webhook_timeout_s = 5
    command = ["notify-send", "gpuwise"]   # or one string, split like a shell would
    command_timeout_s = 10
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpuwise.config import check_command_line, validate_section
from gpuwise.errors import ConfigError
from gpuwise.gpu import throttle
from gpuwise.gpu.sample import Sample, Snapshot, value_or_none
from gpuwise.locale import _
from gpuwise.webhook import post_json

log = logging.getLogger("gpuwise.monitor.alerts")

_BAD_THROTTLE = tuple(r.id for r in throttle.REASONS if r.severity == "warn")


class AlertsConfig(BaseModel):
    """The `[alerts]` section."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = True
    temperature_c: float = 85.0
    temperature_clear_c: float = 80.0
    memory_pct: float = Field(default=98.0, gt=0, le=100)
    memory_clear_pct: float = Field(default=90.0, gt=0, le=100)
    for_samples: int = Field(default=3, ge=1)
    clear_samples: int = Field(default=3, ge=1)
    webhook_url: str | None = None
    webhook_headers: dict[str, str] = Field(default_factory=dict)
    webhook_timeout_s: float = Field(default=5.0, gt=0, le=120)
    command: list[str] | str | None = None
    command_timeout_s: float = Field(default=10.0, gt=0, le=600)


def alerts_config(section: dict[str, Any], source: str = "config") -> AlertsConfig:
    """Validate the `[alerts]` section; a bad key or value is a ConfigError naming it."""
    cfg = validate_section(section, "alerts", AlertsConfig, source=source)
    if isinstance(cfg.command, str):  # split now: an unclosed quote must not wait for the first alert
        check_command_line(cfg.command, f"{source}: alerts.command")
    if cfg.webhook_url is not None and urllib.parse.urlsplit(cfg.webhook_url).scheme not in ("http", "https"):
        raise ConfigError(
            _("{source}: alerts.webhook_url must be an http:// or https:// URL").format(source=source)
        )
    return cfg


@dataclass(frozen=True)
class AlertRule:
    id: str
    title: str
    value: Callable[[Sample], float | None]
    fire_at: float
    clear_below: float
    unit: str = ""


@dataclass(frozen=True)
class AlertEvent:
    rule: str
    gpu: int
    state: str  # "firing" | "resolved"
    value: float | None
    message: str
    timestamp_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _memory_pct(s: Sample) -> float | None:
    used, total = value_or_none(s.memory_used_bytes), value_or_none(s.memory_total_bytes)
    return None if used is None or not total else 100.0 * used / total


def _remap(s: Sample) -> float | None:
    values = [
        value_or_none(s.remapped_rows_pending),
        value_or_none(s.remapped_rows_failure),
        value_or_none(s.retired_pages_pending),
    ]
    uncorr = value_or_none(s.remapped_rows_uncorrectable)
    if all(v is None for v in values) and uncorr is None:
        return None
    return 1.0 if any(values) or (uncorr or 0) > 0 else 0.0


def _throttle(s: Sample) -> float | None:
    reasons = value_or_none(s.throttle_reasons)
    return None if reasons is None else float(any(r in _BAD_THROTTLE for r in reasons))


def _num(reading: object) -> float | None:
    """A numeric reading as float (bools count 0/1); None for NotSupported/Failed or a non-number."""
    if isinstance(reading, int | float):
        return float(reading)
    return None


def default_rules(cfg: AlertsConfig) -> list[AlertRule]:
    return [
        AlertRule(
            "temperature",
            "GPU temperature high",
            lambda s: _num(s.temperature_c),
            cfg.temperature_c,
            cfg.temperature_clear_c,
            " C",
        ),
        AlertRule(
            "memory_full", "GPU memory nearly full", _memory_pct, cfg.memory_pct, cfg.memory_clear_pct, "%"
        ),
        AlertRule(
            "ecc_uncorrectable", "uncorrectable ECC errors", lambda s: _num(s.ecc_uncorrected_volatile), 1, 1
        ),
        AlertRule("remapped_rows", "row remapping pending or failed", _remap, 1, 1),
        AlertRule("xid", "Xid errors reported", lambda s: _num(s.xid_errors), 1, 1),
        AlertRule("throttling", "thermal or hardware throttling", _throttle, 1, 1),
        AlertRule("gpu_lost", "GPU lost", lambda s: 1.0 if s.lost else 0.0, 1, 1),
    ]


@dataclass
class _State:
    firing: bool = False
    breaches: int = 0
    recoveries: int = 0


@dataclass
class AlertEngine:
    """Feed snapshots in order with `update()`; it returns the events (firing/resolved) they cause."""

    rules: Sequence[AlertRule]
    for_samples: int = 3
    clear_samples: int = 3
    _states: dict[tuple[str, int], _State] = field(default_factory=dict)
    _seen: set[int] = field(default_factory=set)

    @classmethod
    def from_config(cls, cfg: AlertsConfig) -> AlertEngine:
        return cls(default_rules(cfg), cfg.for_samples, cfg.clear_samples)

    def firing(self) -> list[tuple[str, int]]:
        return sorted(k for k, st in self._states.items() if st.firing)

    def update(self, snapshot: Snapshot, timestamp_s: float | None = None) -> list[AlertEvent]:
        events: list[AlertEvent] = []
        present = {s.index: s for s in snapshot.samples}
        ts = (
            timestamp_s
            if timestamp_s is not None
            else max((s.timestamp_s for s in snapshot.samples), default=0.0)
        )
        # A GPU seen before and now missing from the snapshot is as lost as one reported lost.
        indices = sorted(self._seen | set(present))
        self._seen |= set(present)
        for index in indices:
            sample = present.get(index)
            for rule in self.rules:
                if sample is None:
                    value: float | None = 1.0 if rule.id == "gpu_lost" else None
                elif sample.lost and rule.id != "gpu_lost":
                    value = None
                else:
                    value = rule.value(sample)
                ev = self._step(rule, index, value, ts)
                if ev is not None:
                    events.append(ev)
        return events

    def _step(self, rule: AlertRule, index: int, value: float | None, ts: float) -> AlertEvent | None:
        st = self._states.setdefault((rule.id, index), _State())
        if value is None:
            return None
        if value >= rule.fire_at:
            st.breaches += 1
            st.recoveries = 0
        elif value < rule.clear_below:
            st.recoveries += 1
            st.breaches = 0
        else:  # between the clear and fire lines: hold the current state
            st.breaches = st.recoveries = 0
        # A lost GPU or an Xid needs no confirmation: waiting N samples would only delay the news.
        needed = (
            1 if rule.id in ("gpu_lost", "xid", "ecc_uncorrectable", "remapped_rows") else self.for_samples
        )
        if not st.firing and st.breaches >= needed:
            st.firing = True
            return AlertEvent(rule.id, index, "firing", value, _message(rule, index, value, True), ts)
        if st.firing and st.recoveries >= self.clear_samples:
            st.firing = False
            return AlertEvent(rule.id, index, "resolved", value, _message(rule, index, value, False), ts)
        return None


def _message(rule: AlertRule, index: int, value: float, firing: bool) -> str:
    shown = f" ({value:.0f}{rule.unit})" if rule.unit else ""
    return f"GPU {index}: {rule.title}{shown}" + ("" if firing else " — resolved")


class AlertDelivery:
    """Sends events to the log, a webhook and/or a command. Failures are logged, never raised."""

    def __init__(self, cfg: AlertsConfig, *, logger: logging.Logger | None = None) -> None:
        self.cfg = cfg
        self.log = logger or log

    def deliver(self, event: AlertEvent) -> None:
        level = logging.WARNING if event.state == "firing" else logging.INFO
        self.log.log(level, "alert %s %s on GPU %d: %s", event.rule, event.state, event.gpu, event.message)
        body = json.dumps({"source": "gpuwise", **event.to_json()}).encode()
        if self.cfg.webhook_url:
            self._post(body)
        if self.cfg.command:
            self._run(body)

    def _post(self, body: bytes) -> None:
        url = self.cfg.webhook_url or ""
        problem = post_json(url, body, headers=self.cfg.webhook_headers, timeout_s=self.cfg.webhook_timeout_s)
        if problem is not None:  # the path may hold a secret: log only the host
            self.log.error("alert webhook to %s %s", urllib.parse.urlsplit(url).hostname or "?", problem)

    def _run(self, body: bytes) -> None:
        cmd = self.cfg.command
        try:
            argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd or [])
        except ValueError as exc:  # alerts_config refuses these; a hand-built config still must not crash
            self.log.error("alert command cannot be split into words: %s", exc)
            return
        if not argv:
            return
        try:
            done = subprocess.run(
                argv, input=body, timeout=self.cfg.command_timeout_s, capture_output=True, check=False
            )
        except subprocess.TimeoutExpired:
            self.log.error("alert command %s timed out after %.0f s", argv[0], self.cfg.command_timeout_s)
        except OSError as exc:
            self.log.error("alert command %s could not start: %s", argv[0], exc.strerror)
        else:
            if done.returncode != 0:
                self.log.error("alert command %s exited with %d", argv[0], done.returncode)
