"""The `gpuwise` console script: choose the language, then run the CLI.

The language is chosen before anything else is imported, because typer evaluates every option's help text
when a command's module is imported, and its own words ("Usage:", "Options") when help is first shown.
Standard library and gpuwise.locale only.
"""

from __future__ import annotations

import sys

from gpuwise.errors import ConfigError, GpuwiseError, labelled
from gpuwise.locale import LANGUAGES, _, child_environment, language_from_environment, use_language


def requested_language(args: list[str]) -> str:
    """The language asked for by a root `--lang zh|en` (before the command name), else by the user's locale
    variables (LANGUAGE, LC_ALL, LC_MESSAGES, LANG)."""
    i = 0
    while i < len(args):
        arg = args[i]
        value: str | None = None
        if arg == "--lang":
            value = args[i + 1] if i + 1 < len(args) else ""
        elif arg.startswith("--lang="):
            value = arg.partition("=")[2]
        elif not arg.startswith("-"):
            break  # the command name: what follows is the command's own
        if value is not None:
            lang = value.strip().lower()
            if lang not in LANGUAGES:
                raise ConfigError(
                    _("--lang {value} is not a language gpuwise speaks").format(value=repr(value)),
                    fix=_("use --lang zh (Simplified Chinese) or --lang en"),
                )
            return lang
        i += 1
    # the user's own locale, not a LANGUAGE that an earlier --lang in this process set
    return language_from_environment(child_environment())


def apply_language(args: list[str]) -> int | None:
    """Switch to the requested language; an exit code when the request is bad input."""
    try:
        use_language(requested_language(args))
        return None
    except GpuwiseError:
        # say so in the language of the user's locale (the one the bad --lang was meant to replace)
        use_language(language_from_environment(child_environment()))
    try:
        requested_language(args)  # the same error again, now worded in that language
    except GpuwiseError as exc:
        sys.stderr.write(labelled(_("Error:"), exc.render()) + "\n")
        return exc.exit_code
    return None  # pragma: no cover - the request failed a moment ago


def run() -> None:
    """The console script (and `python -m gpuwise`): exit with the command's exit code."""
    try:
        code = apply_language(sys.argv[1:])
        if code is None:
            from gpuwise.cli.main import main

            code = main()
    except KeyboardInterrupt:
        # Ctrl-C while Python is still importing typer, rich or a command's module, before main() can
        # catch it: the same quiet exit 130 as a Ctrl-C during the command, not a traceback
        code = 130
    sys.exit(code)
