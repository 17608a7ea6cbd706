"""Preemption notices from a fake metadata server on 127.0.0.1: each provider's watcher reads its documented
answer, and end to end the job gets SIGTERM, writes a final checkpoint inside the grace period, and that
checkpoint is uploaded before gpuwise exits."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import pytest
from run_fakes import TRAINER, job, json_last_line, start_gpuwise
from run_support import FakeMetadata

from gpuwise.idle.providers.metadata import MetadataEndpoints, MetadataError
from gpuwise.run.manifest import MANIFEST_NAME
from gpuwise.run.watchers import AwsSpotWatcher, AzureWatcher, GcpWatcher, approve_azure_event

AWS_ACTION = "/latest/meta-data/spot/instance-action"
AWS_REBALANCE = "/latest/meta-data/events/recommendations/rebalance"
GCP_PREEMPTED = "/computeMetadata/v1/instance/preempted"
GCP_MAINTENANCE = "/computeMetadata/v1/instance/maintenance-event"
AZURE_EVENTS = "/metadata/scheduledevents?api-version=2020-07-01"

QUIET = {
    "aws": {},  # 404 for both notices
    "gcp": {GCP_PREEMPTED: (200, "FALSE"), GCP_MAINTENANCE: (200, "NONE")},
    "azure": {AZURE_EVENTS: (200, json.dumps({"DocumentIncarnation": 1, "Events": []}))},
}
NOTICE = {
    "aws": {AWS_ACTION: (200, json.dumps({"action": "terminate", "time": "2026-12-01T15:00:00Z"}))},
    "gcp": {GCP_PREEMPTED: (200, "TRUE"), GCP_MAINTENANCE: (200, "NONE")},
    "azure": {
        AZURE_EVENTS: (
            200,
            json.dumps(
                {
                    "DocumentIncarnation": 2,
                    "Events": [
                        {
                            "EventId": "A1",
                            "EventType": "Preempt",
                            "ResourceType": "VirtualMachine",
                            "Resources": ["vm1"],
                            "EventStatus": "Scheduled",
                            "NotBefore": "Tue, 01 Dec 2026 15:00:30 GMT",
                        }
                    ],
                }
            ),
        )
    },
}
WATCHER = {"aws": AwsSpotWatcher, "gcp": GcpWatcher, "azure": AzureWatcher}


def test_the_azure_approval_is_never_sent_through_a_proxy(
    metadata: FakeMetadata, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy in the environment (common on corporate VMs) must not swallow the approval: the metadata
    service is link-local and answers only direct requests. The proxy named here refuses connections."""
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    urllib.request.install_opener(None)  # urllib reads the proxy variables when it builds its opener
    try:
        metadata.routes[AZURE_EVENTS] = (200, "")
        assert approve_azure_event(MetadataEndpoints.all_at(metadata.url), "A2") is True
    finally:
        urllib.request.install_opener(None)
    assert [json.loads(b) for _, _, b in metadata.posts] == [{"StartRequests": [{"EventId": "A2"}]}]


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure"])
def test_each_watcher_is_quiet_until_its_notice(provider: str, metadata: FakeMetadata) -> None:
    w = WATCHER[provider](MetadataEndpoints.all_at(metadata.url))
    metadata.routes.update(QUIET[provider])
    assert w.poll() is None
    metadata.routes.update(NOTICE[provider])
    notice = w.poll()
    assert notice is not None and notice.kind == "terminate" and notice.provider == provider


def test_aws_uses_the_imdsv2_token_and_reports_a_rebalance_once(metadata: FakeMetadata) -> None:
    w = AwsSpotWatcher(MetadataEndpoints.all_at(metadata.url))
    metadata.routes[AWS_REBALANCE] = (200, json.dumps({"noticeTime": "2026-12-01T14:58:00Z"}))
    first = w.poll()
    assert first is not None and first.kind == "rebalance"
    assert w.poll() is None  # a hint, said once
    puts = [r for r in metadata.requests if r[0] == "PUT"]
    assert len(puts) == 1 and puts[0][2].get("x-aws-ec2-metadata-token-ttl-seconds")
    gets = [r for r in metadata.requests if r[0] == "GET"]
    assert all(r[2].get("x-aws-ec2-metadata-token") == metadata.token for r in gets)


def test_gcp_live_migration_is_not_a_preemption(metadata: FakeMetadata) -> None:
    metadata.routes.update(
        {GCP_PREEMPTED: (200, "FALSE"), GCP_MAINTENANCE: (200, "MIGRATE_ON_HOST_MAINTENANCE")}
    )
    assert GcpWatcher(MetadataEndpoints.all_at(metadata.url)).poll() is None
    metadata.routes[GCP_MAINTENANCE] = (200, "TERMINATE_ON_HOST_MAINTENANCE")
    notice = GcpWatcher(MetadataEndpoints.all_at(metadata.url)).poll()
    assert notice is not None and notice.kind == "terminate"


def test_azure_freeze_is_not_a_preemption_and_garbage_is_an_error(metadata: FakeMetadata) -> None:
    w = AzureWatcher(MetadataEndpoints.all_at(metadata.url))
    metadata.routes[AZURE_EVENTS] = (200, json.dumps({"Events": [{"EventType": "Freeze"}]}))
    assert w.poll() is None
    metadata.routes[AZURE_EVENTS] = (200, "<html>")
    with pytest.raises(MetadataError):
        w.poll()


def test_an_azure_approval_nobody_takes_is_a_warning_not_a_failure(metadata: FakeMetadata) -> None:
    """The approval only shortens the wait: a metadata service that refuses it (or is gone) must not
    turn a clean exit into an error."""
    ep = MetadataEndpoints.all_at(metadata.url)
    metadata.routes[AZURE_EVENTS] = (400, "bad request")
    assert approve_azure_event(ep, "A1") is False
    metadata.routes[AZURE_EVENTS] = (200, "")
    assert approve_azure_event(ep, "A1") is True
    assert [json.loads(b) for _, _, b in metadata.posts] == [{"StartRequests": [{"EventId": "A1"}]}] * 2


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure"])
def test_a_notice_stops_the_job_and_its_final_checkpoint_lands_before_exit(
    provider: str, metadata: FakeMetadata, tmp_path: Path
) -> None:
    vol = tmp_path / "volume"
    vol.mkdir()
    metadata.routes.update(QUIET[provider])
    # --poll-s 60: the background pass never runs here, so the final checkpoint can only land through the
    # flush gpuwise does before it exits
    env = dict(os.environ, TRAINER_STEPS="-1", TRAINER_EVERY="0.3")
    grace_s = 20
    p = start_gpuwise(
        "run", "--preemption", provider, "--metadata-url", metadata.url, "--sync", f"file://{vol}",
        "--run-id", "pre", "--grace-s", str(grace_s), "--poll-s", "60", "--json",
        "--checkpoint-dir", str(tmp_path / "ck"), "--", *job(TRAINER), env=env,
    )  # fmt: skip
    assert p.stdout is not None
    try:
        while "SAVED 2" not in (line := p.stdout.readline()):
            assert line, "the job ended before its second checkpoint"
        t0 = time.monotonic()
        metadata.routes.update(NOTICE[provider])
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    elapsed = time.monotonic() - t0
    assert p.returncode == 0, err
    final = next(x for x in out.splitlines() if x.startswith("FINAL")).split()[1]
    assert (vol / "pre" / f"step-{final}" / MANIFEST_NAME).is_file()  # uploaded before gpuwise exited
    summary = json_last_line(out)
    assert summary["preemptions"] == 1 and summary["terminated_by"] == f"{provider} preemption notice"
    assert summary["flushed"] is True
    assert elapsed < grace_s
    if provider == "azure":  # the event is approved early, and only once the final checkpoint has landed
        landed_at = (vol / "pre" / f"step-{final}" / MANIFEST_NAME).stat().st_mtime
        ((acked_at, path, body),) = metadata.posts
        assert path == AZURE_EVENTS and json.loads(body) == {"StartRequests": [{"EventId": "A1"}]}
        assert acked_at >= landed_at
        assert any(r[0] == "POST" and r[2].get("metadata") == "true" for r in metadata.requests)
    else:
        assert not metadata.posts
