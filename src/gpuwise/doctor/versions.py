"""Version strings as tuples of integers, compared field by field (never as strings or floats).

"12.4" < "12.10", "535.183.01" > "535.54.03", and a branch-level figure such as "615" (NVIDIA gives only the
driver branch for some toolkits) is met by every 615.x driver. Pure; standard library only.
"""

from __future__ import annotations

import re

Version = tuple[int, ...]

_LEADING = re.compile(r"\d+(?:\.\d+)*")


def parse_version(text: str) -> Version | None:
    """The leading dotted numbers of ``text`` as a tuple: '12.4.1' -> (12, 4, 1), '2.5.1+cu124' -> (2, 5, 1),
    'V12.4.131' -> (12, 4, 131). None when there is no number at all."""
    match = _LEADING.search(text.strip())
    if match is None:
        return None
    return tuple(int(part) for part in match.group(0).split("."))


def at_least(have: Version, need: Version) -> bool:
    """Whether version ``have`` meets the minimum ``need``, field by field.

    Missing trailing fields of ``have`` count as 0 (12.4 == 12.4.0). A minimum given at branch level
    (fewer fields, e.g. (615,)) is compared on its own fields only: 615.10.2 meets 615, 610.43.2 does not.
    """
    width = len(need)
    padded = have[:width] + (0,) * max(0, width - len(have))
    return padded >= need


def major_minor(version: Version) -> Version:
    return (*version, 0, 0)[:2]


def format_version(version: Version) -> str:
    return ".".join(str(part) for part in version)
