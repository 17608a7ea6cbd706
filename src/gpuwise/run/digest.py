"""What one checkpoint file's upload is checked against: its SHA-256 (for the manifest) and the MD5 form its
S3 ETag takes, computed in one pass over the bytes (pure: bytes and open files in, digests out)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

PART_BYTES = 64 * 1024 * 1024  # multipart part size for S3 uploads (the ETag check needs to know it)
READ_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class FileDigest:
    """What the upload check needs of one local file: its SHA-256 (for the manifest) and the one MD5 form
    its S3 ETag will take (`md5` for a single PUT, `part_md5s` for a multipart upload; the other is empty)."""

    sha256: str
    md5: str
    part_md5s: tuple[bytes, ...]
    size_bytes: int


def sent_whole(size_bytes: int, part_bytes: int = PART_BYTES) -> bool:
    """Whether s3fs sends a file of this size as one PUT rather than in parts (its rule in `_put_file`:
    under two parts' worth)."""
    return size_bytes < 2 * part_bytes


def _hash_whole(fh: BinaryIO, sha: Any) -> tuple[str, int]:
    """(MD5 hex of the rest of `fh`, bytes read), feeding `sha` the same bytes."""
    md5 = hashlib.md5(usedforsecurity=False)
    size = 0
    while chunk := fh.read(READ_BYTES):
        sha.update(chunk)
        md5.update(chunk)
        size += len(chunk)
    return md5.hexdigest(), size


def _hash_parts(fh: BinaryIO, sha: Any, part_bytes: int) -> tuple[tuple[bytes, ...], int]:
    """(MD5 of each `part_bytes` part of the rest of `fh`, bytes read), feeding `sha` the same bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        md5, left = hashlib.md5(usedforsecurity=False), part_bytes
        while left and (chunk := fh.read(min(READ_BYTES, left))):
            sha.update(chunk)
            md5.update(chunk)
            left -= len(chunk)
        if left == part_bytes:
            return tuple(parts), size  # the end of the file
        parts.append(md5.digest())
        size += part_bytes - left
        if left:
            return tuple(parts), size  # a short last part


def digest_file(path: Path, part_bytes: int = PART_BYTES) -> FileDigest:
    """SHA-256 plus one MD5 pass, not two: MD5 is the slowest hash here (about half SHA-256's speed with
    SHA-NI), and a file's ETag is either its whole MD5 or its parts' MD5s, never both, so only that one is
    computed. Should the guess of how it is sent be wrong, `etag_matches` says "cannot tell" and the file is
    read back instead."""
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        if sent_whole(os.fstat(fh.fileno()).st_size, part_bytes):
            md5, size = _hash_whole(fh, sha)
            return FileDigest(sha.hexdigest(), md5, (), size)
        parts, size = _hash_parts(fh, sha, part_bytes)
    return FileDigest(sha.hexdigest(), "", parts, size)


def etag_matches(etag: str, d: FileDigest) -> bool | None:
    """True/False when `etag` is an MD5 ETag we can check; None when it is not one (SSE-KMS, other stores)
    or not the form the digest holds."""
    tag = etag.strip('"').lower()
    if "-" not in tag:
        return tag == d.md5 if len(tag) == 32 and d.md5 else None
    body, _, count = tag.partition("-")
    if not count.isdigit() or int(count) != len(d.part_md5s) or not d.part_md5s:
        return None  # another part size than ours: cannot tell from the ETag
    expected = hashlib.md5(b"".join(d.part_md5s), usedforsecurity=False).hexdigest()
    return body == expected


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(READ_BYTES):
            h.update(chunk)
    return h.hexdigest()
