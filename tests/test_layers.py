"""The rooms' dependency direction, enforced: a lower room never imports a higher one.

Docstrings that said "must not import …" were wishes (an `Any` hid a monitor↔idle cycle). This test reads
every import in src/, including the ones inside functions, and fails on any edge the table below does not
allow. Printing outside cli/ is banned by ruff's T20 rule (pyproject.toml), checked here too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src" / "gpuwise"

# Shared leaf modules at the package top: anyone may import them; they import only each other.
LEAVES = {
    "errors", "units", "files", "paths", "webhook", "config",
    "safe_read", "sqlitedb", "httpclient", "__init__",
    "locale",  # the translations every room's user-facing strings go through (standard library only)
}  # fmt: skip

# room -> the rooms it may import (besides the leaves). Anything not listed is forbidden. A new room must be
# added here on purpose, with its place in the order.
ALLOWED: dict[str, set[str]] = {
    "workload": set(),
    "catalog": set(),
    "estimate": {"catalog", "workload"},
    "plan": {"catalog", "estimate", "workload"},
    # reads idle's state file (its stops) and the monitor's history schema (its hourly rollups)
    "report": {"plan", "catalog", "estimate", "workload", "idle", "monitor"},
    "gpu": set(),
    "doctor": {"gpu", "catalog"},
    "idle": {"gpu"},
    "monitor": {"gpu", "idle"},
    "bench": {"gpu", "catalog", "estimate", "workload", "idle"},
    "run": {"gpu", "idle"},
    "checkpoint": {"run"},  # the public gpuwise.checkpoint API for training scripts
    "export": {"plan", "catalog", "estimate", "workload", "doctor", "setup"},  # CUDA tables; setup: images
    "setup": {"doctor", "catalog"},
    "init": set(),  # the project template writer (`gpuwise init`): leaves only
    "cli": {"*"},
}


def _room(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported_rooms(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "gpuwise":
                # `from gpuwise import __version__` names an attribute, not a room
                names = [
                    f"gpuwise.{alias.name}"
                    for alias in node.names
                    if (SRC / alias.name).is_dir() or (SRC / f"{alias.name}.py").is_file()
                ]
        for name in names:
            parts = name.split(".")
            if parts[0] == "gpuwise" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def _violations() -> list[str]:
    bad: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        room = _room(path)
        if room == "__main__":
            continue
        for line, target in _imported_rooms(path):
            if target == room or target in LEAVES:
                if room in LEAVES and target not in LEAVES:
                    bad.append(f"{path.relative_to(SRC)}:{line}: leaf module imports room {target!r}")
                continue
            if room in LEAVES:
                bad.append(f"{path.relative_to(SRC)}:{line}: leaf module {room!r} imports room {target!r}")
                continue
            allowed = ALLOWED.get(room)
            if allowed is None:
                bad.append(f"{path.relative_to(SRC)}: room {room!r} is not in tests/test_layers.py's table")
            elif "*" not in allowed and target not in allowed:
                bad.append(f"{path.relative_to(SRC)}:{line}: {room!r} must not import {target!r}")
    return bad


def test_no_room_imports_a_higher_one() -> None:
    assert _violations() == []


def test_nothing_imports_the_cli() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line}"
        for path in SRC.rglob("*.py")
        if _room(path) not in {"cli", "__main__"}
        for line, target in _imported_rooms(path)
        if target == "cli"
    ]
    assert offenders == []


def test_the_checker_catches_a_forbidden_edge(tmp_path: Path) -> None:
    """The rule must be able to fail: an idle module importing monitor is reported."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from gpuwise.monitor import exporter\n    import gpuwise.cli.main\n")
    assert _imported_rooms(module) == [(2, "monitor"), (3, "cli")]
    assert "monitor" not in ALLOWED["idle"]


def _ruff_prints(source: str, as_path: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ruff", "check", "--select", "T20", "--stdin-filename", as_path, "-"]
    return subprocess.run(cmd, input=source, capture_output=True, text=True, cwd=REPO, check=False)


def test_only_the_cli_prints() -> None:
    """ruff T20 with the per-file ignores: print() is allowed in cli/, nowhere else in src/."""
    whole = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "T20", "src"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert whole.returncode == 0, whole.stdout
    assert _ruff_prints("print('x')\n", "src/gpuwise/plan/new.py").returncode == 1
    assert _ruff_prints("print('x')\n", "src/gpuwise/cli/new.py").returncode == 0
