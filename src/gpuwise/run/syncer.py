"""The background syncer: uploads each newly completed checkpoint, keeps the last K, never touches an
incomplete one.

Every `poll_s` it scans the checkpoint folder; the complete checkpoints it has not uploaded yet go up oldest
first (one that would be pruned at once is skipped). After a verified upload the remote and local copies
beyond the newest `keep` are removed; nothing is removed before a newer checkpoint is safely remote, so a
failing run never deletes what it already uploaded. A failed upload is logged and retried with exponential
backoff while the job goes on. `flush()` uploads the newest complete checkpoint now (the last act before
`gpuwise run` exits).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpuwise.errors import GpuwiseError
from gpuwise.run.manifest import Candidate, Manifest, order_key, to_prune
from gpuwise.run.store import CheckpointStore, LocalCheckpoint, remove_local, retry_delays, scan_local

log = logging.getLogger("gpuwise.run.syncer")


@dataclass
class SyncStats:
    checkpoints_uploaded: int = 0
    bytes_uploaded: int = 0
    last_uploaded: str | None = None
    last_error: str | None = None
    newest_local: str | None = None
    uploaded_names: list[str] = field(default_factory=list)


class Syncer:
    def __init__(
        self,
        checkpoint_dir: Path,
        store: CheckpointStore | None,
        run_id: str,
        *,
        keep: int = 3,
        poll_s: float = 2.0,
        backoff: Callable[[], Iterator[float]] = retry_delays,
    ) -> None:
        self.checkpoint_dir = checkpoint_dir
        self.store = store
        self.run_id = run_id
        self.keep = max(1, keep)
        self.poll_s = poll_s
        self.stats = SyncStats()
        self._backoff = backoff
        self._delays: Iterator[float] | None = None
        self._uploaded: dict[str, float] = {}  # name -> mtime uploaded
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dir_missing_logged = False

    def remember_remote(self, manifests: list[Manifest]) -> None:
        """Checkpoints already at the remote (a resumed run) are not uploaded again."""
        for m in manifests:
            self._uploaded[m.name] = m.created_at

    # ----- thread

    def start(self) -> None:
        if self.store is not None:  # its clients are made while the job starts, not at its first checkpoint
            threading.Thread(target=self.store.warm, name="gpuwise-store-warm", daemon=True).start()
        self._thread = threading.Thread(target=self._loop, name="gpuwise-syncer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        wait = self.poll_s
        while not self._stop.wait(wait):
            ok = self.sync_once()
            if ok:
                self._delays = None
                wait = self.poll_s
            else:
                if self._delays is None:
                    self._delays = self._backoff()
                wait = next(self._delays)
                log.warning("upload failed; retrying in %.0f s", wait)

    # ----- one pass

    def _scan(self) -> list[LocalCheckpoint] | None:
        try:
            found = scan_local(self.checkpoint_dir)
        except FileNotFoundError:
            if not self._dir_missing_logged:
                log.error(
                    "checkpoint directory %s vanished; the job goes on, nothing new can be synced "
                    "(to fix: recreate it, or check what removed it)",
                    self.checkpoint_dir,
                )
                self._dir_missing_logged = True
            self.stats.last_error = f"checkpoint directory {self.checkpoint_dir} vanished"
            return None
        except OSError as exc:
            self.stats.last_error = f"cannot read {self.checkpoint_dir}: {exc.strerror}"
            log.error("%s", self.stats.last_error)
            return None
        self._dir_missing_logged = False
        found.sort(key=lambda c: order_key(c.candidate()))
        self.stats.newest_local = str(found[-1].path) if found else None
        return found

    def sync_once(self, *, newest_only: bool = False) -> bool:
        """Upload what is pending. False when an upload failed (the caller backs off)."""
        with self._lock:
            found = self._scan()
            if found is None:
                return True  # not an upload failure: keep the normal pace
            if self.store is None:
                return True
            pending = [c for c in found if self._uploaded.get(c.name) != c.mtime_s]
            doomed = {c.name for c in to_prune([c.candidate() for c in found], self.keep)}
            pending = [c for c in pending if c.name not in doomed]
            if newest_only:
                pending = pending[-1:]
            for ckpt in pending:
                if not self._upload(ckpt):
                    return False
            if pending:
                self._prune(found)
            return True

    def _upload(self, ckpt: LocalCheckpoint) -> bool:
        assert self.store is not None
        started = time.monotonic()
        try:
            m = self.store.upload(ckpt, self.run_id)
        except GpuwiseError as exc:
            self.stats.last_error = exc.render()
            log.error("upload of %s failed: %s", ckpt.name, exc.render())
            return False
        except OSError as exc:  # the checkpoint was removed or changed under us
            self.stats.last_error = f"{ckpt.name}: {exc}"
            log.error("upload of %s failed: %s", ckpt.name, exc)
            return False
        self._uploaded[ckpt.name] = ckpt.mtime_s
        self.stats.checkpoints_uploaded += 1
        self.stats.bytes_uploaded += m.total_bytes
        self.stats.last_uploaded = ckpt.name
        self.stats.last_error = None
        self.stats.uploaded_names.append(ckpt.name)
        secs = time.monotonic() - started
        log.info(
            "uploaded %s (%d files, %.1f MB) in %.1f s", ckpt.name, len(m.files), m.total_bytes / 1e6, secs
        )
        return True

    def _prune(self, found: list[LocalCheckpoint]) -> None:
        assert self.store is not None
        try:
            remote = self.store.checkpoints(self.run_id)
        except GpuwiseError as exc:
            log.warning("cannot list the remote to prune it: %s", exc.render())
            return
        by_name = {m.name: m for m in remote}
        cands = [Candidate(m.name, m.step, m.created_at, "remote") for m in remote]
        for old in to_prune(cands, self.keep):
            try:
                self.store.delete(by_name[old.name])
                log.info("removed %s from the remote (keeping the newest %d)", old.name, self.keep)
            except GpuwiseError as exc:
                log.warning("cannot remove %s from the remote: %s", old.name, exc.render())
        # locally, only checkpoints that are safely remote are removed
        uploaded = [c for c in found if c.name in self._uploaded]
        for old_c in to_prune([c.candidate() for c in uploaded], self.keep):
            local = next(c for c in uploaded if c.name == old_c.name)
            remove_local(local)
            log.info("removed local %s (uploaded; keeping the newest %d)", local.name, self.keep)

    def flush(self) -> bool:
        """Upload the newest complete checkpoint now, if it is not remote yet. True when it is remote (or
        there is nothing to upload)."""
        self.stop()
        ok = self.sync_once(newest_only=True)
        if not ok and self.stats.newest_local:
            log.error(
                "the newest complete checkpoint stays local only: %s (upload it later with "
                "`gpuwise run --resume` on this machine, or copy it by hand)",
                self.stats.newest_local,
            )
        return ok
