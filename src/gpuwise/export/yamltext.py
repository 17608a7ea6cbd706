"""A small YAML writer for the manifests export writes (block style, every string quoted).

Strings are written as JSON strings, which YAML 1.2 reads as double-quoted scalars, so no value can turn
into a number, a boolean or a date on the way in ("no", "1e3", "08:00" stay strings). Text of several lines
(scripts) is written as a literal block, which keeps it readable. Pure; standard library only (PyYAML is not a
dependency of gpuwise).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

Node = Mapping[str, "Node"] | Sequence["Node"] | str | int | float | bool | None

_INDENT = "  "


def dump(doc: Mapping[str, Node], *, header: Sequence[str] = ()) -> str:
    """The document as YAML text, after ``header`` written as comment lines."""
    lines = comment_lines(header)
    lines.extend(_mapping(doc, 0))
    return "\n".join(lines) + "\n"


def comment_lines(header: Sequence[str]) -> list[str]:
    """``header`` as `#` comment lines (YAML, shell and Dockerfiles agree on those): a line break inside an
    entry starts another comment line, never a line of the file itself."""
    return [f"# {line}".rstrip() for entry in header for line in entry.splitlines() or [""]]


def _scalar(value: str | int | float | bool | None) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    # plain keys read back as themselves only when they are simple words; quote anything else
    simple = key.replace("-", "").replace("_", "").replace(".", "").replace("/", "").isalnum()
    return key if simple and not key[:1].isdigit() else json.dumps(key)


def _block(text: str, depth: int) -> list[str]:
    pad = _INDENT * depth
    chomp = "" if text.endswith("\n") else "-"
    return [f"|{chomp}", *[f"{pad}{line}" if line else "" for line in text.rstrip("\n").split("\n")]]


def _value_lines(value: Node, depth: int) -> tuple[str, list[str]]:
    """(what follows the key or dash on its line, the lines under it)."""
    if isinstance(value, Mapping):
        return ("{}", []) if not value else ("", _mapping(value, depth))
    if isinstance(value, str) and "\n" in value and value.replace("\n", "").isprintable():
        first, *rest = _block(value, depth)
        return " " + first, rest
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ("[]", []) if not value else ("", _sequence(value, depth))
    return " " + _scalar(value), []


def _mapping(doc: Mapping[str, Node], depth: int) -> list[str]:
    pad = _INDENT * depth
    out: list[str] = []
    for key, value in doc.items():
        inline, below = _value_lines(value, depth + 1)
        sep = ":" if inline.startswith(" ") or not inline else ": "
        out.append(f"{pad}{_key(key)}{sep}{inline}")
        out.extend(below)
    return out


def _sequence(items: Sequence[Node], depth: int) -> list[str]:
    pad = _INDENT * depth
    out: list[str] = []
    for item in items:
        if isinstance(item, Mapping) and item:
            inner = _mapping(item, depth + 1)
            out.append(f"{pad}- {inner[0].lstrip()}")
            out.extend(inner[1:])
            continue
        inline, below = _value_lines(item, depth + 1)
        out.append(f"{pad}-{inline if inline.startswith(' ') else ' ' + inline}")
        out.extend(below)
    return out
