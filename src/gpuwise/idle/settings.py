"""The `[idle]` section of config.toml (and `[machine] price_usd_per_hour`), validated.

Every key has a safe default; unknown keys are an error with a close match. CLI flags override these
values (the CLI passes them to `with_cli`). Pure: takes the parsed TOML sections, returns settings.
Imports pydantic inside `load_settings` so `gpuwise --help` stays cheap.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from gpuwise.config import validate_section
from gpuwise.errors import ConfigError, close_matches
from gpuwise.idle.hang import HangConfig
from gpuwise.idle.policy import PolicyConfig
from gpuwise.locale import _

# The stop actions: auto, every provider's own stop call (gpuwise.idle.providers.plan.STEPS, plus the
# catalog's id "aliyun" for alibaba), shutdown and command.
PROVIDER_ACTIONS = (
    "runpod", "vast", "lambda", "paperspace", "jarvislabs", "nebius", "hyperstack", "tencent", "huawei",
    "aws", "gcp", "azure", "alibaba", "aliyun",
)  # fmt: skip
ACTIONS = ("auto", *PROVIDER_ACTIONS, "shutdown", "command")
FALLBACKS = (*PROVIDER_ACTIONS, "shutdown", "command")
SIGNALS = ("gpu_processes", "ssh", "jupyter", "gpuwise_run", "keepalive", "host")
DEFAULT_SIGNALS = ("gpu_processes", "ssh", "gpuwise_run", "keepalive", "host")


@dataclass(frozen=True)
class IdleSettings:
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    interval_s: float = 30.0
    action: str = "auto"
    command: str | None = None
    pre_stop_hook: str | None = None
    hook_timeout_s: float = 300.0
    hook_blocks: bool = False
    webhook: str | None = None
    signals: tuple[str, ...] = DEFAULT_SIGNALS
    jupyter_url: str | None = None
    jupyter_token_file: str | None = None
    keepalive_file: str | None = None  # default: <data dir>/idle/keepalive
    process_cpu_pct: float = 10.0  # CPU of a GPU process and its children, % of one core, that counts as busy
    process_io_kib_per_s: float = 64.0  # read+write chars/s (files, pipes, sockets) that counts as busy
    host_cpu_pct: float = 50.0  # CPU of all processes here, % of one core, that is busy (idle/hostload)
    host_net_kib_per_s: float = 1024.0  # network in + out (not loopback) that counts as busy
    price_usd_per_hour: float | None = None
    # -- how the stop is made (providers, fallbacks); keys added by issue 17 items 1-2
    instance_id: str | None = None  # this machine's id at its provider, where it cannot be detected
    allow_terminate: bool = False  # Lambda has no stop: terminate only when this is true
    fallback: tuple[str, ...] | None = None  # tried in order after the action fails (None: auto -> shutdown)
    stop_attempts: int = 1  # tries of each step before the next (each HTTP call also retries 429/5xx)
    stop_backoff_s: float = 30.0  # wait after a failed try, doubled each time
    api_url: str | None = None  # the provider API's base URL (a proxy); default: the documented one
    # -- the user's activity checks and hang detection (idle/activity.py, idle/hang.py)
    activity_command: str | None = None  # exit 0 = busy; run without a shell, split like a shell would
    activity_url: str | None = None  # HTTP 200 = busy
    activity_timeout_s: float = 10.0
    watch_paths: tuple[str, ...] = ()  # files/directories/globs whose changes show a job's progress
    hang: HangConfig = field(default_factory=HangConfig)

    def keepalive_path(self, data_dir: Path) -> Path:
        """The keep-alive file: `keepalive_file` when set, else <data dir>/idle/keepalive."""
        if self.keepalive_file:
            return Path(self.keepalive_file).expanduser()
        return data_dir / "idle" / "keepalive"

    def with_cli(self, **overrides: Any) -> IdleSettings:
        """Apply CLI options that were given (None means "not given")."""
        policy_keys = {f.name for f in fields(PolicyConfig)}
        pol = {k: v for k, v in overrides.items() if k in policy_keys and v is not None}
        rest = {k: v for k, v in overrides.items() if k not in policy_keys and v is not None}
        out = replace(self, policy=replace(self.policy, **{k: float(v) for k, v in pol.items()}), **rest)
        return out.validate()

    def validate(self) -> IdleSettings:
        self.policy.validate()
        if self.action not in ACTIONS:
            hint = close_matches(self.action, ACTIONS)
            raise ConfigError(
                _unknown(_("unknown idle action {name}"), self.action, hint),
                fix=_("use one of {choices}").format(choices=", ".join(ACTIONS)),
            )
        if self.action == "command" and not self.command:
            raise ConfigError(
                _("idle action 'command' needs a command"), fix=_("pass --command 'CMD' or set command")
            )
        # finite: `interval_s = inf` slept for ever, and a NaN threshold compares false, so
        # `process_cpu_pct = nan` made every busy GPU process look quiet
        if not (math.isfinite(self.interval_s) and self.interval_s > 0):
            raise _invalid("interval_s", self.interval_s, _("use a positive number"))
        for name in ("process_cpu_pct", "process_io_kib_per_s", "host_cpu_pct", "host_net_kib_per_s"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value >= 0):
                raise _invalid(name, value, _("use zero or a positive number"))
        price = self.price_usd_per_hour
        if price is not None and not (math.isfinite(price) and price >= 0):
            raise _invalid(
                "price_usd_per_hour",
                price,
                _("set [machine] price_usd_per_hour in config.toml to a number of USD per hour"),
            )
        if self.policy.max_gap_s is not None and self.interval_s * 2 > self.policy.max_gap_s:
            raise ConfigError(
                _("interval_s = {interval:g} is too long for max_gap_s = {gap:g}").format(
                    interval=self.interval_s, gap=self.policy.max_gap_s
                ),
                why=_("every interval would count as a gap in the data, and a gap counts as busy"),
                fix=_("sample at least twice per max_gap_s (lower --interval-s or raise max_gap_s)"),
            )
        if not (math.isfinite(self.hook_timeout_s) and self.hook_timeout_s > 0):
            raise _invalid("hook_timeout_s", self.hook_timeout_s, _("use seconds > 0"))
        for name in self.signals:
            if name not in SIGNALS:
                hint = close_matches(name, SIGNALS)
                raise ConfigError(
                    _unknown(_("unknown idle signal {name}"), name, hint),
                    fix=_("use some of {choices}").format(choices=", ".join(SIGNALS)),
                )
        if "jupyter" in self.signals and not self.jupyter_url:
            raise ConfigError(
                _("the jupyter signal needs jupyter_url"),
                fix=_("set jupyter_url in the idle section of config.toml"),
            )
        self._validate_stop()
        if self.webhook and not self.webhook.startswith(("http://", "https://")):
            raise ConfigError(
                _("webhook must be an http:// or https:// URL"),
                fix=_("correct webhook in the idle section of config.toml"),
            )
        self._validate_checks()
        return self

    def _validate_checks(self) -> None:
        """The activity-check and hang-detection keys."""
        self.hang.validate()
        if self.activity_command is not None:
            try:
                argv = shlex.split(self.activity_command)
            except ValueError as exc:
                raise ConfigError(
                    _("activity_command cannot be split into words: {reason}").format(reason=exc),
                    fix=_("close the quotes in activity_command in the idle section of config.toml"),
                ) from exc
            if not argv:
                raise ConfigError(
                    _("activity_command is empty"),
                    fix=_("set activity_command to a command that exits 0 while the machine is in use"),
                )
        if self.activity_url is not None and not self.activity_url.startswith(("http://", "https://")):
            raise ConfigError(
                _("activity_url must be an http:// or https:// URL"),
                fix=_("correct activity_url in the idle section of config.toml"),
            )
        if not (math.isfinite(self.activity_timeout_s) and self.activity_timeout_s > 0):
            raise _invalid("activity_timeout_s", self.activity_timeout_s, _("use seconds > 0"))
        if self.hang.stop and not self.watch_paths:
            raise ConfigError(
                _("stop_on_hang = true needs watch_paths"),
                why=_(
                    "a job is called hung only when none of its files changed, so without watched files "
                    "no hang is ever found and nothing would be stopped"
                ),
                fix=_(
                    "set watch_paths in the idle section of config.toml to the job's log or checkpoint "
                    "directory"
                ),
            )

    def _validate_stop(self) -> None:
        for name in self.fallback or ():
            if name not in FALLBACKS:
                hint = close_matches(name, FALLBACKS)
                raise ConfigError(
                    _unknown(_("unknown idle fallback {name}"), name, hint),
                    fix=_("use some of {choices}").format(choices=", ".join(FALLBACKS)),
                )
        if "command" in (self.fallback or ()) and not self.command:
            raise ConfigError(_("idle fallback 'command' needs a command"), fix=_("set command in [idle]"))
        if isinstance(self.stop_attempts, bool) or not 1 <= self.stop_attempts <= 10:
            raise _invalid("stop_attempts", self.stop_attempts, _("use 1 to 10"))
        if not (math.isfinite(self.stop_backoff_s) and 0 <= self.stop_backoff_s <= 3600):
            raise _invalid("stop_backoff_s", self.stop_backoff_s, _("use 0 to 3600 s"))
        if self.api_url and not self.api_url.startswith(("http://", "https://")):
            raise ConfigError(
                _("api_url must be an http:// or https:// URL"), fix=_("correct api_url in [idle]")
            )
        if self.action == "lambda" and not self.allow_terminate:
            raise ConfigError(
                _("idle action 'lambda' terminates the instance (Lambda has no stop)"),
                why=_("its local disk is deleted; only a persistent filesystem survives"),
                fix=_("set allow_terminate = true in [idle] if that is what you want"),
            )


def _invalid(name: str, value: object, fix: str) -> ConfigError:
    return ConfigError(_("{name} = {value} is not valid").format(name=name, value=value), fix=fix)


def _unknown(message: str, name: str, hint: list[str]) -> str:
    """`message` (with a {name} field) and, when there is a close match, the suggestion."""
    text = message.format(name=repr(name))
    return text + (_(". Did you mean {hint}?").format(hint=repr(hint[0])) if hint else "")


def load_settings(sections: dict[str, dict[str, Any]]) -> IdleSettings:
    """`[idle]` and `[machine]` sections → IdleSettings (ConfigError for a bad key or value)."""
    from pydantic import BaseModel, ConfigDict

    class _Idle(BaseModel):
        model_config = ConfigDict(extra="forbid")
        threshold_pct: float | None = None
        window_min: float | None = None
        held_window_min: float | None = None
        warn_min: float | None = None
        mem_change_mib: float | None = None
        baseline_mem_mib: float | None = None
        noise_floor_pct: float | None = None
        held_threshold_pct: float | None = None
        max_gap_s: float | None = None
        interval_s: float | None = None
        action: str | None = None
        command: str | None = None
        pre_stop_hook: str | None = None
        hook_timeout_s: float | None = None
        hook_blocks: bool | None = None
        webhook: str | None = None
        signals: list[str] | None = None
        jupyter_url: str | None = None
        jupyter_token_file: str | None = None
        keepalive_file: str | None = None
        process_cpu_pct: float | None = None
        process_io_kib_per_s: float | None = None
        host_cpu_pct: float | None = None
        host_net_kib_per_s: float | None = None
        activity_command: str | None = None
        activity_url: str | None = None
        activity_timeout_s: float | None = None
        watch_paths: list[str] | None = None
        hang_window_min: float | None = None
        hang_util_pct: float | None = None
        hang_flat_pct: float | None = None
        stop_on_hang: bool | None = None
        # issue 17 items 1-2: how the stop is made
        instance_id: str | None = None
        allow_terminate: bool | None = None
        fallback: list[str] | None = None
        stop_attempts: int | None = None
        stop_backoff_s: float | None = None
        api_url: str | None = None

    parsed = validate_section(sections.get("idle", {}), "idle", _Idle)
    values = parsed.model_dump(exclude_none=True)
    for key in ("signals", "fallback"):
        if key in values:
            values[key] = tuple(values[key])
    if "watch_paths" in values:
        values["watch_paths"] = tuple(values["watch_paths"])
    hang = {
        k: values.pop(f"hang_{k}") for k in ("window_min", "util_pct", "flat_pct") if f"hang_{k}" in values
    }
    if "stop_on_hang" in values:
        hang["stop"] = values.pop("stop_on_hang")
    if hang:
        values["hang"] = replace(HangConfig(), **hang)
    price = sections.get("machine", {}).get("price_usd_per_hour")
    if price is not None:
        if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
            raise ConfigError(
                f"config.toml, section machine: price_usd_per_hour = {price!r} is not valid",
                fix="use a number of USD per hour",
            )
        values["price_usd_per_hour"] = float(price)
    return IdleSettings().with_cli(**values)
