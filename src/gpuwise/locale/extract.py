"""Find every translatable string in gpuwise's source: the literal arguments of `_()`, `N_()`, `ngettext()`.

Reads the code with `ast` (nothing is imported or run). A call of `_()` whose argument is built at run time
(an f-string, a concatenation or `%`, a `.format()` call) cannot be in the catalog: it is reported as a
problem, so that the rule in gpuwise.locale's docstring is checked, not hoped for. A name or attribute
(`_(HEADING)`, `_(row.label)`) is a look-up of a string marked where it is defined, with `N_()`: allowed,
and not itself a message.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_SINGLE = {"_", "N_"}
_PLURAL = {"ngettext"}


@dataclass(frozen=True)
class Message:
    """One translatable string and where it is written."""

    msgid: str
    plural: str | None
    where: str  # path:line


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name) and func.id in _SINGLE | _PLURAL:
        return func.id
    if (
        isinstance(func, ast.Attribute)
        and func.attr in _SINGLE | _PLURAL
        and isinstance(func.value, ast.Name)
        and func.value.id == "locale"
    ):  # locale._("…")
        return func.attr
    return None


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _built_at_run_time(node: ast.expr) -> bool:
    """An f-string, a `+`/`%` expression or a `.format()` call: text no catalog can hold."""
    if isinstance(node, ast.JoinedStr | ast.BinOp):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"


def extract_source(source: str, where: str) -> tuple[list[Message], list[str]]:
    """The messages of one module's source, and the calls that break the rules (as "path:line: why")."""
    messages: list[Message] = []
    problems: list[str] = []
    for node in ast.walk(ast.parse(source, filename=where)):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        if name is None:
            continue
        at = f"{where}:{node.lineno}"
        wanted = 2 if name in _PLURAL else 1
        args = node.args[:wanted]
        if len(node.args) < wanted or node.keywords or any(_built_at_run_time(arg) for arg in args):
            problems.append(f"{at}: {name}() takes plain string literals only (fill values in with .format)")
            continue
        texts = [_literal(arg) for arg in args]
        if any(t is None for t in texts):
            if name == "N_":
                problems.append(f"{at}: N_() marks a plain string literal only")
            continue  # _(NAME): a look-up of a string marked with N_() where it is defined
        first = texts[0] or ""
        if not first.strip():
            problems.append(f"{at}: {name}() of an empty string")
            continue
        messages.append(Message(first, texts[1] if name in _PLURAL else None, at))
    return messages, problems


def extract_paths(paths: Iterable[Path], root: Path) -> tuple[list[Message], list[str]]:
    """Every message in these files (paths shown relative to `root`), and every problem."""
    messages: list[Message] = []
    problems: list[str] = []
    for path in sorted(paths):
        found, bad = extract_source(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
        messages += found
        problems += bad
    return messages, problems


def extract_package() -> tuple[list[Message], list[str]]:
    """Every message in the installed gpuwise package's own modules."""
    package = Path(__file__).resolve().parent.parent
    return extract_paths(package.rglob("*.py"), package.parent)
