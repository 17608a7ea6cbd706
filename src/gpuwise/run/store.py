"""The edges of checkpoint storage: the local checkpoint folder and a remote fsspec URL.

Remote layout: `<url>/<run id>/<checkpoint name>/<files>` and, written last, after every file is uploaded
and verified, `<url>/<run id>/<checkpoint name>/gpuwise-manifest.json`. A single-file checkpoint (Lightning
`.ckpt`) sits in a folder of its own name. Verification: on S3 the server's ETag (the MD5 of what it
received, or the MD5 of the parts' MD5s for a multipart upload) must match what was read locally; elsewhere,
or when the ETag is not that MD5 (SSE-KMS), the uploaded file is read back and its SHA-256 compared. S3
uploads go through `gpuwise.run.s3upload` (each byte read once, hashed as it is sent); other storage through
fsspec's `put_file` with the checksums computed beside it.

Which filesystem a URL opens (s3://, cos://, oss://, gs://, file://) is `gpuwise.run.endpoints`' business;
fsspec and its backends are imported inside the functions that need them. Error messages never carry
credentials: `redact()` strips the values of the usual credential variables.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise.errors import StorageError
from gpuwise.locale import N_, _
from gpuwise.run.digest import PART_BYTES, READ_BYTES, FileDigest, digest_file, etag_matches, sha256_of
from gpuwise.run.endpoints import credential_hint, open_filesystem, redact
from gpuwise.run.manifest import (
    COMPLETE_MARKER,
    DCP_METADATA,
    HF_STATE,
    MANIFEST_NAME,
    Candidate,
    FileEntry,
    Manifest,
    ManifestError,
    complete_kind,
    listed_names,
    missing_or_wrong,
    step_of,
)
from gpuwise.run.s3upload import S3Uploader

# Every part in flight is held in memory: at most this many over all files (512 MiB), not s3fs's default
# of 10 per file (2.5 GiB with 4 files at a time) on a host short of RAM.
PARTS_IN_FLIGHT = 8
_AUTH_WORDS = ("accessdenied", "access denied", "invalidaccesskeyid", "signaturedoesnotmatch", "forbidden")


# ---------------------------------------------------------------------------------------------- local side


@dataclass(frozen=True)
class LocalCheckpoint:
    name: str
    path: Path
    is_dir: bool
    kind: str
    step: int | None
    mtime_s: float

    def candidate(self) -> Candidate:
        return Candidate(self.name, self.step, self.mtime_s, "local")

    def files(self) -> list[tuple[str, Path]]:
        """(relative POSIX path, absolute path) of every file, sorted; the manifest itself excluded."""
        if not self.is_dir:
            return [(self.name, self.path)]
        out: list[tuple[str, Path]] = []
        for root, _dirs, names in os.walk(self.path):
            for n in names:
                p = Path(root, n)
                rel = p.relative_to(self.path).as_posix()
                if rel != MANIFEST_NAME and p.is_file():
                    out.append((rel, p))
        return sorted(out)


def _marker_mtime(path: Path, names: set[str]) -> float:
    for marker in (COMPLETE_MARKER, HF_STATE, DCP_METADATA):
        if marker in names:
            with contextlib.suppress(OSError):
                return (path / marker).stat().st_mtime
    return path.stat().st_mtime


def scan_local(directory: Path) -> list[LocalCheckpoint]:
    """The complete checkpoints directly under `directory`. Raises FileNotFoundError when it is gone."""
    found: list[LocalCheckpoint] = []
    for entry in os.scandir(directory):
        try:
            is_dir = entry.is_dir()
            names = {p.name for p in Path(entry.path).iterdir()} if is_dir else set()
            hf_text = None
            if is_dir and HF_STATE in names:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    hf_text = Path(entry.path, HF_STATE).read_text(encoding="utf-8")
            kind = complete_kind(entry.name, is_dir, names, hf_text)
            if kind is None:
                continue
            path = Path(entry.path)
            mtime = _marker_mtime(path, names) if is_dir else entry.stat().st_mtime
        except OSError:
            continue  # removed while we looked (a trainer rotating its checkpoints)
        found.append(LocalCheckpoint(entry.name, path, is_dir, kind, step_of(entry.name), mtime))
    return found


# --------------------------------------------------------------------------------------------- remote side


def storage_error(action: str, url: str, exc: BaseException) -> StorageError:
    """A third-party storage failure as one clear message (credentials redacted)."""
    text = redact(f"{type(exc).__name__}: {exc}")
    name = type(exc).__name__
    action = _(action)  # marked with N_() where it is named
    if (
        isinstance(exc, PermissionError)
        or name in ("NoCredentialsError", "PartialCredentialsError")
        or any(w in text.lower() for w in _AUTH_WORDS)
    ):
        return StorageError(
            _("Cannot {action} {url}: access denied ({error})").format(action=action, url=url, error=text),
            why=_("the credentials are missing, wrong or lack permission for this bucket"),
            fix=credential_hint(url),
        )
    if isinstance(exc, FileNotFoundError):
        return StorageError(
            _("Cannot {action} {url}: not found ({error})").format(action=action, url=url, error=text),
            why=_("the bucket or path does not exist"),
            fix=_("create the bucket, or correct the --sync URL"),
        )
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return StorageError(
            _("Cannot {action} {url}: no space left on the device").format(action=action, url=url),
            why=_("the local disk is full"),
            fix=_("free space (or point --checkpoint-dir at a larger disk) and run again"),
        )
    return StorageError(
        _("Cannot {action} {url}: {error}").format(action=action, url=url, error=text),
        why=_("the storage endpoint is unreachable or answered with an error"),
        fix=_("check the URL, --endpoint-url and the network; gpuwise retries uploads while the job runs"),
    )


class CheckpointStore:
    """Checkpoints of one or more runs under one fsspec URL."""

    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        workers: int = 4,
        part_bytes: int = PART_BYTES,
    ) -> None:
        self.url = url.rstrip("/")
        self.fs, self.root, self.protocol = open_filesystem(url, endpoint_url, region)
        self.workers = workers
        self.part_bytes = part_bytes  # S3 multipart part size (tests use S3's 5 MiB minimum)
        self._s3 = S3Uploader(self.fs, part_bytes, connections=max(10, PARTS_IN_FLIGHT + workers))

    def warm(self) -> None:
        """Create the S3 clients now (about a second each on a busy machine: botocore loads the service
        model), so that the first checkpoint does not wait for them. Failures are left to the upload."""
        if self.protocol not in ("s3", "s3a"):
            return
        with contextlib.suppress(Exception):
            self._s3.client()  # s3fs's client too

    def _path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    @contextlib.contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        try:
            yield
        except StorageError:
            raise
        except Exception as exc:  # fsspec backends raise anything from OSError to botocore errors
            raise storage_error(action, self.url, exc) from exc

    # ----- listing

    def checkpoints(self, run_id: str | None = None) -> list[Manifest]:
        """Every complete checkpoint (manifest present and every file listed at its size), oldest first."""
        with self._translated(N_("list")):
            self.fs.invalidate_cache()
            base = self._path(run_id) if run_id else self.root
            try:
                found: dict[str, Any] = self.fs.find(base, detail=True)
            except FileNotFoundError:
                return []
            keys = {self._relative(k): int(v.get("size") or 0) for k, v in found.items()}
            runs = {run_id} if run_id else {k.split("/", 1)[0] for k in keys if "/" in k}
            out: list[Manifest] = []
            for run in sorted(runs):
                for name in listed_names(keys, run):
                    m = self._read_manifest(run, name)
                    if m is None:
                        continue
                    present = {
                        k[len(f"{run}/{name}/") :]: size
                        for k, size in keys.items()
                        if k.startswith(f"{run}/{name}/")
                    }
                    if not missing_or_wrong(m, present):
                        out.append(m)
        return sorted(out, key=lambda m: (m.step if m.step is not None else -1, m.created_at, m.name))

    def run_ids(self) -> list[str]:
        """The runs that have a folder here (complete checkpoints or not), without reading any manifest."""
        with self._translated(N_("list")):
            self.fs.invalidate_cache()
            try:
                entries = self.fs.ls(self.root, detail=True)
            except FileNotFoundError:
                return []
        return sorted(
            {self._relative(str(e["name"])).split("/")[0] for e in entries if e.get("type") == "directory"}
            - {""}
        )

    def _relative(self, key: str) -> str:
        root = self.root.lstrip("/")
        k = key.lstrip("/")
        return k[len(root) :].lstrip("/") if k.startswith(root) else k

    def _read_manifest(self, run: str, name: str) -> Manifest | None:
        try:
            raw = self.fs.cat_file(self._path(run, name, MANIFEST_NAME))
            m = Manifest.from_json(raw)
        except (ManifestError, FileNotFoundError):
            return None
        if m.name != name or m.run_id != run:
            return None
        return m

    # ----- upload

    def upload(self, ckpt: LocalCheckpoint, run_id: str) -> Manifest:
        """Upload every file, verify each, then write the manifest. Returns the manifest."""
        files = ckpt.files()
        if not files:
            raise StorageError(
                _("Checkpoint {path} has no files").format(path=ckpt.path),
                fix=_("check what the job wrote there"),
            )
        part_streams = max(1, PARTS_IN_FLIGHT // min(self.workers, len(files)))
        with self._translated(N_("upload to")), ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = [
                pool.submit(self._upload_one, run_id, ckpt.name, rel, p, part_streams) for rel, p in files
            ]
            entries = [f.result() for f in futures]
            manifest = Manifest(
                run_id=run_id,
                name=ckpt.name,
                kind=ckpt.kind,
                is_dir=ckpt.is_dir,
                step=ckpt.step,
                created_at=ckpt.mtime_s,
                files=tuple(entries),
            )
            self._write_manifest(manifest)
        return manifest

    def _upload_one(self, run_id: str, name: str, rel: str, path: Path, part_streams: int) -> FileEntry:
        target = self._path(run_id, name, rel)
        if self.protocol in ("s3", "s3a"):
            digest = self._s3.upload(path, target, part_streams)  # one read: hashed as it is sent
        else:
            with ThreadPoolExecutor(max_workers=1) as hasher:
                digest_future = hasher.submit(digest_file, path, self.part_bytes)  # overlaps the upload
                parent = target.rsplit("/", 1)[0]
                self.fs.makedirs(parent, exist_ok=True)
                self.fs.put_file(str(path), target)
                digest = digest_future.result()
        self._verify_uploaded(target, digest)
        return FileEntry(rel, digest.size_bytes, digest.sha256)

    def _verify_uploaded(self, target: str, digest: FileDigest) -> None:
        info = self.fs.info(target)
        size = int(info.get("size") or 0)
        if size != digest.size_bytes:
            raise StorageError(
                _("Upload of {target} is {size} bytes, the local file {local}").format(
                    target=target, size=size, local=digest.size_bytes
                ),
                why=_("the upload was cut short or the file changed while it was uploaded"),
                fix=_("nothing: gpuwise uploads it again on its next pass"),
            )
        etag = info.get("ETag") or info.get("etag")
        ok = etag_matches(str(etag), digest) if etag else None
        if not ok:  # cannot tell (no MD5 ETag), or an ETag that is not an MD5 (SSE-KMS): read it back
            ok = self._remote_sha256(target) == digest.sha256
        if not ok:
            raise StorageError(
                _("Upload of {target} does not match the local file's checksum").format(target=target),
                why=_("the file changed while it was uploaded, or the bytes were damaged on the way"),
                fix=_("nothing: gpuwise uploads it again on its next pass"),
            )

    def _remote_sha256(self, target: str) -> str:
        h = hashlib.sha256()
        with self.fs.open(target, "rb", block_size=READ_BYTES) as fh:
            while chunk := fh.read(READ_BYTES):
                h.update(chunk)
        return h.hexdigest()

    def _write_manifest(self, m: Manifest) -> None:
        final = self._path(m.run_id, m.name, MANIFEST_NAME)
        data = m.to_json().encode("utf-8")
        if self.protocol in ("file", "local"):
            # a mounted volume: write beside, then rename, so a reader never sees half a manifest
            tmp = self._path(m.run_id, m.name, f".{MANIFEST_NAME}.{os.getpid()}.tmp")
            self.fs.pipe_file(tmp, data)
            self.fs.mv(tmp, final)
        else:
            self.fs.pipe_file(final, data)  # one PUT: an object appears whole or not at all

    # ----- verify, download, delete

    def verify(self, m: Manifest) -> list[str]:
        """Read every file back and compare its SHA-256 with the manifest. Returns the problems."""
        problems: list[str] = []
        with self._translated(N_("verify")):
            for f in m.files:
                target = self._path(m.run_id, m.name, f.path)
                try:
                    got = self._remote_sha256(target)
                except FileNotFoundError:
                    problems.append(_("{path} missing").format(path=f.path))
                    continue
                if got != f.sha256:
                    problems.append(_("{path} checksum differs").format(path=f.path))
        return problems

    def download(self, m: Manifest, dest_dir: Path) -> Path:
        """Download `m` into `dest_dir` (verified, then renamed into place). Returns the checkpoint's path."""
        final = dest_dir / m.name
        partial = dest_dir / f".{m.name}.{os.getpid()}.partial"
        try:
            dest_dir.mkdir(parents=True, exist_ok=True)
            partial.mkdir(exist_ok=True)
            with self._translated(N_("download from")):
                for f in m.files:
                    local = partial / f.path
                    local.parent.mkdir(parents=True, exist_ok=True)
                    self.fs.get_file(self._path(m.run_id, m.name, f.path), str(local))
                    if sha256_of(local) != f.sha256:
                        raise StorageError(
                            _("Downloaded {name}/{path} does not match its manifest's checksum").format(
                                name=m.name, path=f.path
                            ),
                            why=_("the remote copy was damaged or changed after it was uploaded"),
                            fix=_(
                                "run `gpuwise checkpoints verify {url}` and resume from another one"
                            ).format(url=self.url),
                        )
            for f in m.files:  # the checkpoint keeps its own time, so "newest" means the same everywhere
                os.utime(partial / f.path, (m.created_at, m.created_at))
            if m.is_dir:
                (partial / MANIFEST_NAME).write_text(m.to_json(), encoding="utf-8")
                if final.exists():
                    shutil.rmtree(final)
                partial.replace(final)
            else:
                (partial / m.name).replace(final)
            os.utime(final, (m.created_at, m.created_at))
        except OSError as exc:
            raise storage_error(N_("download to"), str(dest_dir), exc) from exc
        finally:
            if partial.exists():
                shutil.rmtree(partial, ignore_errors=True)
        return final

    def delete(self, m: Manifest) -> None:
        """Manifest first (so the checkpoint stops being listed), then its files."""
        with self._translated(N_("delete from")):
            self.fs.rm_file(self._path(m.run_id, m.name, MANIFEST_NAME))
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(self._path(m.run_id, m.name), recursive=True)


def remove_local(ckpt: LocalCheckpoint) -> None:
    if ckpt.is_dir:
        shutil.rmtree(ckpt.path, ignore_errors=True)
    else:
        ckpt.path.unlink(missing_ok=True)


def retry_delays(first_s: float = 2.0, most_s: float = 60.0) -> Iterator[float]:
    """Exponential backoff for failed uploads: 2, 4, 8 … capped at a minute."""
    delay = first_s
    while True:
        yield delay
        delay = min(most_s, delay * 2)


def now_s() -> float:
    return time.time()


Clock = Callable[[], float]
