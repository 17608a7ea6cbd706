"""The fuzz suite's batches, and the per-format report lines: plain helpers test_fuzz.py imports by name (a
module of its own: `from conftest import …` took whichever conftest.py was imported last under that name)."""

from __future__ import annotations

import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from fuzz_harness import BatchResult, CliRun, cli_sample_commands, run_batch, run_cli


class Batches:
    """Every selected format's batch, started at once on a pool of JOBS processes; each test waits for
    its own."""

    def __init__(self, out: Path, formats: list[str]) -> None:
        self.out = out
        self.examples = int(os.environ.get("GPUWISE_FUZZ_EXAMPLES", "10000"))
        self.cli = int(os.environ.get("GPUWISE_FUZZ_CLI", "50"))
        self.jobs = int(os.environ.get("GPUWISE_FUZZ_JOBS", str(os.cpu_count() or 2)))
        seed = os.environ.get("GPUWISE_FUZZ_SEED")
        extra = ["--seed", seed] if seed else []
        self.pool = ThreadPoolExecutor(max_workers=self.jobs)
        # slowest first, so the pool's last minutes are not one long format alone
        order = sorted(formats, key=lambda f: f not in ("csv", "wandb", "capture", "xml", "workload"))
        self.futures: dict[str, Future[tuple[BatchResult, list[CliRun]]]] = {
            f: self.pool.submit(self._one, f, extra) for f in order
        }

    def _one(self, fmt: str, extra: list[str]) -> tuple[BatchResult, list[CliRun]]:
        """The in-process batch, then its sample through the real command (the pool gives the
        parallelism: one process per worker at a time)."""
        batch = run_batch([fmt], self.out, examples=self.examples, sample=self.cli, extra=extra)
        sample_dir = self.out / fmt / "sample"
        if fmt not in batch.summaries or not sample_dir.is_dir():
            return batch, []
        home = self.out / fmt / "cli-home"
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "GPUWISE_CONFIG_DIR": str(home / "config"),
            "GPUWISE_DATA_DIR": str(home / "data"),
            "TMPDIR": str(home),
        }
        home.mkdir(parents=True, exist_ok=True)
        return batch, run_cli(cli_sample_commands(fmt, sample_dir), jobs=1, env=env)

    def result(self, fmt: str) -> tuple[BatchResult, list[CliRun]]:
        return self.futures[fmt].result()


def report_line(config: pytest.Config, line: str) -> None:
    config._fuzz_lines = [*getattr(config, "_fuzz_lines", []), line]  # type: ignore[attr-defined]
