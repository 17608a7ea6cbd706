"""The size rule, enforced: no module in src/ over 600 lines, no function body over 80.

Big modules and long functions were where copies drifted and reviews stalled (the clean-up issue); the rule
keeps new rooms (bench, export, …) from growing them back. A function's body is counted from its first
statement after the docstring to its end, so a CLI command's option declarations (its signature) and
decorators do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "gpuwise"
MODULE_LINES = 600
FUNCTION_BODY_LINES = 80


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    first = body[0]
    value = first.value if isinstance(first, ast.Expr) else None
    has_docstring = isinstance(value, ast.Constant) and isinstance(value.value, str)
    start = body[1].lineno if has_docstring and len(body) > 1 else first.lineno
    end = node.end_lineno if node.end_lineno is not None else start
    return end - start + 1


def _oversized() -> list[str]:
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(SRC.parent)
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            found.append(f"{rel}: {lines} lines (limit {MODULE_LINES})")
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _body_lines(node)
                if n > FUNCTION_BODY_LINES:
                    found.append(f"{rel}:{node.lineno} {node.name}: body of {n} lines")
    return found


def test_no_module_or_function_over_the_size_limits() -> None:
    assert _oversized() == []


def test_the_counter_sees_a_long_body_and_skips_signatures_and_docstrings() -> None:
    params = ",\n".join(f"    a{i}: int = 0" for i in range(100))
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_BODY_LINES))
    short = ast.parse(f'def f(\n{params},\n) -> None:\n    """Doc."""\n{body}\n').body[0]
    long = ast.parse(f"def g() -> None:\n{body}\n    return None\n").body[0]
    assert isinstance(short, ast.FunctionDef) and isinstance(long, ast.FunctionDef)
    assert _body_lines(short) == FUNCTION_BODY_LINES
    assert _body_lines(long) == FUNCTION_BODY_LINES + 1
