"""The `[monitor]`, `[exporter]` and `[machine]` config sections this room reads (pydantic models).

[monitor]
interval_s = 1.0              # refresh / sampling interval
history = true                # write history while `monitor` runs live (replays never do by default)
history_interval_s = 5.0      # one history row per GPU this often
history_retention_days = 7

[exporter]
bind = "127.0.0.1"
port = 9400
token_file = "/etc/gpuwise/exporter.token"
idle_threshold_pct = 5.0      # gpuwise_idle_seconds counts while every GPU is at or below this
interval_s = 5.0              # background sampling for history and alerts

[machine]
price_usd_per_hour = 2.49     # enables gpuwise_price_usd_per_hour and gpuwise_cost_usd_total
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from gpuwise.config import Config, validate_section

M = TypeVar("M", bound=BaseModel)


class MonitorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    interval_s: float = Field(default=1.0, gt=0, le=3600)
    history: bool = True
    history_interval_s: float = Field(default=5.0, gt=0, le=86400)
    history_retention_days: float = Field(default=7.0, gt=0, le=3650)


class ExporterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    bind: str = "127.0.0.1"
    port: int = Field(default=9400, ge=0, le=65535)
    token_file: Path | None = None
    idle_threshold_pct: float = Field(default=5.0, ge=0, le=100)
    interval_s: float = Field(default=5.0, gt=0, le=3600)


class MachineSettings(BaseModel):
    # Other rooms own more [machine] keys (provider, instance_type, …): allow them here.
    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    price_usd_per_hour: float | None = Field(default=None, ge=0)


def section(config: Config, name: str, model: type[M]) -> M:
    return validate_section(config.section(name), name, model, source=str(config.path or "config"))
