"""The public checkpoint API for training scripts run under `gpuwise run`.

    from gpuwise import checkpoint
    start = checkpoint.latest()                 # what to resume from (a Path), or None
    ...
    checkpoint.save({"model": model.state_dict(), "step": step}, step)   # written whole, then committed

    # or write your own folder and mark it complete last:
    checkpoint.commit(path)

`gpuwise run` syncs only committed (complete) checkpoints. The folder is
`$GPUWISE_CHECKPOINT_DIR` (set by `gpuwise run`), else `./checkpoints`. Standard library only; `save()`
uses `torch.save` when torch is installed and the state is not bytes, else pickle.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuwise.files import pid_alive
from gpuwise.run.manifest import COMPLETE_MARKER, order_key
from gpuwise.run.store import scan_local

__all__ = ["checkpoint_dir", "commit", "latest", "save"]


def checkpoint_dir() -> Path:
    """`$GPUWISE_CHECKPOINT_DIR`, else `./checkpoints`."""
    return Path(os.environ.get("GPUWISE_CHECKPOINT_DIR") or "checkpoints")


def _fsync_tree(path: Path) -> None:
    """Data on disk before the marker: a crash right after commit() must not leave a marked, empty file."""
    for root, _dirs, names in os.walk(path):
        for n in names:
            fd = os.open(Path(root, n), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def commit(path: str | os.PathLike[str]) -> Path:
    """Mark the checkpoint folder `path` complete: its files are flushed to disk, then `COMPLETE` is written
    (atomically, last). Raises FileNotFoundError when `path` is not a folder."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"checkpoint folder {folder} does not exist")
    _fsync_tree(folder)
    marker = folder / COMPLETE_MARKER
    tmp = folder / f".{COMPLETE_MARKER}.tmp"
    tmp.write_text(json.dumps({"committed_at": time.time()}) + "\n", encoding="utf-8")
    tmp.replace(marker)
    return folder


def _write_state(state: Any, folder: Path) -> None:
    if isinstance(state, bytes | bytearray):
        (folder / "state.bin").write_bytes(bytes(state))
        return
    if isinstance(state, Mapping) and state and all(isinstance(v, bytes | bytearray) for v in state.values()):
        for name, data in state.items():  # {"model.bin": b"...", "optim.bin": b"..."}: one file each
            (folder / str(name)).write_bytes(bytes(data))
        return
    try:
        import torch
    except ImportError:
        with (folder / "state.pkl").open("wb") as fh:
            pickle.dump(state, fh)
        return
    torch.save(state, folder / "state.pt")


def _sweep(base: Path) -> None:
    """Remove the hidden folders of saves whose writer died mid-way (`.step-N.<pid>.tmp` of a pid that no
    longer runs: killed by the OOM killer or kill -9 while writing). Nothing else ever deletes them, and each
    is as large as a checkpoint, so a few kills could fill the disk."""
    for entry in base.glob(".step-*.tmp"):
        pid = entry.name.removesuffix(".tmp").rsplit(".", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def save(state: Any, step: int, *, directory: str | os.PathLike[str] | None = None) -> Path:
    """Write `state` as checkpoint `step-<step>` atomically (a hidden folder renamed into place) and commit
    it. Returns the checkpoint's folder. Hidden folders that writers killed mid-save left are removed."""
    base = Path(directory) if directory is not None else checkpoint_dir()
    base.mkdir(parents=True, exist_ok=True)
    _sweep(base)
    final = base / f"step-{int(step)}"
    tmp = base / f".step-{int(step)}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        _write_state(state, tmp)
        commit(tmp)
        if final.exists():
            shutil.rmtree(final)
        tmp.replace(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def latest(directory: str | os.PathLike[str] | None = None) -> Path | None:
    """What to resume from: `$GPUWISE_RESUME_FROM` when `gpuwise run --resume` set it, else the newest
    complete checkpoint in the folder, else None."""
    given = os.environ.get("GPUWISE_RESUME_FROM")
    if given and directory is None and Path(given).exists():
        return Path(given)
    base = Path(directory) if directory is not None else checkpoint_dir()
    try:
        found = scan_local(base)
    except FileNotFoundError:
        return None
    if not found:
        return None
    return max(found, key=lambda c: order_key(c.candidate())).path
