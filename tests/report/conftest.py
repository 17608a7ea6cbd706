"""The `history` fixture: report_history's history in the test's own data directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_history import build_history


@pytest.fixture
def history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The history above in this test's data directory, and a config pricing the machine at $10/h."""
    data = tmp_path / "data"
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[machine]\nprice_usd_per_hour = 10.0\n", encoding="utf-8")
    monkeypatch.setenv("GPUWISE_DATA_DIR", str(data))
    monkeypatch.setenv("GPUWISE_CONFIG_DIR", str(config))
    return build_history(data)
