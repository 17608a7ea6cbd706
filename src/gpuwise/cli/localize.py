"""The words typer prints for gpuwise, in the language gpuwise speaks: command help taken from docstrings,
the "Usage:" line, the help option, and the command-line parsing errors.

typer uses the standard library's gettext for a few of its own words ("Options", "Commands", "No such
command …"), which `gpuwise.locale.use_language` points at gpuwise's catalog. The rest is English written
into typer's vendored click as plain strings and f-strings: the "Usage: " prefix, the help option's help,
the completion options' help and every parsing error. This module translates those at gpuwise's side of
the boundary: help texts are swapped on gpuwise's own command objects before they are shown, and a parsing
error's message is matched against the shapes click writes and rebuilt from the catalog.

A command's help comes from its docstring (typer shows `inspect.cleandoc(docstring)`): that exact text is
the catalog's msgid, so a translator writes `msgid` = the cleaned docstring.

Nothing here changes English output: `_()` returns its argument when no translation is active.
"""

from __future__ import annotations

import inspect
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

import typer
from typer.models import DefaultPlaceholder

from gpuwise.errors import label_gap
from gpuwise.locale import N_, _

# typer's vendored click writes these as plain strings (not through gettext): gpuwise translates them on
# its own command objects. The completion options' help is typer's (typer/completion.py).
HELP_OPTION_HELP = N_("Show this message and exit.")
COMPLETION_HELP = (
    N_("Install completion for the current shell."),
    N_("Show completion for the current shell, to copy it or customize the installation."),
    N_("Install completion for the specified shell."),
    N_("Show completion for the specified shell, to copy it or customize the installation."),
)
USAGE_PREFIX = N_("Usage:")


def _group_docstring(info: Any) -> str | None:
    """The docstring typer takes a sub-app's help from (typer.main.solve_typer_info_help's order), or None
    when an explicit help is given somewhere (its author wrapped that in `_()`)."""
    sub = info.typer_instance
    registered = sub.registered_callback if sub is not None else None
    explicit = [
        info.help,
        getattr(registered, "help", None),
        getattr(getattr(sub, "info", None), "help", None),
    ]
    if any(h is not None and not isinstance(h, DefaultPlaceholder) for h in explicit):
        return None
    callbacks = [
        info.callback,
        getattr(registered, "callback", None),
        getattr(getattr(sub, "info", None), "callback", None),
    ]
    for callback in callbacks:
        if callback is None or isinstance(callback, DefaultPlaceholder):
            continue
        doc = inspect.getdoc(callback)
        if doc:
            return doc
    return None


# CommandInfo/TyperInfo objects whose help this module filled in from a docstring -> that docstring, so a
# later call in another language translates it again instead of keeping the first language's text.
_FROM_DOCSTRING: dict[int, str] = {}


def translate_docstrings(app: typer.Typer) -> None:
    """Give every command and group of `app` (recursively) its docstring's help through the catalog,
    where no explicit help was given. In English the help is the docstring, exactly as typer shows it."""
    for command in app.registered_commands:
        doc = _FROM_DOCSTRING.get(id(command))
        if doc is None and command.help is None and command.callback is not None:
            doc = inspect.getdoc(command.callback)
        if doc:
            _FROM_DOCSTRING[id(command)] = doc
            command.help = _(doc)
    for group in app.registered_groups:
        doc = _FROM_DOCSTRING.get(id(group)) or _group_docstring(group)
        if doc:
            _FROM_DOCSTRING[id(group)] = doc
            group.help = _(doc)
        if group.typer_instance is not None:
            translate_docstrings(group.typer_instance)


def command_docstrings(app: typer.Typer) -> Iterator[str]:
    """Every docstring-derived help text of `app`'s commands and groups (the msgids translators need)."""
    for info in [*app.registered_commands, *app.registered_groups]:
        doc = _FROM_DOCSTRING.get(id(info))
        if doc:
            yield doc
    for group in app.registered_groups:
        if group.typer_instance is not None:
            yield from command_docstrings(group.typer_instance)


def localize_command(command: Any) -> None:
    """Translate the words click writes itself on this click command and every sub-command: the "Usage:"
    prefix and the help option's and completion options' help. A no-op in English."""
    from typer._click.core import Context
    from typer._click.formatting import HelpFormatter

    class Formatter(HelpFormatter):
        def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
            label = _(USAGE_PREFIX)
            super().write_usage(prog, args, label + label_gap(label) if prefix is None else prefix)

    class LocalContext(Context):
        formatter_class = Formatter

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            option = self.command.get_help_option(self)  # made once per command, with this context's names
            if option is not None and option.help == HELP_OPTION_HELP:
                option.help = _(HELP_OPTION_HELP)

    def walk(node: Any) -> None:
        node.context_class = LocalContext
        for param in node.params:
            if param.help in COMPLETION_HELP:
                param.help = _(param.help)
        for child in getattr(node, "commands", {}).values():
            walk(child)

    walk(command)


# --- help that wraps where the terminal wraps it ----------------------------------------------------------
# typer's rich help joins the single newlines of a command's first paragraph only (and of option help, with a
# space even between two Chinese characters); the later paragraphs and the command list keep every newline
# the docstring was wrapped at, so at 80 columns a line wraps twice and at 200 it stops half way. gpuwise
# joins them itself before typer sees the text, keeping what is laid out on purpose.

_LIST_ITEM = re.compile(r"(?:[-*+•]|\d{1,2}[.)])\s")
_BLANK_LINE = re.compile(r"(\n[ \t]*\n)")


def _starts_own_line(line: str) -> bool:
    """An indented (code, example, list continuation), `$ `, list-item or empty (the text's end) line
    starts a line of its own."""
    return not line or line[:1] in (" ", "\t") or line.startswith("$ ") or _LIST_ITEM.match(line) is not None


def _ends_own_line(line: str) -> bool:
    """After an indented or `$ ` line, or a lead-in that ends with a colon, the next line starts anew."""
    return line[:1] in (" ", "\t") or line.startswith("$ ") or line.rstrip().endswith((":", "："))


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def _join(left: str, right: str) -> str:
    """Two lines of one paragraph as one: no space between two Chinese characters or beside full-width
    punctuation (Chinese sets no space there), one space otherwise."""
    a, b = left[-1:], right[:1]
    tight = (_wide(a) and _wide(b)) or any(_wide(c) and unicodedata.category(c)[0] == "P" for c in a + b)
    return left + right if tight or not a else f"{left} {right}"


def _reflow_paragraph(paragraph: str) -> str:
    if paragraph.startswith("\b"):  # click's mark for a block kept exactly as written
        return paragraph
    lines: list[str] = []
    for line in paragraph.split("\n"):
        if lines and not _starts_own_line(line) and not _ends_own_line(lines[-1]):
            lines[-1] = _join(lines[-1].rstrip(), line.strip())
        else:
            lines.append(line)
    return "\n".join(lines)


def reflow(text: str) -> str:
    """`text` with the line breaks inside its prose paragraphs joined, so the terminal alone wraps it.
    Kept as written: blank-line paragraph breaks, list items, indented and `$ ` lines (examples, code),
    the line after a colon, `\\b` blocks and whatever follows a form feed (typer hides that part)."""
    body, feed, hidden = text.partition("\f")
    parts = _BLANK_LINE.split(body)  # paragraphs at even indices, the blank lines between them at odd
    body = "".join(part if i % 2 else _reflow_paragraph(part) for i, part in enumerate(parts))
    return body + feed + hidden


def _reflow_option_help(text: str) -> str:
    """An option's help reflowed; a paragraph whose breaks are kept is marked `\\b`, since typer joins
    every other line of an option's help with a space."""
    paragraphs = reflow(text).split("\n\n")
    return "\n\n".join(
        f"\b\n{p}" if "\n" in p.strip("\n") and not p.startswith("\b") else p for p in paragraphs
    )


def reflow_help(command: Any) -> None:
    """Reflow the help of this click command, of its options and arguments and of every sub-command, in
    place (it is idempotent): a command's paragraphs and option help wrap only where the terminal does."""
    if command.help and "\n" in command.help:
        command.help = reflow(command.help)
    for param in command.params:
        help_text = getattr(param, "help", None)
        if help_text and "\n" in help_text:
            param.help = _reflow_option_help(help_text)
    for child in getattr(command, "commands", {}).values():
        reflow_help(child)


# The messages typer's vendored click writes for parsing errors (f-strings, not gettext), as regular
# expressions whose named groups fill the translation's {fields}. First full match wins; a message of
# another shape stays as it is.
_ERRORS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.DOTALL), msgid)
    for pattern, msgid in (
        (
            r"No such option: (?P<option>.+?) \(Possible options: (?P<options>.+)\)",
            N_("No such option: {option} (Possible options: {options})"),
        ),
        (r"No such option: (?P<option>.+)", N_("No such option: {option}")),
        (r"Missing argument (?P<name>.+?)\.?", N_("Missing argument {name}.")),
        (
            r"Missing option (?P<name>.+?)\. Choose from:(?P<choices>.+)",
            N_("Missing option {name}. Choose from:{choices}"),
        ),
        (r"Missing option (?P<name>.+?)\.?", N_("Missing option {name}.")),
        (r"Missing parameter (?P<name>.+?)\.?", N_("Missing parameter {name}.")),
        (r"Invalid value for (?P<param>.+?): (?P<reason>.+)", N_("Invalid value for {param}: {reason}")),
        (r"Invalid value: (?P<reason>.+)", N_("Invalid value: {reason}")),
        (
            r"Got unexpected extra argument\(s\) \((?P<args>.*)\)",
            N_("Got unexpected extra argument(s) ({args})"),
        ),
        (r"Option (?P<option>.+?) requires an argument\.", N_("Option {option} requires an argument.")),
        (
            r"Option (?P<option>.+?) requires (?P<n>\d+) arguments\.",
            N_("Option {option} requires {n} arguments."),
        ),
        (r"Option (?P<option>.+?) does not take a value\.", N_("Option {option} does not take a value.")),
        (r"Argument (?P<name>.+?) takes (?P<n>\d+) values\.", N_("Argument {name} takes {n} values.")),
        (r"(?P<value>.+?) is not one of (?P<choices>.+)\.", N_("{value} is not one of {choices}.")),
        (r"File (?P<path>.+) does not exist\.", N_("File {path} does not exist.")),
        (r"Directory (?P<path>.+) does not exist\.", N_("Directory {path} does not exist.")),
        (r"Path (?P<path>.+) does not exist\.", N_("Path {path} does not exist.")),
        (r"(?P<label>File|Directory|Path) (?P<path>.+) is a file\.", N_("{label} {path} is a file.")),
        (
            r"(?P<label>File|Directory|Path) (?P<path>.+) is a directory\.",
            N_("{label} {path} is a directory."),
        ),
        (
            r"(?P<label>File|Directory|Path) (?P<path>.+) is not readable\.",
            N_("{label} {path} is not readable."),
        ),
        (
            r"(?P<label>File|Directory|Path) (?P<path>.+) is not writable\.",
            N_("{label} {path} is not writable."),
        ),
        (r"Value (?P<value>.+?) is not a valid (?P<kind>.+)\.", N_("Value {value} is not a valid {kind}.")),
    )
)
# pydantic's reasons (typer validates option values with it), shown after "Invalid value for …:"
PYDANTIC_REASONS = (
    N_("Input should be a valid integer, unable to parse string as an integer"),
    N_("Input should be a valid integer, got a number with a fractional part"),
    N_("Input should be a valid number, unable to parse string as a number"),
    N_("Input should be a valid boolean, unable to interpret input"),
    N_("Input should be a finite number"),
    N_("Input should be a valid string"),
)
# words that fill a field and are themselves English
_FIELD_WORDS = (N_("File"), N_("Directory"), N_("Path"))


def translate_usage_message(message: str) -> str:
    """A click parsing error's message in the current language (itself when its shape is unknown)."""
    translated = _(message)
    if translated != message:
        return translated
    for pattern, msgid in _ERRORS:
        match = pattern.fullmatch(message)
        if match is None:
            continue
        fields = match.groupdict()
        if "reason" in fields:
            fields["reason"] = translate_usage_message(fields["reason"])
        if "label" in fields:
            fields["label"] = _(fields["label"])
        return _(msgid).format(**fields)
    return message
