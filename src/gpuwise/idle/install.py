"""`gpuwise idle install` as steps: which unit to write where, writing it, and enabling it with systemctl.

`plan_install` decides (pure but for finding the installed `gpuwise` script beside the running Python);
`write_unit` writes the unit atomically; `enable_unit` runs systemctl through the injected `Runner`, or
says it cannot because systemd is not running here. The CLI renders each outcome.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from gpuwise.errors import StorageError
from gpuwise.idle.actions import Runner
from gpuwise.idle.state import write_atomic
from gpuwise.idle.unit import UNIT_NAME, render_unit
from gpuwise.locale import _


@dataclass(frozen=True)
class UnitInstall:
    """What installing the daemon as a systemd service means on this machine."""

    target: Path  # where the unit file goes
    text: str  # the unit file
    commands: tuple[tuple[str, ...], ...]  # what enables and starts it, in order


def plan_install(unit_dir: Path, config: Path | None, config_dir: Path, data_dir: Path) -> UnitInstall:
    """The unit for `gpuwise idle run` (with `--config` when one was given), run by this Python's
    `gpuwise` script or, where there is none, by the interpreter itself."""
    script = Path(sys.executable).parent / "gpuwise"
    exec_start = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from gpuwise.cli.main import run; run()"]
    )
    # a daemon already running here (started by hand) is waited for, not fought: see idle/lock.py
    exec_start += ["idle", "run", "--wait-for-other"]
    if config is not None:
        exec_start += ["--config", str(config.resolve())]
    return UnitInstall(
        target=unit_dir / UNIT_NAME,
        text=render_unit(exec_start, config_dir, data_dir),
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", UNIT_NAME)),
    )


def write_unit(install: UnitInstall) -> None:
    """Write the unit file whole (StorageError, with what to do instead, when the directory is not
    writable)."""
    try:
        write_atomic(install.target, install.text)
    except StorageError as exc:
        exc.fix = _("run it as root (sudo), or pass --unit-dir DIR; --dry-run prints the unit. {fix}").format(
            fix=exc.fix
        )
        raise


def enable_unit(install: UnitInstall, runner: Runner, systemd_root: Path) -> bool:
    """Run the enable commands. False (nothing run) when systemd is not running here or systemctl is
    missing; StorageError when a command fails."""
    if runner.which("systemctl") is None or not systemd_root.is_dir():
        return False
    for c in install.commands:
        res = runner.run(c, timeout_s=60)
        if not res.ok:
            raise StorageError(
                _("{command} failed: {detail}").format(command=res.description, detail=res.detail),
                fix=_("run it yourself as root, then check journalctl -u {unit}").format(unit=UNIT_NAME),
            )
    return True
