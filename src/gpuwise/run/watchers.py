"""Preemption notices from the cloud metadata services (the edge), polled by one background thread.

* AWS (IMDSv2: a session token first): `spot/instance-action` answers 404 until an interruption is
  scheduled, then `{"action": "terminate"|"stop"|"hibernate", "time": …}` two minutes ahead (EC2 user
  guide, "Spot Instance interruption notices"); `events/recommendations/rebalance` answers
  `{"noticeTime": …}` when the instance is at elevated risk (a hint: gpuwise uploads, the job goes on).
* GCP: `instance/preempted` turns `TRUE` about 30 s before a Spot/preemptible VM stops (Compute Engine
  docs, "Preemption process"); `instance/maintenance-event` says `TERMINATE_ON_HOST_MAINTENANCE` before a
  host event that stops the VM (`MIGRATE_ON_HOST_MAINTENANCE` is logged only).
* Azure: Scheduled Events list a `Preempt` event (Spot eviction, at least 30 s ahead) or `Terminate`
  (Azure docs, "Azure Metadata Service: Scheduled Events for Linux VMs"). Once the final checkpoint has
  landed, gpuwise approves the event (a POST of `{"StartRequests": [{"EventId": …}]}` to the same URL, same
  docs), so Azure need not hold the VM until NotBefore.

RunPod and most GPU marketplaces give no notice at all: there only the checkpoint interval protects the
work (see docs/run.md). The metadata HTTP code is the idle stopper's (`gpuwise.idle.actions`); base URLs are
injectable so tests serve notices from 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gpuwise import httpclient
from gpuwise.idle.providers.metadata import (
    MetadataEndpoints,
    MetadataError,
    detect_provider,
    metadata_text_or_none,
)

log = logging.getLogger("gpuwise.run.watchers")

# The providers' documented warning times, in seconds (see the module docstring for the sources).
WARNING_S = {"aws": 120.0, "gcp": 30.0, "azure": 30.0}
AZURE_EVENTS_API = "2020-07-01"


@dataclass(frozen=True)
class Notice:
    provider: str
    kind: str  # "terminate" (the machine goes away) or "rebalance" (elevated risk: sync now)
    detail: str
    event_id: str | None = None  # Azure's EventId, approved once the final checkpoint has landed


class Watcher(Protocol):
    provider: str

    def poll(self) -> Notice | None: ...


@dataclass
class AwsSpotWatcher:
    endpoints: MetadataEndpoints
    provider: str = "aws"
    _token: str | None = None
    _rebalance_seen: bool = False

    def _get(self, path: str) -> str | None:
        if self._token is None:
            self._token = metadata_text_or_none(
                self.endpoints.aws + "/latest/api/token",
                method="PUT",
                headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"},
                timeout_s=self.endpoints.timeout_s,
                data=b"",
            )
            if not self._token:
                raise MetadataError("AWS IMDSv2 gave no session token")
        try:
            return metadata_text_or_none(
                self.endpoints.aws + path,
                headers={"X-aws-ec2-metadata-token": self._token},
                timeout_s=self.endpoints.timeout_s,
            )
        except MetadataError:
            self._token = None  # an expired token answers 401: fetch a new one next time
            raise

    def poll(self) -> Notice | None:
        action = self._get("/latest/meta-data/spot/instance-action")
        if action:
            try:
                data = json.loads(action)
                what = f"spot interruption: {data.get('action', '?')} at {data.get('time', '?')}"
            except (ValueError, AttributeError):
                what = f"spot interruption: {action[:200]}"
            return Notice("aws", "terminate", what)
        rebalance = self._get("/latest/meta-data/events/recommendations/rebalance")
        if rebalance and not self._rebalance_seen:
            self._rebalance_seen = True
            return Notice("aws", "rebalance", f"rebalance recommendation: {rebalance[:200]}")
        return None


@dataclass
class GcpWatcher:
    endpoints: MetadataEndpoints
    provider: str = "gcp"
    _migrate_logged: bool = False

    def _get(self, path: str) -> str:
        text = metadata_text_or_none(
            self.endpoints.gcp + "/computeMetadata/v1/instance/" + path,
            headers={"Metadata-Flavor": "Google"},
            timeout_s=self.endpoints.timeout_s,
        )
        return (text or "").strip()

    def poll(self) -> Notice | None:
        if self._get("preempted").upper() == "TRUE":
            return Notice("gcp", "terminate", "the VM is being preempted")
        event = self._get("maintenance-event").upper()
        if event.startswith("TERMINATE"):
            return Notice("gcp", "terminate", f"maintenance event {event}")
        if event.startswith("MIGRATE") and not self._migrate_logged:
            self._migrate_logged = True
            log.info("GCP maintenance event %s: a live migration, the job goes on", event)
        return None


@dataclass
class AzureWatcher:
    endpoints: MetadataEndpoints
    provider: str = "azure"

    def poll(self) -> Notice | None:
        text = metadata_text_or_none(
            self.endpoints.azure + f"/metadata/scheduledevents?api-version={AZURE_EVENTS_API}",
            headers={"Metadata": "true"},
            timeout_s=self.endpoints.timeout_s,
        )
        if not text:
            return None
        try:
            events = json.loads(text).get("Events") or []
        except (ValueError, AttributeError) as exc:
            raise MetadataError(f"Azure Scheduled Events answer is not JSON: {exc}") from exc
        for e in events:
            if isinstance(e, dict) and e.get("EventType") in ("Preempt", "Terminate"):
                when = e.get("NotBefore") or "soon"
                event_id = e.get("EventId")
                return Notice(
                    "azure",
                    "terminate",
                    f"scheduled event {e.get('EventType')} not before {when}",
                    event_id=str(event_id) if event_id else None,
                )
        return None


def approve_azure_event(endpoints: MetadataEndpoints, event_id: str) -> bool:
    """Tell Azure this VM is ready for scheduled event `event_id` (its StartRequests call), so the eviction
    may start now rather than at NotBefore. False, with a warning logged, when the service did not take it:
    the event then simply starts at its time."""
    url = endpoints.azure + f"/metadata/scheduledevents?api-version={AZURE_EVENTS_API}"
    body = json.dumps({"StartRequests": [{"EventId": event_id}]}).encode("utf-8")
    headers = {"Metadata": "true", "Content-Type": "application/json"}
    try:
        # never through a proxy: the metadata service is link-local (as every other metadata call)
        answer = httpclient.request(
            "POST", url, body=body, headers=headers, timeout_s=endpoints.timeout_s, use_proxy=False
        )
    except httpclient.HttpError as exc:
        log.warning("cannot approve Azure scheduled event %s early: %s", event_id, exc)
        return False
    if not 200 <= answer.status < 300:
        log.warning("Azure did not take the approval of scheduled event %s: HTTP %d", event_id, answer.status)
        return False
    log.info("approved Azure scheduled event %s: the final checkpoint is safe, the VM may go now", event_id)
    return True


WATCHERS: dict[str, Callable[[MetadataEndpoints], Watcher]] = {
    "aws": AwsSpotWatcher,
    "gcp": GcpWatcher,
    "azure": AzureWatcher,
}


def make_watcher(provider: str, endpoints: MetadataEndpoints) -> Watcher | None:
    """The watcher for `provider` ("auto": the one whose metadata service answers; None off a cloud)."""
    if provider == "off":
        return None
    if provider == "auto":
        found = detect_provider(endpoints)
        if found is None or found[0] not in WATCHERS:
            return None
        provider = found[0]
    return WATCHERS[provider](endpoints)


class WatchThread:
    """Polls a watcher every `poll_s` seconds and calls `on_notice` for each new notice kind."""

    def __init__(
        self,
        provider: str,
        endpoints: MetadataEndpoints,
        on_notice: Callable[[Notice], None],
        *,
        poll_s: float = 1.0,
    ) -> None:
        self.provider = provider
        self.endpoints = endpoints
        self.on_notice = on_notice
        self.poll_s = poll_s
        self.active: str | None = None  # the provider actually watched
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpuwise-preemption", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=3.0)

    def _loop(self) -> None:
        try:
            watcher = make_watcher(self.provider, self.endpoints)
        except MetadataError as exc:
            log.warning("cannot watch for %s preemption notices: %s", self.provider, exc)
            return
        if watcher is None:
            if self.provider == "auto":
                log.info("no cloud metadata service answered: no preemption notices to watch")
            return
        self.active = watcher.provider
        seen: set[str] = set()
        failing = False
        while not self._stop.is_set():
            try:
                notice = watcher.poll()
                if failing:
                    log.info("%s metadata service answers again", watcher.provider)
                failing = False
            except MetadataError as exc:
                if not failing:
                    log.warning("%s metadata service did not answer: %s", watcher.provider, exc)
                failing = True
                notice = None
            if notice is not None and notice.kind not in seen:
                seen.add(notice.kind)
                self.on_notice(notice)
            self._stop.wait(self.poll_s)
