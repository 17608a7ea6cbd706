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


def test_a_checkpoint_dir_that_is_a_file_is_bad_input(tmp_path: Path, gw: Callable[..., Result]) -> None:
    """It was exit 1 with "To fix: give a --checkpoint-dir on a writable disk", which sends the user to
    look at the disk rather than at the typo."""
    a_file = tmp_path / "train.log"
    a_file.write_text("kept\n")
    for given in (a_file, a_file / "ckpt"):
        r = gw("run", "--preemption", "off", "--checkpoint-dir", str(given), "--", *job("print('RAN')"))
        assert r.returncode == 2, r.stderr
        assert f"--checkpoint-dir {given} is not a folder" in r.stderr and "writable disk" not in r.stderr
        assert "RAN" not in r.stdout and "Traceback" not in r.stderr
    assert a_file.read_text() == "kept\n" and _rows() == 0
