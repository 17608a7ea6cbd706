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
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise import files
from gpuwise.errors import ConfigError, StorageError
from gpuwise.locale import _
from gpuwise.safe_read import parse_json

STATE_VERSION = 1


def state_path(data_dir: Path) -> Path:
    return data_dir / "idle" / "state.json"


# The daemon keeps the last 200 stops and boots: ~100 KB. A file far larger is not one it wrote.
MAX_STATE_BYTES = 4 * 1024 * 1024


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes, or None when it is missing, not a regular file (a FIFO would block, a link to
    /dev/zero never end) or larger than MAX_STATE_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)  # of what was opened, not of a name that may change under us
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_STATE_BYTES:
            return None
        data = os.read(fd, MAX_STATE_BYTES + 1)  # one read of a small regular file returns it whole
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= MAX_STATE_BYTES else None


def load_state(path: Path) -> dict[str, Any] | None:
    """The persisted state, cleaned (see `clean_state`), or None when absent, unreadable, damaged (not
    JSON, nested too deep, huge, not a regular file) or of another version. None only delays a stop: the
    idle clock starts over."""
    raw = _read_bounded(path)
    if raw is None:
        return None
    try:
        # bounded nesting: a `decision` 500 levels deep parsed fine but broke every later printer of it
        data = parse_json(raw.decode("utf-8"), f"idle state {path}", fix="it is rebuilt by itself")
    except (ValueError, ConfigError):
        return None
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        return None
    return clean_state(data)


def finite_or_none(value: object, key: str) -> float | None:
    """A persisted time or amount (`key` names it): None, or a finite number. ValueError otherwise (the
    caller then starts its clock over)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} is not a finite number")
    return float(value)


def whole(value: object, what: str = "an integer") -> int:
    """A persisted whole number (an int, or its digits as JSON object keys are); ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not {what}")
    return int(value)  # ValueError for a string that is not one


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        out = float(value)
    except OverflowError:  # an integer beyond a float's range is damage, not a time
        return None
    return out if math.isfinite(out) else None


_LAST_TIME = 4_102_444_800.0  # 2100-01-01: a later "time" is damage (and breaks time.localtime)


def _moment(value: object) -> float | None:
    """A finite epoch time from 1970 to 2100, else None."""
    out = _number(value)
    return out if out is not None and 0 <= out < _LAST_TIME else None


def clean_state(data: dict[str, Any]) -> dict[str, Any]:
    """The state with every part of the wrong type dropped, so readers can trust the types: `stops` and
    `boots` are lists of dicts with finite numbers, `decision` and `policy` are dicts, and the numbers
    at the top level are finite or absent. The policy evidence itself is checked by
    `PolicyState.from_json`, which refuses an inconsistent one (the idle clock then starts over), and the
    hang detector's (`hang`, written only with `watch_paths`) by `HangDetector.restore`. `hang` was added
    without a new version: a file without it loads (the hang clock starts over) and an older gpuwise drops
    it here."""
    out: dict[str, Any] = {"version": STATE_VERSION}
    stops = data.get("stops")
    out["stops"] = [
        {**s, "at": _moment(s.get("at")), "ok": s.get("ok") is True, "dry_run": s.get("dry_run") is not False}
        for s in (stops if isinstance(stops, list) else [])[-200:]
        if isinstance(s, dict) and _moment(s.get("at")) is not None
    ]
    boots = data.get("boots")
    out["boots"] = [
        {"daemon_start": _moment(b.get("daemon_start")), "system_boot": _moment(b.get("system_boot"))}
        for b in (boots if isinstance(boots, list) else [])[-200:]
        if isinstance(b, dict)
    ]
    if (updated := _moment(data.get("updated_at"))) is not None:
        out["updated_at"] = updated
    for key in ("interval_s", "price_usd_per_hour"):
        value = _number(data.get(key))
        if value is not None and value > 0:
            out[key] = value
    if isinstance(data.get("dry_run"), bool):
        out["dry_run"] = data["dry_run"]
    decision = data.get("decision")
    if isinstance(decision, dict):
        clean: dict[str, Any] = {}
        for key in ("state", "reason"):
            if isinstance(decision.get(key), str):
                clean[key] = decision[key]
        if isinstance(decision.get("reason_msg"), dict):  # checked by Msg.from_json where it is shown
            clean["reason_msg"] = decision["reason_msg"]
        for key in ("timestamp_s", "stop_due_s"):
            if (value := _moment(decision.get(key))) is not None:
                clean[key] = value
        for key in ("idle_s", "window_s"):
            if (value := _number(decision.get(key))) is not None and value >= 0:
                clean[key] = value
        out["decision"] = clean
    for key in ("policy", "hang"):  # checked by PolicyState.from_json and HangDetector.restore
        if isinstance(data.get(key), dict):
            out[key] = data[key]
    return out


def write_atomic(path: Path, text: str) -> None:
    """The daemon's state and the systemd unit, written whole and owner-only."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(path, text, private=True)
    except OSError as exc:
        raise StorageError(
            _("cannot write {path}: {reason}").format(path=path, reason=exc.strerror or exc),
            fix=_("check that the directory is writable"),
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
