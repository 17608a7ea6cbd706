"""The daemon's state file (<data dir>/idle/state.json) and the money-saved arithmetic.

The file is small JSON, written atomically (temp file beside it, then rename over) after every observation,
so a restarted daemon resumes from persisted evidence (never from a longer idle time than it saw) and
`gpuwise idle status` can show the state without talking to the daemon. An unreadable or foreign file
is ignored (the idle clock then starts from scratch, which only delays a stop).

Money saved, defined honestly: for every real (not dry-run) stop call that succeeded, the hours from the
stop until the machine booted again — taken from the system boot time the daemon records when it next
starts, so a stop call that did not really take the machine down counts nothing — times `[machine]
price_usd_per_hour`. A stop the machine has not come back from yet is not counted (nobody knows yet how
long it stays off); storage keeps billing while stopped and is not in the price; and the counterfactual —
that without the stop the machine would have run idle until then — is an assumption, stated in the
output. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise import files
from gpuwise.errors import StorageError

STATE_VERSION = 1


def state_path(data_dir: Path) -> Path:
    return data_dir / "idle" / "state.json"


def load_state(path: Path) -> dict[str, Any] | None:
    """The persisted state, or None when absent, unreadable or of another version."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        return None
    return data


def write_atomic(path: Path, text: str) -> None:
    """The daemon's state and the systemd unit, written whole and owner-only."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(path, text, private=True)
    except OSError as exc:
        raise StorageError(
            f"cannot write {path}: {exc.strerror or exc}", fix="check that the directory is writable"
        ) from exc


def save_state(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps({**data, "version": STATE_VERSION}, indent=1, sort_keys=True) + "\n")


@dataclass(frozen=True)
class Savings:
    stops: int  # real, successful stops
    counted_stops: int  # those the machine came back from (their off time is known)
    hours_off: float
    saved_usd: float | None  # None when no price is configured
    price_usd_per_hour: float | None
    pending_since_s: float | None  # a stop not yet followed by a restart
    assumptions: tuple[str, ...]


def compute_savings(data: dict[str, Any] | None, price_usd_per_hour: float | None) -> Savings:
    stops = [s for s in (data or {}).get("stops", []) if s.get("ok") and not s.get("dry_run")]
    boots: list[float] = []
    for b in (data or {}).get("boots", []):
        if isinstance(b, dict) and isinstance(b.get("system_boot"), int | float):
            boots.append(float(b["system_boot"]))
    boots.sort()
    hours = 0.0
    counted = 0
    pending: float | None = None
    for s in stops:
        at = float(s["at"])
        later = [b for b in boots if b > at]
        if later:
            hours += (later[0] - at) / 3600.0
            counted += 1
        else:
            pending = at
    assumptions = (
        "hours off = from each gpuwise stop to the machine's next boot (recorded by the daemon's next start)",
        "assumes the machine would otherwise have run idle until then",
        "compute price only: disks and reserved IPs keep billing while stopped",
        "a stop the machine has not come back from is not counted yet",
    )
    saved = None if price_usd_per_hour is None else round(hours * price_usd_per_hour, 2)
    return Savings(len(stops), counted, hours, saved, price_usd_per_hour, pending, assumptions)
