"""Fixtures for `gpuwise init`: an isolated gpuwise data dir (the ledger of `gpuwise run`), no launcher
variables from the outer environment, and a project written by the real command."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.cli.main import main

_OUTER_VARS = (
    "GPUWISE_CHECKPOINT_DIR",
    "GPUWISE_RESUME_FROM",
    "GPUWISE_RUN_ID",
    "SKYPILOT_TASK_ID",
    "DSTACK_RUN_NAME",
    "SLURM_JOB_ID",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUWISE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GPUWISE_CONFIG_DIR", str(tmp_path / "config"))
    for var in _OUTER_VARS:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A project as `gpuwise init` writes it."""
    directory = tmp_path / "demo-project"
    assert main(["init", str(directory)]) == 0
    capsys.readouterr()
    return directory
