"""Where gpuwise keeps the user's files: config, catalogs, history.

`GPUWISE_CONFIG_DIR` and `GPUWISE_DATA_DIR` override the platform directories (tests and
containers use them). Nothing here creates directories at import time.
"""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    env = os.environ.get("GPUWISE_CONFIG_DIR")
    if env:
        return Path(env)
    from platformdirs import user_config_dir

    return Path(user_config_dir("gpuwise", appauthor=False))


def data_dir() -> Path:
    env = os.environ.get("GPUWISE_DATA_DIR")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("gpuwise", appauthor=False))


def config_file() -> Path:
    return config_dir() / "config.toml"


def history_db() -> Path:
    """The one SQLite file for monitor history (and, later, the run ledger)."""
    return data_dir() / "gpuwise.sqlite"


def user_catalog_dir() -> Path:
    return data_dir() / "catalog"
