"""What users read names only what they have: no internal specification, no sibling folder of our checkout,
and no command that does not exist yet."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
USER_FACING = [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "examples").rglob("*")]
SOURCE = [
    *(REPO / "src" / "gpuwise").rglob("*.py"),
    *(REPO / "src" / "gpuwise").rglob("*.md"),
    *(REPO / "src" / "gpuwise").rglob("*.csv"),
]


def _offenders(paths: list[Path], words: tuple[str, ...]) -> list[str]:
    found = []
    for path in paths:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(REPO)}: {w}" for w in words if w in text]
    return found


def test_no_user_facing_text_points_outside_the_product() -> None:
    """Help, errors, docs and package data named the internal spec and the reference folder beside our
    checkout: neither ships with gpuwise."""
    sibling = "../" + "shared"  # spelt apart so this file does not name the folder itself
    assert _offenders(USER_FACING + SOURCE, ("CONTRACTS", sibling)) == []


def test_no_text_sends_users_to_a_command_that_does_not_exist() -> None:
    """Calibration errors once told users to run `gpuwise bench` before it existed: every `gpuwise WORD` in
    docs, help, errors and package data must name a command the CLI has (all of them registered)."""
    from gpuwise.cli.main import full_app

    app = full_app()
    commands = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    # `gpuwise WORD` in code spans everywhere, and on the indented command lines of the Markdown pages
    in_code = re.compile(r"`gpuwise ([a-z][a-z-]+)\b")
    on_command_line = re.compile(r"^(?: {4,}|\t)(?:\$ )?gpuwise ([a-z][a-z-]+)\b", re.M)
    unknown = []
    for path in USER_FACING + SOURCE:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        words = set(in_code.findall(text))
        if path.suffix == ".md":
            words |= set(on_command_line.findall(text))
        unknown += [f"{path.relative_to(REPO)}: gpuwise {w}" for w in sorted(words - commands)]
    assert unknown == []
