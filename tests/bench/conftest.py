"""Bench test helpers: torch (the `bench` extra) or a skip that GPUWISE_REQUIRE_ALL=1 turns into a failure,
and a config file that keeps the user's own config out of the tests."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REQUIRE_ALL = os.environ.get("GPUWISE_REQUIRE_ALL") == "1"


@pytest.fixture
def torch_one_thread() -> Iterator[Any]:
    """torch with one thread for the test (two threads on a loaded 2-core machine spin against each other:
    a 10 s suite took 40), restored afterwards."""
    if importlib.util.find_spec("torch") is None:
        if REQUIRE_ALL:
            pytest.fail("GPUWISE_REQUIRE_ALL=1 but torch (the bench extra) is not installed")
        pytest.skip("torch is not installed (pip install 'gpuwise[bench]')")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


@pytest.fixture
def empty_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text("", encoding="utf-8")
    return path
