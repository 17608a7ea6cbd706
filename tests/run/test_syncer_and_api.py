"""The syncer's rules (with a stub store: our own interface) and the public `gpuwise.checkpoint` API."""

from __future__ import annotations

import errno
import logging
import os
import shutil
from pathlib import Path

import pytest

from gpuwise import checkpoint
from gpuwise.errors import StorageError, UsageError
from gpuwise.run.manifest import Manifest
from gpuwise.run.store import CheckpointStore, LocalCheckpoint, scan_local, storage_error
from gpuwise.run.syncer import Syncer


class StubStore:
    """Records uploads; fails while `failing` is set, like an unreachable bucket."""

    def __init__(self) -> None:
        self.uploaded: list[str] = []
        self.failing = False
        self.remote: dict[str, Manifest] = {}
        self.deleted: list[str] = []

    def upload(self, ckpt: LocalCheckpoint, run_id: str) -> Manifest:
        if self.failing:
            raise StorageError("Cannot upload: endpoint unreachable", fix="check the network")
        self.uploaded.append(ckpt.name)
        m = Manifest(run_id, ckpt.name, ckpt.kind, ckpt.is_dir, ckpt.step, ckpt.mtime_s, ())
        self.remote[ckpt.name] = m
        return m

    def checkpoints(self, run_id: str | None = None) -> list[Manifest]:  # noqa: ARG002 - the store interface
        return list(self.remote.values())

    def delete(self, m: Manifest) -> None:
        self.deleted.append(m.name)
        del self.remote[m.name]


def commit_dir(base: Path, name: str, mtime: float | None = None) -> Path:
    d = base / name
    d.mkdir(parents=True)
    (d / "w.bin").write_bytes(b"w")
    checkpoint.commit(d)
    if mtime is not None:
        os.utime(d / "COMPLETE", (mtime, mtime))
    return d


def syncer(base: Path, store: StubStore, keep: int = 2) -> Syncer:
    return Syncer(base, store, "r", keep=keep, backoff=lambda: iter([0.01] * 100))  # type: ignore[arg-type]


def test_an_upload_failure_keeps_everything_local_and_is_retried(tmp_path: Path) -> None:
    store = StubStore()
    s = syncer(tmp_path, store)
    commit_dir(tmp_path, "step-1")
    store.failing = True
    assert s.sync_once() is False
    assert s.stats.last_error and "unreachable" in s.stats.last_error
    assert (tmp_path / "step-1").is_dir()
    store.failing = False
    assert s.sync_once() is True and store.uploaded == ["step-1"]
    assert s.sync_once() is True and store.uploaded == ["step-1"]  # not uploaded twice


def test_keep_k_removes_only_what_is_safely_remote(tmp_path: Path) -> None:
    store = StubStore()
    s = syncer(tmp_path, store, keep=2)
    for i in (1, 2, 3):
        commit_dir(tmp_path, f"step-{i}")
        assert s.sync_once()
    assert sorted(store.remote) == ["step-2", "step-3"] and store.deleted == ["step-1"]
    assert not (tmp_path / "step-1").exists() and (tmp_path / "step-2").exists()
    (tmp_path / "step-4").mkdir()  # being written: never uploaded, never counted
    assert s.sync_once() and "step-4" not in store.uploaded


def test_a_vanished_checkpoint_dir_is_logged_once_and_the_syncer_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = tmp_path / "ck"
    commit_dir(base, "step-1")
    s = syncer(base, StubStore())
    shutil.rmtree(base)
    with caplog.at_level(logging.ERROR, logger="gpuwise.run.syncer"):
        assert s.sync_once() and s.sync_once()
    assert [r.message for r in caplog.records if "vanished" in r.message] and len(caplog.records) == 1
    assert s.stats.last_error is not None and "vanished" in s.stats.last_error


def test_a_full_disk_is_named() -> None:
    err = storage_error("download to", "/ck", OSError(errno.ENOSPC, "No space left on device"))
    assert "no space left" in err.render() and "To fix:" in err.render()


def test_an_unknown_scheme_or_plain_path_is_bad_input() -> None:
    for url in ("/mnt/volume", "nosuch://bucket/x"):
        with pytest.raises(UsageError) as info:
            CheckpointStore(url)
        assert info.value.exit_code == 2 and "To fix:" in info.value.render()


def test_save_commit_latest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUWISE_CHECKPOINT_DIR", str(tmp_path))
    assert checkpoint.latest() is None
    p1 = checkpoint.save({"model.bin": b"abc"}, 1)
    p2 = checkpoint.save({"weights": [1, 2, 3]}, 2)
    assert (p1 / "model.bin").read_bytes() == b"abc" and (p2 / "COMPLETE").is_file()
    assert checkpoint.latest() == p2
    (tmp_path / "step-3").mkdir()  # not committed
    assert checkpoint.latest() == p2
    assert [c.name for c in sorted(scan_local(tmp_path), key=lambda c: c.name)] == ["step-1", "step-2"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind
    monkeypatch.setenv("GPUWISE_RESUME_FROM", str(p1))
    assert checkpoint.latest() == p1  # what `gpuwise run --resume` chose wins
    with pytest.raises(FileNotFoundError):
        checkpoint.commit(tmp_path / "nope")


def test_the_public_api_is_pinned() -> None:
    assert sorted(checkpoint.__all__) == ["checkpoint_dir", "commit", "latest", "save"]


def test_save_removes_what_a_writer_killed_mid_save_left(tmp_path: Path) -> None:
    """A writer killed while saving (the OOM killer, kill -9) leaves `.step-N.<pid>.tmp`, as large as a
    checkpoint, that nothing else deletes; the next save removes it. A live writer's folder stays."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    left = tmp_path / f".step-7.{int(dead.stdout)}.tmp"
    left.mkdir()
    (left / "state.bin").write_bytes(b"x" * 1000)
    live = tmp_path / f".step-8.{os.getppid()}.tmp"  # another writer still at work
    live.mkdir()
    checkpoint.save(b"state", 9, directory=tmp_path)
    assert not left.exists() and live.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "step-9"]
