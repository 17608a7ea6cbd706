"""Checkpoints against a real S3-compatible endpoint (moto's server on 127.0.0.1) through s3fs: upload,
list, verify, resume, prune, a SIGKILL in the middle of an upload, and the faults (wrong credentials, an
unreachable endpoint) that must not stop the job or print a secret."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from run_fakes import TRAINER, job, json_last_line, start_gpuwise
from run_support import FAKE_KEY_ID, FAKE_SECRET, S3, Result

from gpuwise.errors import StorageError
from gpuwise.run.manifest import MANIFEST_NAME
from gpuwise.run.store import CheckpointStore, redact, scan_local


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def test_upload_list_verify_and_resume_on_a_new_machine(
    s3: S3, tmp_path: Path, gw: Callable[..., Result]
) -> None:
    url = s3.url()
    first = gw(
        "run", "--preemption", "off", "--sync", url, "--run-id", "r1", "--poll-s", "0.2", "--json",
        "--checkpoint-dir", str(tmp_path / "machine1"), "--", *job(TRAINER),
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    summary = json_last_line(first.stdout)
    assert summary["flushed"] is True and summary["checkpoints_uploaded"] >= 1
    keys = s3.keys("runs/r1/")
    assert f"runs/r1/step-3/{MANIFEST_NAME}" in keys
    assert "runs/r1/step-3/COMPLETE" in keys

    listed = gw("checkpoints", "list", url, "--json")
    assert listed.returncode == 0, listed.stderr
    names = [c["name"] for c in json.loads(listed.stdout)["checkpoints"]]
    assert names[-1] == "step-3" and set(names) <= {"step-1", "step-2", "step-3"}

    verified = gw("checkpoints", "verify", url, "--run-id", "r1", "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True

    # a relaunch on another machine (empty checkpoint dir) downloads the newest and resumes from it
    second = gw(
        "run", "--preemption", "off", "--sync", url, "--run-id", "r1", "--resume",
        "--checkpoint-dir", str(tmp_path / "machine2"), "--", *job(TRAINER),
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert f"START 3 {tmp_path / 'machine2' / 'step-3'}" in second.stdout
    assert json.loads((tmp_path / "machine2" / "step-3" / "state.json").read_text()) == {"step": 3}


def test_verify_finds_a_damaged_remote_file_and_pull_refuses_it(
    s3: S3, tmp_path: Path, gw: Callable[..., Result]
) -> None:
    ck = tmp_path / "ck"
    (ck / "step-1").mkdir(parents=True)
    (ck / "step-1" / "w.bin").write_bytes(b"x" * 1000)
    (ck / "step-1" / "COMPLETE").write_text("")
    store = CheckpointStore(s3.url())
    store.upload(scan_local(ck)[0], "r2")
    s3.client.put_object(Bucket=s3.bucket, Key="runs/r2/step-1/w.bin", Body=b"y" * 1000)  # same size
    r = gw("checkpoints", "verify", s3.url(), "--run-id", "r2")
    assert r.returncode == 1 and "checksum differs" in r.stdout
    pulled = gw("checkpoints", "pull", s3.url(), "--run-id", "r2", "--to", str(tmp_path / "p"))
    assert pulled.returncode == 1 and "does not match its manifest" in pulled.stderr
    assert not (tmp_path / "p" / "step-1").exists()  # nothing half-written


def test_only_the_newest_k_are_kept_and_only_uploaded_ones_are_removed_locally(
    s3: S3, tmp_path: Path, gw: Callable[..., Result]
) -> None:
    ck = tmp_path / "ck"
    r = gw(
        "run", "--preemption", "off", "--sync", s3.url(), "--run-id", "r3", "--keep", "2", "--poll-s", "0.1",
        "--checkpoint-dir", str(ck), "--", *job(TRAINER),
        env=_env(TRAINER_EVERY="0.8"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    remote = {k.split("/")[2] for k in s3.keys("runs/r3/") if k.endswith(MANIFEST_NAME)}
    assert remote == {"step-2", "step-3"}
    assert {p.name for p in ck.iterdir()} >= {"step-2", "step-3"}


def test_sigkill_mid_upload_leaves_the_previous_checkpoint_to_resume(
    s3: S3, tmp_path: Path, gw: Callable[..., Result]
) -> None:
    """gpuwise dies (SIGKILL) while step-2's files are going up: step-2 is never listed and the next
    --resume on a new machine starts from step-1."""
    ck = tmp_path / "machine1"
    env = _env(
        TRAINER_STEPS="-1", TRAINER_EVERY="1.5", TRAINER_BYTES=str(2 * 1024 * 1024), TRAINER_SHARDS="8"
    )
    p = start_gpuwise(
        "run", "--preemption", "off", "--sync", s3.url(), "--run-id", "r4", "--poll-s", "0.1",
        "--checkpoint-dir", str(ck), "--", *job(TRAINER), env=env,
    )  # fmt: skip
    pid_file = Path(os.environ["GPUWISE_DATA_DIR"]) / "run" / f"r4@{p.pid}.pid"
    job_pid = None
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and job_pid is None:
            keys = s3.keys("runs/r4/")
            step2 = [k for k in keys if k.startswith("runs/r4/step-2/")]
            if step2 and f"runs/r4/step-2/{MANIFEST_NAME}" not in keys:
                job_pid = int(pid_file.read_text().split()[1])
                p.send_signal(signal.SIGKILL)
            time.sleep(0.01)
        assert job_pid is not None, "never caught step-2 mid-upload"
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
        if job_pid is not None:  # the job has its own process group and outlives a SIGKILLed gpuwise
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job_pid, signal.SIGKILL)
        p.communicate(timeout=10)
    keys = s3.keys("runs/r4/")
    assert f"runs/r4/step-2/{MANIFEST_NAME}" not in keys
    assert any(k.startswith("runs/r4/step-2/") for k in keys)  # half-uploaded files are there ...
    listed = json.loads(gw("checkpoints", "list", s3.url(), "--json").stdout)["checkpoints"]
    assert [c["name"] for c in listed] == ["step-1"]  # ... but never listed
    again = gw(
        "run", "--preemption", "off", "--sync", s3.url(), "--run-id", "r4", "--resume",
        "--checkpoint-dir", str(tmp_path / "machine2"), "--",
        *job("import os; print('FROM', os.environ['GPUWISE_RESUME_FROM'])"),
    )  # fmt: skip
    assert f"FROM {tmp_path / 'machine2' / 'step-1'}" in again.stdout


def test_missing_credentials_do_not_stop_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s3: S3, gw: Callable[..., Result]
) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    r = gw(
        "run", "--preemption", "off", "--sync", s3.url(), "--run-id", "r5", "--poll-s", "0.2",
        "--checkpoint-dir", str(tmp_path / "ck"), "--", *job(TRAINER),
    )  # fmt: skip
    assert r.returncode == 0 and "DONE 3" in r.stdout  # the job ran to its end
    assert "credentials" in r.stderr and "To fix:" in r.stderr
    assert "the newest checkpoint is only local" in r.stderr
    assert "Traceback" not in r.stderr


# moto's server checks credentials against its own IAM once INITIAL_NO_AUTH_ACTION_COUNT requests have gone
# unchecked; a process of its own, so the check cannot reach the shared server above.
STRICT_MOTO = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print("%s:%d" % server.get_host_and_port(), flush=True)
sys.stdin.read()
server.stop()
"""


@pytest.fixture
def strict_s3() -> Iterator[str]:
    """An S3 endpoint on 127.0.0.1 that lets one request (creating bucket `locked`) through and then
    rejects any key it did not issue, as AWS rejects a wrong or revoked key."""
    import boto3

    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", STRICT_MOTO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        endpoint = "http://" + proc.stdout.readline().strip()
        boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id=FAKE_KEY_ID, aws_secret_access_key=FAKE_SECRET,
        ).create_bucket(Bucket="locked")  # fmt: skip
        yield endpoint
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


def test_wrong_credentials_are_one_clear_warning_and_the_job_goes_on(
    strict_s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gw: Callable[..., Result]
) -> None:
    """Rejected keys are found when the first checkpoint goes up, not at start: gpuwise does not probe the
    bucket first (credentials that expire and are renewed mid-run take the same path, and a job must not
    die of them). The job runs on; the error says access was denied and how to fix it, and never shows
    the key."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    r = gw(
        "run", "--preemption", "off", "--sync", "s3://locked/runs", "--endpoint-url", strict_s3,
        "--run-id", "r7", "--poll-s", "0.2", "--checkpoint-dir", str(tmp_path / "ck"), "--", *job(TRAINER),
    )  # fmt: skip
    assert r.returncode == 0 and "DONE 3" in r.stdout  # the job ran to its end, with its own exit code
    assert "access denied" in r.stderr and "To fix: check AWS_ACCESS_KEY_ID" in r.stderr
    assert "the newest checkpoint is only local" in r.stderr
    assert "Traceback" not in r.stderr
    assert FAKE_SECRET not in r.stdout + r.stderr


def test_an_unreachable_endpoint_is_retried_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gw: Callable[..., Result]
) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    r = gw(
        "run", "--preemption", "off", "--sync", "s3://nobucket/p", "--endpoint-url", f"http://127.0.0.1:{port}",
        "--poll-s", "0.2", "--checkpoint-dir", str(tmp_path / "ck"), "--", *job(TRAINER),
    )  # fmt: skip
    assert r.returncode == 0 and "DONE 3" in r.stdout
    assert "upload of step-" in r.stderr and "failed" in r.stderr and "retrying in" in r.stderr
    assert "Traceback" not in r.stderr
    assert FAKE_SECRET not in r.stdout + r.stderr and FAKE_KEY_ID not in r.stdout + r.stderr


def test_a_missing_bucket_is_one_clear_message(s3: S3, tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    (ck / "step-1").mkdir(parents=True)
    (ck / "step-1" / "COMPLETE").write_text("")
    store = CheckpointStore(f"s3://{s3.bucket}-missing/x")
    with pytest.raises(StorageError) as info:
        store.upload(scan_local(ck)[0], "r")
    text = info.value.render()
    assert "To fix:" in text and FAKE_SECRET not in text


def test_redact_hides_credentials() -> None:
    env = {"AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "AWS_ACCESS_KEY_ID": "AKIA1234"}
    assert redact("denied for AKIA1234 with s3cr3t-value", env) == "denied for *** with ***"


def test_a_mounted_volume_is_a_target(tmp_path: Path, gw: Callable[..., Result]) -> None:
    vol = tmp_path / "volume"
    vol.mkdir()
    r = gw(
        "run", "--preemption", "off", "--sync", f"file://{vol}", "--run-id", "v1", "--json",
        "--checkpoint-dir", str(tmp_path / "ck"), "--", *job(TRAINER),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (vol / "v1" / "step-3" / MANIFEST_NAME).is_file()
    assert not list(vol.rglob(".*.tmp"))
    v = gw("checkpoints", "verify", f"file://{vol}", "--json")
    assert v.returncode == 0 and json.loads(v.stdout)["ok"]
