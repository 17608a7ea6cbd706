"""Shared test helpers: where the recordings are, which system programs exist, and GPUWISE_REQUIRE_ALL.

With GPUWISE_REQUIRE_ALL=1 (set by .ci/run), any skipped test fails instead: CI never passes by skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests check invariants, not speed: a 2-core CI machine under load must not fail them on
# hypothesis's per-example deadline. (Speed is measured by benchmarks/, never by tests.)
settings.register_profile("gpuwise", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gpuwise")

REPO = Path(__file__).resolve().parent.parent
# Third-party recordings live in the repository (provenance in recordings/PROVENANCE.md): a plain clone runs
# every test.
RECORDINGS = REPO / "tests" / "fixtures" / "recordings"
REQUIRE_ALL = os.environ.get("GPUWISE_REQUIRE_ALL") == "1"


def _unavailable(reason: str) -> None:
    if REQUIRE_ALL:
        pytest.fail(f"GPUWISE_REQUIRE_ALL=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def smi_fixtures() -> Path:
    path = RECORDINGS / "nvidia-smi"
    if not path.is_dir():
        _unavailable(f"{path} is missing")
    return path


@pytest.fixture(scope="session")
def trace_fixtures() -> Path:
    path = RECORDINGS / "traces"
    if not path.is_dir():
        _unavailable(f"{path} is missing")
    return path


@pytest.fixture(scope="session")
def need_program() -> Callable[[str], str]:
    """need_program("prometheus") -> its path, or skip (fail under GPUWISE_REQUIRE_ALL=1)."""

    def find(name: str) -> str:
        path = shutil.which(name)
        if path is None:
            _unavailable(f"the system program {name!r} is not installed (.ci/run installs it with apt-get)")
            raise AssertionError("unreachable")
        return path

    return find


@pytest.fixture(scope="session")
def need_module() -> Callable[[str], None]:
    """need_module("torch"): import it, or skip (fail under GPUWISE_REQUIRE_ALL=1)."""

    def find(name: str) -> None:
        import importlib.util

        if importlib.util.find_spec(name) is None:
            _unavailable(f"the Python package {name!r} is not installed (`make install EXTRAS=dev,hf-test`)")

    return find


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests away from the developer's real config, catalogs and history."""
    base = tmp_path_factory.mktemp("gpuwise-home")
    monkeypatch.setenv("GPUWISE_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("GPUWISE_DATA_DIR", str(base / "data"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Under GPUWISE_REQUIRE_ALL=1 a skip from anywhere (importorskip, skipif, a fixture) is a failure."""
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, but GPUWISE_REQUIRE_ALL=1 forbids skips: {reason}"


@pytest.fixture(autouse=True)
def _english_after_each_test() -> Iterator[None]:
    """A test that switches gpuwise to Chinese (main(["--lang", "zh", ...]), use_language) does not leave
    the next test speaking it, nor LANGUAGE set in this process's environment."""
    yield
    from gpuwise.locale import use_language

    use_language("en")
