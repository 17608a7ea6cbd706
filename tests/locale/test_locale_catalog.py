"""The zh_CN catalog: every `_()` follows the rules, every user-facing string has a translation that keeps
its {fields}, the committed .mo is what the .po sources compile to, and .po -> .mo -> gettext round-trips."""

from __future__ import annotations

import gettext
import io
import re
from pathlib import Path

import pytest
from locale_support import THIRD_PARTY_MSGIDS

from gpuwise.locale import build
from gpuwise.locale.catalog import Entry, PoError, compile_mo, fields_of, parse_po, read_po_files
from gpuwise.locale.extract import extract_package, extract_source

_POSITIONAL = re.compile(r"(?<!\{)\{\}(?!\})")


def _catalog() -> dict[str, Entry]:
    return {e.msgid: e for e in read_po_files(build.PO_DIR.glob("*.po"))}


def _command_docstrings() -> list[str]:
    from gpuwise.cli.localize import command_docstrings
    from gpuwise.cli.main import full_app

    return sorted(set(command_docstrings(full_app())))


def test_every_translatable_call_follows_the_rules() -> None:
    _messages, problems = extract_package()
    assert problems == []


def test_the_rule_check_can_fail() -> None:
    source = 'x = _(f"{a} GiB")\ny = _("a " + b)\nz = _("{a}".format(a=1))\nN_(name)\nok = _(NAME)\n'
    messages, problems = extract_source(source, "m.py")
    assert [p.split(":")[1] for p in problems] == ["1", "2", "3", "4"]
    assert messages == []  # _(NAME) is a look-up of a string marked with N_ elsewhere, not a message


def test_docstring_msgids_are_what_typer_shows() -> None:
    """A command's help msgid is inspect.cleandoc(docstring): the text typer itself would print."""
    import inspect

    from gpuwise.cli.plan import plan

    assert inspect.cleandoc(plan.__doc__ or "") in _command_docstrings()


def test_every_user_facing_string_has_a_translation() -> None:
    """Strings in gpuwise's `_()` calls, every command's docstring and the third-party words: each has a
    non-empty zh_CN translation. The list printed on failure is what is left to translate (file:line)."""
    have = {m for m, e in _catalog().items() if any(e.msgstr) and not e.fuzzy}
    messages, _problems = extract_package()
    missing = [f"{m.where}: {m.msgid!r}" for m in messages if m.msgid not in have]
    missing += [f"command docstring: {d.splitlines()[0]!r}" for d in _command_docstrings() if d not in have]
    missing += [f"third-party: {m!r}" for m in THIRD_PARTY_MSGIDS if m not in have]
    assert not missing, f"{len(missing)} strings without a zh_CN translation:\n" + "\n".join(sorted(missing))


def test_every_translation_keeps_its_fields() -> None:
    bad = []
    for entry in _catalog().values():
        sources = [entry.msgid] if entry.plural is None else [entry.msgid, entry.plural]
        for text in entry.msgstr:
            if not text:
                continue
            if fields_of(text) != fields_of(sources[-1]) or len(_POSITIONAL.findall(text)) != len(
                _POSITIONAL.findall(sources[-1])
            ):
                bad.append(f"{entry.where}: {entry.msgid!r} -> {text!r}")
    assert bad == []


def test_the_field_check_can_fail() -> None:
    assert fields_of("{gpu} 放不下") != fields_of("{gpu} does not fit: needs {need} GiB")


def test_the_committed_mo_is_what_the_sources_compile_to() -> None:
    assert build.MO_PATH.read_bytes() == build.compiled(), "run: python -m gpuwise.locale.build"
    assert build.main(["--check"]) == 0


_PO = r"""# a comment
msgid "{gpu} does not fit"
msgstr "{gpu} 放不下"

msgid "long "
"message"
msgstr "长"
"消息\n"

msgid "{n} GPU"
msgid_plural "{n} GPUs"
msgstr[0] "{n} 块 GPU"

#, fuzzy
msgid "draft"
msgstr "草稿"
"""


def test_po_to_mo_to_gettext_round_trip() -> None:
    entries = parse_po(_PO, "t.po")
    assert [e.msgid for e in entries] == ["{gpu} does not fit", "long message", "{n} GPU", "draft"]
    translations = gettext.GNUTranslations(io.BytesIO(compile_mo(entries)))
    assert translations.gettext("{gpu} does not fit").format(gpu="T4") == "T4 放不下"
    assert translations.gettext("long message") == "长消息\n"
    assert translations.ngettext("{n} GPU", "{n} GPUs", 1) == "{n} 块 GPU"
    assert translations.ngettext("{n} GPU", "{n} GPUs", 8) == "{n} 块 GPU"  # Chinese has one plural form
    assert translations.gettext("draft") == "draft"  # fuzzy: not compiled
    assert translations.gettext("unknown") == "unknown"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('msgid "a"\nmsgstr "b"\n\nmsgid "c\nmsgstr "d"\n', 4),  # an unclosed quote
        ('msgid "a"\nmsgstr "b"\n\nmsgid "c"\nmsgstrr "d"\n', 5),  # a misspelt keyword
        ('msgid "a"\nmsgstr "\\q"\n', 2),  # an unknown escape
    ],
)
def test_a_po_syntax_error_names_its_line(text: str, line: int) -> None:
    with pytest.raises(PoError, match=rf"^bad\.po:{line}: "):
        parse_po(text, "bad.po")


def test_the_same_msgid_translated_two_ways_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.po").write_text('msgid "Cost"\nmsgstr "费用"\n', encoding="utf-8")
    (tmp_path / "b.po").write_text('msgid "Cost"\nmsgstr "成本"\n', encoding="utf-8")
    with pytest.raises(PoError, match="translated differently"):
        read_po_files(tmp_path.glob("*.po"))
