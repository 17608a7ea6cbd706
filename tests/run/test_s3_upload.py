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

    def send(self, bucket: str, key: str, data: bytes, part: tuple[str, int] | None) -> dict[str, str]:
        if part is not None and part[1] == 2:
            data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
        return super().send(bucket, key, data, part)


class Rewriting(S3Uploader):
    """Writes to the file while its first part is on the way."""

    def send(self, bucket: str, key: str, data: bytes, part: tuple[str, int] | None) -> dict[str, str]:
        if part is not None and part[1] == 1:
            path = Path(os.environ["GPUWISE_TEST_FILE"])
            path.write_bytes(path.read_bytes()[:-1] + b"!")
            os.utime(path, ns=(1, 1))  # a new modification time, whatever the clock's resolution
        return super().send(bucket, key, data, part)


class Counting(S3Uploader):
    in_flight = 0
    most = 0
    lock = threading.Lock()

    def send(self, bucket: str, key: str, data: bytes, part: tuple[str, int] | None) -> dict[str, str]:
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


def test_a_multipart_upload_names_crc32_as_boto3_does(s3: S3, tmp_path: Path) -> None:
    """The object keeps a checksum composed of its parts' CRC32s (each part's checksum repeated at
    completion), so the endpoint need not checksum the joined object again."""
    ck = _checkpoint(tmp_path, 2 * PART + 3)
    up = S3Uploader(CheckpointStore(s3.url()).fs, PART, connections=10)
    up.upload(ck / "w.bin", f"{s3.bucket}/runs/crc/w.bin", streams=2)
    head = s3.client.head_object(Bucket=s3.bucket, Key="runs/crc/w.bin", ChecksumMode="ENABLED")
    assert head.get("ChecksumCRC32"), head  # none before: the object had no checksum of its parts


def test_a_client_that_checksums_only_when_required_names_none(s3: S3, tmp_path: Path) -> None:
    """S3-compatible stores that reject checksum headers are used with request_checksum_calculation =
    "when_required": then no algorithm is named, as in boto3's transfer manager."""
    ck = _checkpoint(tmp_path, 2 * PART + 3)
    fs = CheckpointStore(s3.url()).fs
    fs.config_kwargs = {**(fs.config_kwargs or {}), "request_checksum_calculation": "when_required"}
    up = S3Uploader(fs, PART, connections=10)
    up.upload(ck / "w.bin", f"{s3.bucket}/runs/plain/w.bin", streams=2)
    head = s3.client.head_object(Bucket=s3.bucket, Key="runs/plain/w.bin", ChecksumMode="ENABLED")
    assert "ChecksumCRC32" not in head
