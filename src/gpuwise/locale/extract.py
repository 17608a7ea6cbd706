"""Find every translatable string in gpuwise's source: the literal arguments of `_()`, `N_()`, `ngettext()`.

Reads the code with `ast` (nothing is imported or run). A call of `_()` whose argument is not a plain string
literal (an f-string, a variable, a concatenation at run time) cannot be in the catalog: it is reported as a
problem, so that the rule in gpuwise.locale's docstring is checked, not hoped for.
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
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and func.attr in _SINGLE | _PLURAL:  # locale._("…")
        return func.attr
    return None


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


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
        texts = [_literal(arg) for arg in node.args[:wanted]]
        if len(node.args) < wanted or any(t is None for t in texts) or node.keywords:
            problems.append(f"{at}: {name}() takes plain string literals only (fill values in with .format)")
            continue
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
