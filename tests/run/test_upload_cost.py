"""What one checkpoint upload costs besides sending the bytes: one MD5 pass per file (in the form its S3
ETag takes), no read-back when the ETag already proves the upload, a read timeout that does not make a
busy endpoint receive every part twice, and a bound on the parts held in memory at once."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from run_support import S3

from gpuwise.run.endpoints import S3_READ_TIMEOUT_S
from gpuwise.run.manifest import MANIFEST_NAME
from gpuwise.run.store import (
    PARTS_IN_FLIGHT,
    CheckpointStore,
    FileEntry,
    digest_file,
    etag_matches,
    scan_local,
)

MIB = 1024 * 1024


def test_each_file_gets_one_md5_pass_in_the_form_its_etag_takes(tmp_path: Path) -> None:
    """MD5 is the slowest hash here; computing both the whole-file and the per-part form doubled it."""
    part = 1000
    for size in (0, 1, part, 2 * part - 1):  # sent as one PUT: the ETag is the file's MD5
        data = os.urandom(size)
        (tmp_path / "f").write_bytes(data)
        d = digest_file(tmp_path / "f", part)
        assert (d.md5, d.part_md5s) == (hashlib.md5(data).hexdigest(), ())
        assert d.sha256 == hashlib.sha256(data).hexdigest() and d.size_bytes == size
        assert etag_matches(f'"{d.md5}"', d) is True
    for size in (2 * part, 2 * part + 1, 5 * part - 7):  # multipart: the MD5 of the parts' MD5s
        data = os.urandom(size)
        (tmp_path / "f").write_bytes(data)
        d = digest_file(tmp_path / "f", part)
        parts = [hashlib.md5(data[i : i + part]).digest() for i in range(0, size, part)]
        assert (d.md5, d.part_md5s) == ("", tuple(parts))
        assert d.sha256 == hashlib.sha256(data).hexdigest() and d.size_bytes == size
        assert etag_matches(f'"{hashlib.md5(b"".join(parts)).hexdigest()}-{len(parts)}"', d) is True
        assert etag_matches(hashlib.md5(data).hexdigest(), d) is None  # not the form held: read back


class CountingStore(CheckpointStore):
    """Counts read-backs and the part streams each file was given."""

    read_backs = 0
    streams: list[int]

    def _remote_sha256(self, target: str) -> str:
        self.read_backs += 1
        return super()._remote_sha256(target)

    def _upload_one(self, run_id: str, name: str, rel: str, path: Path, part_streams: int) -> FileEntry:
        self.streams.append(part_streams)
        return super()._upload_one(run_id, name, rel, path, part_streams)


def test_an_s3_upload_is_proved_by_its_etags_without_reading_anything_back(s3: S3, tmp_path: Path) -> None:
    ck = tmp_path / "ck" / "step-1"
    ck.mkdir(parents=True)
    (ck / "big.bin").write_bytes(os.urandom(11 * MIB))  # three 5 MiB parts (S3's smallest part size)
    (ck / "small.bin").write_bytes(os.urandom(1000))  # one PUT
    (ck / "COMPLETE").write_text("")
    store = CountingStore(s3.url(), part_bytes=5 * MIB)
    store.streams = []
    m = store.upload(scan_local(tmp_path / "ck")[0], "r")
    assert store.read_backs == 0
    assert f"runs/r/step-1/{MANIFEST_NAME}" in s3.keys("runs/r/")
    assert store.verify(m) == []  # and what went up is what the manifest says


def test_s3_waits_a_minute_for_an_answer_and_holds_a_bounded_number_of_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """s3fs's 15 s read timeout made a busy endpoint get the same part (or the same multipart
    completion) again while it still worked on the first; its 10 parts per file held 2.5 GiB in memory
    with 4 files going up at once."""
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3_store = CheckpointStore("s3://bucket/p", endpoint_url="http://127.0.0.1:9")
    assert s3_store.fs.config_kwargs["read_timeout"] == S3_READ_TIMEOUT_S == 60.0
    vol = tmp_path / "vol"
    vol.mkdir()
    for files in (1, 2, 4, 9):
        ck = tmp_path / f"ck{files}" / "step-1"
        ck.mkdir(parents=True)
        for i in range(files):
            (ck / f"w{i}.bin").write_bytes(b"w")
        (ck / "COMPLETE").write_text("")
        store = CountingStore(f"file://{vol}")
        store.streams = []
        store.upload(scan_local(ck.parent)[0], f"r{files}")
        at_once = min(store.workers, files + 1)  # + COMPLETE
        assert max(store.streams) * at_once <= PARTS_IN_FLIGHT
        assert min(store.streams) >= PARTS_IN_FLIGHT // at_once  # as many as the bound allows
