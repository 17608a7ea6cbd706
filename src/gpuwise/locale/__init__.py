"""The language gpuwise speaks: English, or Simplified Chinese through a gettext catalog.

Every user-facing string goes through `_()` (or `ngettext()`, or `N_()` where a string is defined before the
language is known and translated where it is shown). The language is chosen once per process by the CLI
(`--lang zh|en`, else the locale variables LANGUAGE, LC_ALL, LC_MESSAGES, LANG in gettext's order); code
that imports gpuwise as a library speaks English unless it calls `use_language`. JSON keys, ids and
machine-readable values never go through `_()`.

Rules for a translatable string (tests/locale checks them): the argument of `_()` is a plain string literal,
never an f-string; values are filled in afterwards with named fields, `_("{gpu} does not fit").format(gpu=…)`,
so a translation can move them; the translation keeps every `{field}` of its source.

The catalog's sources are the `.po` files in data/po/zh_CN/ (one per area of the code); `python -m
gpuwise.locale.build` compiles them into data/zh_CN/LC_MESSAGES/gpuwise.mo, which is what runs.

Must not import anything outside the standard library.
"""

from __future__ import annotations

import gettext
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

DOMAIN = "gpuwise"
LOCALE_DIR = Path(__file__).parent / "data"  # gettext's localedir: <dir>/zh_CN/LC_MESSAGES/gpuwise.mo
LANGUAGES = ("en", "zh")
_GETTEXT_NAME = {"zh": "zh_CN"}  # our language code -> the catalog's directory
_LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # gettext's own order

_translations: gettext.NullTranslations = gettext.NullTranslations()
_language = "en"
# LANGUAGE as it was before use_language() set it for click's and typer's own strings: what the processes
# gpuwise starts for the user (their job, their benchmark task) get back.
_saved_language_variable: str | None = None
_changed_environment = False


def _(message: str) -> str:
    """The message in the current language (itself when it has no translation)."""
    return _translations.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for `n`, in the current language."""
    return _translations.ngettext(singular, plural, n)


def N_(message: str) -> str:  # noqa: N802 - the name gettext tools look for
    """Mark a string for the catalog without translating it now (translate it with `_()` where shown)."""
    return message


def language() -> str:
    """The current language: "en" or "zh"."""
    return _language


def language_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The language the locale variables ask for: "zh" for any zh_* locale, else "en"."""
    env = os.environ if environ is None else environ
    for name in _LOCALE_VARIABLES:
        value = env.get(name, "")
        if value:
            first = value.split(":")[0].strip().lower()
            return "zh" if first.startswith("zh") else "en"
    return "en"


def use_language(lang: str, environ: MutableMapping[str, str] | None = None) -> None:
    """Speak `lang` ("en" or "zh") from now on in this process.

    For "zh" this also points the standard library's gettext (which click and typer use for their own
    words: "Usage:", "Options", their parsing errors) at gpuwise's catalog, and sets LANGUAGE so that it picks
    the zh_CN one; `child_environment` undoes that for processes started for the user.
    """
    global _translations, _language, _saved_language_variable, _changed_environment  # noqa: PLW0603
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; expected one of {', '.join(LANGUAGES)}")
    env = os.environ if environ is None else environ
    _language = lang
    if lang == "en":
        _translations = gettext.NullTranslations()
        gettext.textdomain("messages")  # the standard library's default domain: no catalog, English
        if _changed_environment:  # give the user's LANGUAGE back
            env.pop("LANGUAGE", None)
            if _saved_language_variable is not None:
                env["LANGUAGE"] = _saved_language_variable
            _changed_environment = False
        return
    name = _GETTEXT_NAME[lang]
    _translations = gettext.translation(DOMAIN, str(LOCALE_DIR), languages=[name], fallback=True)
    gettext.bindtextdomain(DOMAIN, str(LOCALE_DIR))
    gettext.textdomain(DOMAIN)
    if not _changed_environment:
        _saved_language_variable = env.get("LANGUAGE")
        _changed_environment = True
    env["LANGUAGE"] = name


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment for a process gpuwise starts on the user's behalf, with the user's own
    LANGUAGE (as it was before `use_language` changed it)."""
    env = dict(os.environ if environ is None else environ)
    if _changed_environment:
        if _saved_language_variable is None:
            env.pop("LANGUAGE", None)
        else:
            env["LANGUAGE"] = _saved_language_variable
    return env
