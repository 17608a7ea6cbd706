"""What users read names only what they have: no internal specification, no sibling folder of our checkout,
and no command that does not exist yet."""

from __future__ import annotations

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


def test_no_fix_sends_users_to_a_command_that_does_not_exist() -> None:
    """Calibration errors told users to run `gpuwise bench`, which is not a command yet."""
    from gpuwise.cli.main import app

    commands = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    if "bench" not in commands:
        assert _offenders(USER_FACING + SOURCE, ("gpuwise bench",)) == []
