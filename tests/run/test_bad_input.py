"""Mistakes on `gpuwise run`'s command line are bad input: exit 2, one clear message, the job never
started and nothing in the ledger (a row there would count as a run that cost something)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from run_fakes import job
from run_support import Result

from gpuwise.run.ledger import LedgerStore


def _rows() -> int:
    path = Path(os.environ["GPUWISE_DATA_DIR"]) / "gpuwise.sqlite"
    if not path.exists():
        return 0
    store = LedgerStore(path)
    try:
        return len(store.entries())
    finally:
        store.close()


def test_a_sync_url_gpuwise_cannot_use_records_nothing(tmp_path: Path, gw: Callable[..., Result]) -> None:
    for url, said in (
        ("s4://bucket/ckpt", "is not a storage gpuwise can write"),
        (str(tmp_path), "is not a URL"),
    ):
        r = gw("run", "--preemption", "off", "--sync", url, "--", *job("print('RAN')"))
        assert r.returncode == 2, r.stderr
        assert said in r.stderr and "Traceback" not in r.stderr and "RAN" not in r.stdout
    assert _rows() == 0
