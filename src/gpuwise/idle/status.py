"""`gpuwise idle status` as data: what the daemon last decided, whether it still runs, what its stops saved.

The daemon writes its state file after every observation (gpuwise.idle.state); this module reads it back
without talking to the daemon. `idle_status` is the pure core (state dict, settings and clock in, an
`IdleStatus` out); `read_idle_status` is the edge that reads the file. The CLI only renders the result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise.idle.lock import LOCK_NAME
from gpuwise.idle.lock import lock_held as daemon_lock_held
from gpuwise.idle.message import Msg
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.state import Savings, compute_savings, load_state

# The daemon counts as running while its last update is younger than 3 intervals, and never less than
# 2 min: one slow observation (a hook, a retried probe) must not read as a dead daemon.
_ALIVE_INTERVALS = 3
_ALIVE_MIN_S = 120.0


@dataclass(frozen=True)
class IdleStatus:
    """The daemon's state as `gpuwise idle status` shows it. Fields are None where the state file does not
    say (no file, or a damaged part that was dropped when it was read)."""

    state_file: Path
    found: bool  # a readable state file exists
    unreadable: bool  # a state file exists but could not be read (damaged, another version, not a file)
    daemon_running: bool  # updated within the last few intervals
    updated_at: float | None  # epoch seconds of the daemon's last write
    age_s: float | None  # seconds since that write
    dry_run: bool | None
    state: str | None  # the last decision's state (busy, idle_candidate, warning, stopping)
    reason: str | None  # English as a str (the JSON); a `Msg` when the daemon saved it, for `text()`
    idle_min: float | None
    stop_due_unix: float | None
    stops: tuple[dict[str, Any], ...]  # the last 10 stop records, oldest first, as the daemon wrote them
    savings: Savings

    def to_json(self) -> dict[str, Any]:
        """The `gpuwise idle status --json` object."""
        s = self.savings
        return {
            "state_file": str(self.state_file),
            "found": self.found,
            "unreadable": self.unreadable,
            "daemon_running": self.daemon_running,
            "updated_at": self.updated_at,
            "dry_run": self.dry_run,
            "state": self.state,
            "reason": None if self.reason is None else str(self.reason),
            "idle_min": self.idle_min,
            "stop_due_unix": self.stop_due_unix,
            "stops": list(self.stops),
            "savings": {
                "stops": s.stops,
                "counted_stops": s.counted_stops,
                "hours_off": round(s.hours_off, 2),
                "saved_usd": s.saved_usd,
                "price_usd_per_hour": s.price_usd_per_hour,
                "pending_since_unix": s.pending_since_s,
                "assumptions": list(s.assumptions),
            },
        }


def idle_status(
    data: dict[str, Any] | None,
    state_file: Path,
    settings: IdleSettings,
    now: float,
    lock_held: bool | None = None,
    *,
    unreadable: bool = False,
) -> IdleStatus:
    """The status from a cleaned state dict (`load_state`; None when there is none). The price is the
    config's `[machine] price_usd_per_hour`, else the one the daemon recorded, else unknown. Whether the
    daemon runs is `lock_held` (its lock, see idle/lock.py) when known, else a recent update of the file:
    a daemon stopped a minute ago read as running, and a user who trusted that left a machine billing."""
    state = data or {}
    price = settings.price_usd_per_hour
    if price is None and isinstance(state.get("price_usd_per_hour"), int | float):
        price = float(state["price_usd_per_hour"])
    decision = state.get("decision") or {}
    updated = state.get("updated_at")
    interval = float(state.get("interval_s") or settings.interval_s)
    running = updated is not None and now - float(updated) <= max(_ALIVE_INTERVALS * interval, _ALIVE_MIN_S)
    if lock_held is not None:
        running = lock_held
    return IdleStatus(
        state_file=state_file,
        found=data is not None,
        unreadable=data is None and unreadable,
        daemon_running=running,
        updated_at=updated,
        age_s=None if updated is None else now - float(updated),
        dry_run=state.get("dry_run"),
        state=decision.get("state"),
        reason=Msg.from_json(decision.get("reason_msg")) or decision.get("reason"),
        idle_min=None if "idle_s" not in decision else round(float(decision["idle_s"]) / 60, 1),
        stop_due_unix=decision.get("stop_due_s"),
        stops=tuple(state.get("stops", [])[-10:]),
        savings=compute_savings(data, price),
    )


def read_idle_status(state_file: Path, settings: IdleSettings, now: float) -> IdleStatus:
    """The status from the daemon's state file (a missing or damaged file reads as no state, the damaged
    one marked `unreadable`) and its lock beside it."""
    held = daemon_lock_held(state_file.with_name(LOCK_NAME))
    data = load_state(state_file)
    there = data is None and os.path.lexists(state_file)
    return idle_status(data, state_file, settings, now, held, unreadable=there)
