"""The catalog reaches the network only through gpuwise.httpclient (issue #14: one home for HTTP, with its
timeouts, retries with backoff and URL redaction), never by opening connections of its own."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuwise"
# Modules that open connections themselves; urllib.parse (URL checks, no I/O) is fine.
_NETWORK = ("urllib.request", "urllib.error", "http.client", "socket", "ssl", "requests", "httpx", "urllib3")


def _network_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        found += [f"{path.name}:{node.lineno} {n}" for n in names if n.startswith(_NETWORK)]
    return found


def test_catalog_code_imports_no_http_library_of_its_own() -> None:
    files = [*sorted((SRC / "catalog").glob("*.py")), SRC / "cli" / "catalog.py"]
    assert len(files) > 10
    assert [hit for f in files for hit in _network_imports(f)] == []


def test_the_check_sees_a_direct_import() -> None:
    assert _network_imports(SRC / "httpclient.py")  # the one home does import urllib.request
