"""Which distribution a machine runs, from /etc/os-release (freedesktop.org's os-release format).

`parse_os_release` is pure; `read_os_release` is the one edge that reads the file.
"""

from __future__ import annotations

import shlex
from pathlib import Path

OS_RELEASE = Path("/etc/os-release")


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines, values unquoted as a shell would; comments and malformed lines are skipped."""
    fields: dict[str, str] = {}
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        try:
            words = shlex.split(raw)
        except ValueError:
            continue
        fields[key.strip()] = words[0] if words else ""
    return fields


def os_id_from(fields: dict[str, str]) -> str | None:
    """'ubuntu-22.04', 'debian-12', 'rocky-9', 'amzn-2023': ID plus VERSION_ID, where the point release is
    dropped for the families NVIDIA packages per major version (RHEL 9.4 -> rhel-9, Debian's VERSION_ID is
    already the major). None when either field is missing."""
    os_release_id, version = fields.get("ID", "").lower(), fields.get("VERSION_ID", "")
    if not os_release_id or not version:
        return None
    if os_release_id in {"rhel", "rocky", "almalinux", "centos", "ol"}:
        version = version.split(".", 1)[0]
    return f"{os_release_id}-{version}"


def normalize_os_id(text: str) -> str:
    """An os id as a person types it, read as detection reads the file: `--os rocky-9.4` (ID-VERSION_ID
    as /etc/os-release spells it on Rocky 9.4) is rocky-9, like the detected one. Other text is only
    lower-cased and stripped."""
    os_release_id, _, version = text.strip().lower().rpartition("-")
    return os_id_from({"ID": os_release_id, "VERSION_ID": version}) or text.strip().lower()


def read_os_release(path: Path = OS_RELEASE) -> str | None:
    """This machine's os id, or None when the file is missing or unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return os_id_from(parse_os_release(text))
