"""Read gettext `.po` sources and write the `.mo` file gettext loads (standard formats, stdlib only).

A `.po` file here is a list of entries (`msgid`/`msgstr`, or `msgid`/`msgid_plural`/`msgstr[n]`), separated
by blank lines, with `#` comments; `#, fuzzy` entries are drafts and are not compiled. Contexts (`msgctxt`)
are not used by gpuwise and are refused rather than silently merged.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MO_MAGIC = 0x950412DE
HEADER = (
    "Project-Id-Version: gpuwise\n"
    "Language: zh_CN\n"
    "MIME-Version: 1.0\n"
    "Content-Type: text/plain; charset=UTF-8\n"
    "Content-Transfer-Encoding: 8bit\n"
    "Plural-Forms: nplurals=1; plural=0;\n"
)
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r"}
_FIELD = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)(?:[!:][^{}]*)?\}(?!\})")


@dataclass(frozen=True)
class Entry:
    """One translated message: `msgstr` holds one string, or one per plural form."""

    msgid: str
    msgstr: tuple[str, ...]
    plural: str | None = None
    fuzzy: bool = False
    where: str = ""  # file:line of the entry, for messages


class PoError(ValueError):
    """A `.po` file that is not one gpuwise can compile."""


def _unquote(text: str, where: str) -> str:
    text = text.strip()
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        raise PoError(f"{where}: expected a quoted string, found {text!r}")
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise PoError(f"{where}: unknown escape \\{nxt}")
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def parse_po(text: str, name: str = "<po>") -> list[Entry]:
    """The entries of one `.po` file's text, the header (empty msgid) left out."""
    entries: list[Entry] = []
    fields: dict[str, str] = {}
    current: str | None = None
    fuzzy = False
    start = 0

    def flush() -> None:
        nonlocal fields, current, fuzzy
        if fields:
            entries.append(_entry(fields, fuzzy, f"{name}:{start}"))
        fields, current, fuzzy = {}, None, False

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{name}:{number}"
        if not line:
            flush()
        elif line.startswith("#"):
            if fields and current is not None:  # a comment after an entry's fields starts the next entry
                flush()
            if line.startswith("#,") and "fuzzy" in (flag.strip() for flag in line[2:].split(",")):
                fuzzy = True
        elif line.startswith('"'):
            if current is None:
                raise PoError(f"{where}: a continuation line outside an entry")
            fields[current] += _unquote(line, where)
        else:
            keyword, _, rest = line.partition(" ")
            if keyword == "msgctxt":
                raise PoError(f"{where}: msgctxt is not used by gpuwise's catalog")
            known = keyword in {"msgid", "msgid_plural", "msgstr"} or re.fullmatch(r"msgstr\[\d\]", keyword)
            if not known:
                raise PoError(f"{where}: unknown keyword {keyword!r}")
            if keyword == "msgid":
                if fields:  # a new entry without a blank line; an empty flush would drop its "#, fuzzy"
                    flush()
                start = number
            if keyword in fields:
                raise PoError(f"{where}: {keyword} twice in one entry")
            current = keyword
            fields[keyword] = _unquote(rest, where)
    flush()
    return [e for e in entries if e.msgid]


def _entry(fields: dict[str, str], fuzzy: bool, where: str) -> Entry:
    if "msgid" not in fields:
        raise PoError(f"{where}: an entry without msgid")
    plural = fields.get("msgid_plural")
    if plural is None:
        if "msgstr" not in fields:
            raise PoError(f"{where}: msgid without msgstr")
        return Entry(fields["msgid"], (fields["msgstr"],), None, fuzzy, where)
    forms = tuple(fields[k] for k in sorted(k for k in fields if k.startswith("msgstr[")))
    if not forms:
        raise PoError(f"{where}: msgid_plural without msgstr[0]")
    return Entry(fields["msgid"], forms, plural, fuzzy, where)


def read_po_files(paths: Iterable[Path]) -> list[Entry]:
    """Every entry of these files; the same msgid translated two different ways is an error."""
    seen: dict[str, Entry] = {}
    out: list[Entry] = []
    for path in sorted(paths):
        for entry in parse_po(path.read_text(encoding="utf-8"), str(path)):
            before = seen.get(entry.msgid)
            if before is not None:
                if before.msgstr != entry.msgstr:
                    where = before.where
                    raise PoError(f"{entry.where}: {entry.msgid!r} is translated differently at {where}")
                continue
            seen[entry.msgid] = entry
            out.append(entry)
    return out


def fields_of(text: str) -> set[str]:
    """The named `{fields}` of a message (what `.format(**…)` fills in)."""
    return set(_FIELD.findall(text))


def compile_mo(entries: Iterable[Entry]) -> bytes:
    """The `.mo` bytes for these entries (fuzzy and untranslated ones left out), with a UTF-8 header."""
    pairs: dict[bytes, bytes] = {b"": HEADER.encode("utf-8")}
    for e in entries:
        if e.fuzzy or not any(e.msgstr):
            continue
        text = e.msgid if e.plural is None else e.msgid + "\0" + e.plural
        pairs[text.encode("utf-8")] = "\0".join(e.msgstr).encode("utf-8")
    keys = sorted(pairs)
    n = len(keys)
    originals_at = 7 * 4
    translations_at = originals_at + n * 8
    data_at = translations_at + n * 8
    blob = bytearray()
    orig_table: list[int] = []
    trans_table: list[int] = []
    for key in keys:
        orig_table += [len(key), data_at + len(blob)]
        blob += key + b"\0"
    for key in keys:
        value = pairs[key]
        trans_table += [len(value), data_at + len(blob)]
        blob += value + b"\0"
    header = struct.pack("<7I", MO_MAGIC, 0, n, originals_at, translations_at, 0, 0)
    tables = struct.pack(f"<{2 * n}I", *orig_table) + struct.pack(f"<{2 * n}I", *trans_table)
    return header + tables + bytes(blob)
