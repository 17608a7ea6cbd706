"""The S3 upload path that reads each byte once (gpuwise.run.s3upload) against moto's server on 127.0.0.1:
bytes damaged on the way are still caught, a file that changes while it goes up is refused, no manifest is
written for either, and the parts held in memory stay within the bound."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from run_support import S3

from gpuwise.errors import StorageError
from gpuwise.run.manifest import MANIFEST_NAME
from gpuwise.run.s3upload import S3Uploader
from gpuwise.run.store import CheckpointStore, scan_local

MIB = 1024 * 1024
PART = 5 * MIB  # S3's smallest part


class Damaging(S3Uploader):
    """Flips one byte of the second part after it was hashed: what a bad NIC or proxy would do."""

    def send(self, bucket: str, key: str, data: bytes, part: tuple[str, int] | None) -> str:
        if part is not None and part[1] == 2:
            data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
        return super().send(bucket, key, data, part)


class Rewriting(S3Uploader):
    """Writes to the file while its first part is on the way."""

    def send(self, bucket: str, key: str, data: bytes, part: tuple[str, int] | None) -> str:
        if part is not None and part[1] == 1:
            path = Path(os.environ["GPUWISE_TEST_FILE"])
            path.write_bytes(path.read_bytes()[:-1] + b"!")
            os.utime(path, ns=(1, 1))  # a new modification time, whatever the clock's resolution
        return super().send(bucket, key, data, part)


class Counting(S3Uploader):
    in_flight = 0
    most = 0
    lock = threading.Lock()

    def send(self, bucket: str, key: str, data: bytes, part: tuple[str, int] | None) -> str:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            return super().send(bucket, key, data, part)
        finally:
            with self.lock:
                self.in_flight -= 1


def _checkpoint(tmp_path: Path, size: int) -> Path:
    ck = tmp_path / "ck" / "step-1"
    ck.mkdir(parents=True)
    (ck / "w.bin").write_bytes(os.urandom(size))
    (ck / "COMPLETE").write_text("")
    return ck


def _store(s3: S3, cls: type[S3Uploader]) -> CheckpointStore:
    store = CheckpointStore(s3.url(), part_bytes=PART)
    store._s3 = cls(store.fs, PART, connections=10)
    return store


def test_a_part_damaged_on_the_way_is_caught_and_no_manifest_written(s3: S3, tmp_path: Path) -> None:
    _checkpoint(tmp_path, 3 * PART + 7)
    store = _store(s3, Damaging)
    with pytest.raises(StorageError, match="does not match the local file's checksum"):
        store.upload(scan_local(tmp_path / "ck")[0], "r")
    assert f"runs/r/step-1/{MANIFEST_NAME}" not in s3.keys("runs/r/")


def test_a_file_changed_while_it_goes_up_is_refused(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ck = _checkpoint(tmp_path, 2 * PART + 1)
    monkeypatch.setenv("GPUWISE_TEST_FILE", str(ck / "w.bin"))
    store = _store(s3, Rewriting)
    with pytest.raises(StorageError, match="changed while it was uploaded"):
        store.upload(scan_local(tmp_path / "ck")[0], "r")
    assert f"runs/r/step-1/{MANIFEST_NAME}" not in s3.keys("runs/r/")


def test_parts_in_flight_stay_within_the_streams_given(s3: S3, tmp_path: Path) -> None:
    ck = _checkpoint(tmp_path, 6 * PART)
    up = Counting(CheckpointStore(s3.url()).fs, PART, connections=10)
    digest = up.upload(ck / "w.bin", f"{s3.bucket}/runs/one/w.bin", streams=2)
    assert 1 <= up.most <= 2 and len(digest.part_md5s) == 6
    head = s3.client.head_object(Bucket=s3.bucket, Key="runs/one/w.bin")
    assert head["ContentLength"] == 6 * PART and head["ETag"].strip('"').endswith("-6")
