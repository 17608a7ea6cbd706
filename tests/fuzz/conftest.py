"""The fuzz suite's switches. `make test` runs only its quick checks (the harness can fail; every format's
generator and target still work); `make fuzz` sets GPUWISE_FUZZ=1 and runs the full batches:

    GPUWISE_FUZZ=1                 run the `fuzz`-marked tests (otherwise they are deselected, not skipped)
    GPUWISE_FUZZ_FORMATS=a,b       only these formats (default: all; `make fuzz FORMAT=workload`)
    GPUWISE_FUZZ_EXAMPLES=10000    generated inputs per format, in process
    GPUWISE_FUZZ_CLI=50            of those, inputs also run through the real `gpuwise` command
    GPUWISE_FUZZ_JOBS=2            processes at once (default: the CPU count)
    GPUWISE_FUZZ_SEED=N            another sequence of inputs (default: the same every run)
    GPUWISE_FUZZ_OUT=DIR           where reproducers are kept (default: pytest's temporary directory)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_batches import Batches
from fuzz_formats import FORMATS

ENABLED = os.environ.get("GPUWISE_FUZZ") == "1"


def selected_formats() -> list[str]:
    wanted = [f.strip() for f in os.environ.get("GPUWISE_FUZZ_FORMATS", "").split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        raise pytest.UsageError(f"unknown fuzz format(s) {unknown}; the formats are: {', '.join(FORMATS)}")
    return wanted or list(FORMATS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect (not skip: CI turns skips into failures) the full batches unless GPUWISE_FUZZ=1, and the
    formats not asked for."""
    formats = set(selected_formats())
    keep, drop = [], []
    for item in items:
        marker = item.get_closest_marker("fuzz")
        if marker is None:
            keep.append(item)
            continue
        fmt = item.callspec.params.get("fmt") if hasattr(item, "callspec") else None
        (keep if ENABLED and fmt in formats else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fuzz: a full fuzz batch (run by `make fuzz`, GPUWISE_FUZZ=1)")


@pytest.fixture(scope="session")
def batches(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Batches]:
    chosen = os.environ.get("GPUWISE_FUZZ_OUT")
    out = Path(chosen) if chosen else tmp_path_factory.mktemp("fuzz")
    wanted = {
        item.callspec.params["fmt"]
        for item in request.session.items
        if item.get_closest_marker("fuzz") and hasattr(item, "callspec")
    }
    b = Batches(out, [f for f in FORMATS if f in wanted])
    yield b
    b.pool.shutdown(wait=True, cancel_futures=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = getattr(terminalreporter.config, "_fuzz_lines", [])
    if lines:
        terminalreporter.section("fuzz: inputs per format")
        for line in lines:
            terminalreporter.write_line(line)
