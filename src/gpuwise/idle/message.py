"""A sentence of the idle daemon kept as its English msgid and fields, so it can be shown in either language.

The daemon's reasons ("idle candidate: the GPU idle … for 40 min, …") go to logs, the state file, the monitor
history and webhooks, which other programs read and which stay English whatever the language (README,
"Chinese output"), and to people: `wall` messages, `gpuwise idle status`, `idle replay`. A `Msg` is a `str`
whose value is the English sentence, so every consumer that writes a string (logging, `json.dumps`, the
history) gets English without knowing about it; what a person reads is rendered with `text()` in the current
language. `to_json`/`from_json` carry the msgid and fields through the state file, so `idle status --lang zh`
shows a reason in Chinese that a daemon running in English wrote.

A `Msg` built from other `Msg`s (a field, `join`) translates each of them; a sentence glued with `+` or an
f-string is a plain English `str` again and shows untranslated, never wrong. Standard library and the locale
package only.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from typing import Any

from gpuwise.locale import _

Field = str | int | float | bool | None  # a str field may itself be a Msg

_MAX_DEPTH = 8  # a reason nests 3 deep (reason → activity → signal detail); a deeper one is damage
_MAX_TEXT = 2000
# what the daemon's templates use ({util:.0f}, {util:g}, {state:<14}): nothing that could ask for a
# gigabyte of padding from a damaged file
_SPEC = re.compile(r"[<>^]?\d{0,2}(\.\d)?[dfg%]?")


class Msg(str):
    """`Msg(N_("{gpu} at {util:.0f}% util"), gpu="GPU 0", util=97.0)`: English as a str, `text()` for people.

    `translate=False` (through `raw` and `join`) is a template that is not a msgid: shown as it is."""

    msgid: str
    fields: dict[str, Field]
    is_msgid: bool  # False: a template (`raw`, `join`) shown as it is

    def __new__(cls, msgid: str, /, **fields: Field) -> Msg:
        return cls._make(msgid, fields, translate=True)

    @classmethod
    def _make(cls, msgid: str, fields: Mapping[str, Field], *, translate: bool) -> Msg:
        self = super().__new__(cls, _format(msgid, dict(fields), local=False))
        self.msgid, self.fields, self.is_msgid = msgid, dict(fields), translate
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle keep the msgid and fields
        return (_rebuild, (self.msgid, self.fields, self.is_msgid))

    def text(self) -> str:
        """The sentence in the current language (English when there is no translation)."""
        template = _(self.msgid) if self.is_msgid else self.msgid
        try:
            return _format(template, self.fields, local=True)
        except (
            KeyError,
            IndexError,
            ValueError,
            TypeError,
            OverflowError,
        ):  # a translation that does not fit: English
            return str(self)

    def to_json(self) -> dict[str, Any]:
        fields = {k: v.to_json() if isinstance(v, Msg) else v for k, v in self.fields.items()}
        return {"msgid": self.msgid, "fields": fields, **({} if self.is_msgid else {"translate": False})}

    @classmethod
    def from_json(cls, data: object, depth: int = 0) -> Msg | None:
        """The message `to_json` wrote, or None for anything else (a damaged or foreign state file)."""
        if depth > _MAX_DEPTH or not isinstance(data, dict):
            return None
        msgid, fields, translate = data.get("msgid"), data.get("fields", {}), data.get("translate", True)
        if not isinstance(msgid, str) or not isinstance(fields, dict) or not isinstance(translate, bool):
            return None
        if len(msgid) > _MAX_TEXT or not _safe_template(msgid):
            return None
        out: dict[str, Field] = {}
        for key, saved in fields.items():
            value = cls.from_json(saved, depth + 1) if isinstance(saved, dict) else saved
            if isinstance(saved, dict) and value is None:  # a damaged part: not a None field
                return None
            if not isinstance(key, str) or not isinstance(value, str | int | float | bool | None):
                return None
            out[key] = value
        try:
            return cls._make(msgid, out, translate=translate)
        except (KeyError, IndexError, ValueError, TypeError, OverflowError):
            return None


def _rebuild(msgid: str, fields: dict[str, Field], translate: bool) -> Msg:
    return Msg._make(msgid, fields, translate=translate)


def raw(text: str) -> Msg:
    """Text that is not a msgid (a program's output, a name): shown as it is in every language."""
    return text if isinstance(text, Msg) else Msg._make("{text}", {"text": text}, translate=False)


def join(separator: str, parts: Iterable[str]) -> Msg:
    """`separator.join(parts)`, keeping each part's translation."""
    items = list(parts)
    sep = separator.replace("{", "{{").replace("}", "}}")
    template = sep.join(f"{{p{i}}}" for i in range(len(items)))
    return Msg._make(template, {f"p{i}": p for i, p in enumerate(items)}, translate=False)


def text(value: str) -> str:
    """What a person reads: a `Msg` in the current language, any other string as it is."""
    return value.text() if isinstance(value, Msg) else value


def _format(template: str, fields: Mapping[str, Field], *, local: bool) -> str:
    values = {k: v.text() if local and isinstance(v, Msg) else v for k, v in fields.items()}
    return template.format(**values)


def _safe_template(template: str) -> bool:
    """Only named fields without attribute or index access, with the small format specs the daemon uses."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return False
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or conversion or not _SPEC.fullmatch(spec or ""):
            return False
    return True
