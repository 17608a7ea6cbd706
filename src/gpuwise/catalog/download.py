"""`catalog update`'s downloads: the SkyPilot catalog layout ``<base>/vN/<cloud>/vms.csv``, fetched in
parallel, each file once, with retries (gpuwise.httpclient) and a fallback mirror.

Why the old update made ~15 probes and fetched AWS twice: it looked for the newest schema by asking for
aws/gcp/lambda under v14, v13 … down to the first version that answered (3 × 404 per missing version),
threw that answer away and then downloaded the same file again. Now the search starts at the schema
version SkyPilot itself reads (``KNOWN_SCHEMA_VERSION``), every answer is kept (``_Files``), and a newer
version is looked for with one request per probed cloud.

Bounded in every direction (a server that streams forever or drips must end with a clear error): each
request within ``timeout_s``, all within ``total_timeout_s``, one body at most ``max_file_bytes`` and all
together ``max_total_bytes``. Messages name the mirror by scheme and host only (its path may hold a token)
followed by the ``vN/<cloud>/vms.csv`` path gpuwise built itself.

Must not import the CLI, pydantic or anything outside the standard library and gpuwise.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from typing import Literal
from urllib.parse import urlparse

from gpuwise import httpclient
from gpuwise.errors import CatalogError, UsageError
from gpuwise.locale import _

DEFAULT_BASE_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
# SkyPilot's own fallback when GitHub rate-limits (HTTP 429): HOSTED_CATALOG_DIR_URL_S3_MIRROR in
# skypilot-org/skypilot sky/skylet/constants.py; same catalogs/vN/<cloud>/vms.csv layout.
DEFAULT_FALLBACK_URL = "https://skypilot-catalog.s3.us-east-1.amazonaws.com/catalogs"
# CATALOG_SCHEMA_VERSION = 'v8' in skypilot-org/skypilot sky/skylet/constants.py (2025): the version
# SkyPilot reads. A newer one on the server is used too (looked for upward, KNOWN_SCHEMA_AHEAD at most).
KNOWN_SCHEMA_VERSION = 8
KNOWN_SCHEMA_AHEAD = 6
SCHEMA_PROBE_OLDEST = 6
_PROBE_CLOUDS = ("aws", "gcp", "lambda")  # a version exists when one of these has a vms.csv there
# Clouds the SkyPilot catalog has had a vms.csv for (catalogs/v6 … v9); unknown ones are simply absent (404).
KNOWN_CLOUDS = (
    "aws",
    "azure",
    "gcp",
    "lambda",
    "nebius",
    "cudo",
    "vast",
    "fluidstack",
    "ibm",
    "seeweb",
    "oci",
    "runpod",
    "do",
    "paperspace",
    "shadeform",
    "primeintellect",
    "hyperstack",
    "verda",
    "jarvislabs",
    "yotta",
    "mithril",
    "hyperbolic",
    "lium",
    "spheron",
    "scp",
)
# Bounds on what import and update read (a link to /dev/zero or an endless server must end, not fill
# memory). Generous next to real provider files: the bundled ones are under 0.3 MB each.
MAX_FILE_BYTES = 64 << 20
MAX_TOTAL_BYTES = 256 << 20
DEFAULT_TOTAL_TIMEOUT_S = 600.0  # the whole update; 61 files at a few MB each take well under a minute
DEFAULT_WORKERS = 8  # small: a handful of files at a time is enough to hide latency, and polite
DEFAULT_RETRY = httpclient.Retry(attempts=3, backoff_s=0.5, max_backoff_s=8.0, max_retry_after_s=30.0)


@dataclass(frozen=True)
class CatalogInput:
    """One provider's file to install: where it came from and its text."""

    provider: str
    origin: str  # shown with every price: "imported from …" / "downloaded from …"
    display_name: str  # the name problems are reported under (a path or URL)
    text: str
    collected: date | None = None  # the file's collection date when known (else the install date)
    date_exact: bool = False  # True: ``collected`` is the prices' own date (a fetched file's PriceDate)


EventKind = Literal["plan", "start", "progress", "retry", "fallback", "done", "missing"]


@dataclass(frozen=True)
class UpdateEvent:
    """What the update is doing, for a progress display. ``url`` identifies the request and is never
    to be shown; ``label`` is safe to show (``v9/aws/vms.csv`` or a redacted URL)."""

    kind: EventKind
    url: str = ""
    label: str = ""
    done: int = 0  # bytes read (progress, done) or files planned (plan)
    total: int | None = None  # bytes announced
    detail: str = ""  # retry/fallback: why


OnEvent = Callable[[UpdateEvent], None]
Fetch = Callable[[str], "bytes | None"]  # URL -> body, None for 404; raises CatalogError otherwise


class _StoppedError(CatalogError):
    """A download given up because another one already failed the update."""


class SourceFailedError(CatalogError):
    """One server failed one file (an error status after the retries, no connection, too slow for
    --timeout-s): the fallback mirror may still have it. Size and total-time caps are not this."""


def check_base_url(base_url: str, option: str = "--base-url") -> str:
    parsed = urlparse(base_url)
    loopback = parsed.hostname in ("127.0.0.1", "localhost", "::1")
    if parsed.scheme != "https" and not (parsed.scheme == "http" and loopback):
        shown = httpclient.redact_url(base_url) if parsed.hostname else base_url[:60]
        raise UsageError(
            _("{option} {url} must be an https:// URL (plain http only to a loopback address)").format(
                option=option, url=repr(shown)
            ),
            fix=_("use the default {url} or an https mirror").format(url=DEFAULT_BASE_URL),
        )
    return base_url.rstrip("/")


def _too_slow(url: str, what: str) -> CatalogError:
    return CatalogError(
        _("Download of {url} stopped: {what}").format(url=url, what=what),
        why=_("the server is too slow or never ends its answer; nothing was changed"),
        fix=_("try again later, raise --timeout-s / --total-timeout-s, or pass --base-url of a mirror"),
    )


def _too_big(url: str, what: str, limit: int) -> CatalogError:
    return CatalogError(
        _("Download of {url} stopped: {what} is larger than {mib} MiB").format(
            url=url, what=what, mib=f"{limit / (1 << 20):g}"
        ),
        why=_("the server is not serving catalog files of a plausible size; nothing was changed"),
        fix=_("check --base-url"),
    )


def _slow(shown: str, deadline: bool, timeout_s: float, total_timeout_s: float) -> CatalogError:
    """Past the whole update's time (the update stops), or past its own (the mirror may have the file)."""
    if deadline:
        what = _("the whole update took longer than {seconds} s").format(seconds=f"{total_timeout_s:g}")
        return _too_slow(shown, what)
    return SourceFailedError(
        _("Download of {url} stopped: it took longer than --timeout-s {seconds} s").format(
            url=shown, seconds=f"{timeout_s:g}"
        ),
        why=_("the server is too slow or never ends its answer; nothing was changed"),
        fix=_("try again later, raise --timeout-s / --total-timeout-s, or pass --base-url of a mirror"),
    )


def http_fetch(
    timeout_s: float,
    *,
    total_timeout_s: float = DEFAULT_TOTAL_TIMEOUT_S,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    clock: Callable[[], float] | None = None,
    retry: httpclient.Retry = DEFAULT_RETRY,
    sleep: Callable[[float], None] = time.sleep,
    on_event: OnEvent | None = None,
) -> Fetch:
    """A fetcher over gpuwise.httpclient: body bytes, None for HTTP 404, CatalogError for anything else
    (SourceFailedError where another server may do better). Safe to call from several threads; the total
    bounds are shared. The clock and sleep are injectable for tests."""
    now = clock or time.monotonic
    deadline = now() + total_timeout_s
    received = 0
    lock = threading.Lock()

    def fetch(url: str) -> bytes | None:
        shown = _shown(url)
        last = 0

        def on_chunk(size: int, total: int | None) -> None:
            nonlocal received, last
            with lock:
                received += size - last
                over = received > max_total_bytes
            last = size
            if over:
                raise _too_big(shown, _("the files together"), max_total_bytes)
            if on_event is not None:
                on_event(UpdateEvent("progress", url, shown, size, total))

        def on_retry(event: httpclient.RetryEvent) -> None:
            nonlocal received, last
            with lock:  # the failed try's bytes do not count twice
                received -= last
            last = 0
            if on_event is not None:
                detail = (
                    f"{event.reason}; try {event.attempt + 1} of {retry.attempts} in {event.wait_s:.1f} s"
                )
                on_event(UpdateEvent("retry", url, shown, detail=detail))

        try:
            answer = httpclient.request(
                "GET",
                url,
                timeout_s=timeout_s,
                max_bytes=max_file_bytes,
                retry=retry,
                deadline=deadline,
                clock=now,
                sleep=sleep,
                on_retry=on_retry,
                on_chunk=on_chunk,
                user_agent="gpuwise-catalog-update",
            )
        except httpclient.TooLargeError as exc:
            what = (
                _("the file")
                if exc.announced is None
                else _("it announces {n} bytes").format(n=f"{exc.announced:,}")
            )
            raise _too_big(shown, what, max_file_bytes) from exc
        except httpclient.TooSlowError as exc:
            raise _slow(shown, exc.deadline, timeout_s, total_timeout_s) from exc
        except httpclient.HttpError as exc:
            raise SourceFailedError(
                _("Download of {url} failed: {reason}").format(url=shown, reason=exc.reason),
                why=_("the network or the catalog server is unreachable; nothing was changed"),
                fix=_("check the connection, or import a local checkout with `gpuwise catalog import PATH`"),
            ) from exc
        if answer.status == 404:
            return None
        if not 200 <= answer.status < 300:
            raise SourceFailedError(
                _("Download of {url} failed: HTTP {status}").format(url=shown, status=answer.status),
                why=_("the catalog server refused or failed the request; nothing was changed"),
                fix=_("try again later, or pass --base-url of a mirror"),
            )
        return answer.body

    return fetch


_OUR_TAIL = re.compile(r"/v\d+/[a-z0-9_\-]+/vms\.csv$")


def _shown(url: str) -> str:
    """The URL as messages show it: scheme and host, plus the ``vN/<cloud>/vms.csv`` tail gpuwise built
    (the mirror's own path may hold a token)."""
    tail = _OUR_TAIL.search(url.split("?", 1)[0])
    return httpclient.redact_url(url[: tail.start()] if tail else url) + (tail.group(0) if tail else "")


class _Files:
    """Every answer kept by path, so no file is asked for twice; each path tried on the primary and,
    when that fails, on the fallback."""

    def __init__(
        self, bases: tuple[str, ...], fetch: Fetch, on_event: OnEvent | None, stop: threading.Event
    ) -> None:
        self.bases = bases
        self.fetch = fetch
        self.on_event = on_event
        self.stop = stop
        self.got: dict[str, tuple[str, bytes | None]] = {}  # path -> (url it came from, body)
        self.lock = threading.Lock()

    def _tell(self, kind: EventKind, url: str, label: str, **kw: object) -> None:
        if self.on_event is not None:
            self.on_event(UpdateEvent(kind, url, label, **kw))  # type: ignore[arg-type]

    def get(self, path: str) -> tuple[str, bytes | None]:
        with self.lock:
            if path in self.got:
                return self.got[path]
        failure: SourceFailedError | None = None
        for i, base in enumerate(self.bases):
            if self.stop.is_set():
                raise _StoppedError(_("Stopped: another download failed"), why=_("nothing was changed"))
            url = f"{base}/{path}"
            if i > 0 and failure is not None:
                self._tell("fallback", url, path, detail=f"{httpclient.redact_url(base)} ({failure.message})")
            self._tell("start", url, path)
            try:
                body = self.fetch(url)
            except SourceFailedError as exc:
                failure = exc
                continue
            self._tell("done" if body is not None else "missing", url, path, done=len(body or b""))
            with self.lock:
                self.got[path] = (url, body)
            return url, body
        assert failure is not None
        raise failure

    def version_exists(self, version: int) -> bool:
        return any(self.get(f"v{version}/{cloud}/vms.csv")[1] is not None for cloud in _PROBE_CLOUDS)


def _find_version(files: _Files) -> int | None:
    if files.version_exists(KNOWN_SCHEMA_VERSION):
        version = KNOWN_SCHEMA_VERSION
        while version < KNOWN_SCHEMA_VERSION + KNOWN_SCHEMA_AHEAD and files.version_exists(version + 1):
            version += 1
        return version
    return next(
        (v for v in range(KNOWN_SCHEMA_VERSION - 1, SCHEMA_PROBE_OLDEST - 1, -1) if files.version_exists(v)),
        None,
    )


def download_catalog(
    base_url: str,
    fetch: Fetch,
    *,
    today: date,
    schema_version: int | None = None,
    fallback_url: str | None = None,
    workers: int = DEFAULT_WORKERS,
    on_event: OnEvent | None = None,
) -> tuple[int, list[CatalogInput]]:
    """The vms.csv of every known cloud in the schema version asked for or found (a cloud missing there
    is taken from the version before), ``workers`` files at a time. A file the primary fails is asked of
    ``fallback_url``. Raises CatalogError when nothing is found or a download fails for good."""
    bases: tuple[str, ...] = (check_base_url(base_url),)
    if fallback_url:
        bases += (check_base_url(fallback_url, "--fallback-url"),)
    shown = httpclient.redact_url(bases[0])
    stop = threading.Event()
    files = _Files(bases, fetch, on_event, stop)
    version = schema_version if schema_version is not None else _find_version(files)
    if version is None:
        raise CatalogError(
            _("No catalog found under {url} (looked for v{oldest}…v{newest})").format(
                url=shown, oldest=SCHEMA_PROBE_OLDEST, newest=KNOWN_SCHEMA_VERSION + KNOWN_SCHEMA_AHEAD
            ),
            why=_("the base URL does not serve the skypilot-catalog layout catalogs/vN/<cloud>/vms.csv"),
            fix=_("check --base-url (default {url})").format(url=DEFAULT_BASE_URL),
        )
    if on_event is not None:
        on_event(UpdateEvent("plan", done=len(KNOWN_CLOUDS), detail=f"v{version}"))

    def one(cloud: str) -> CatalogInput | None:
        for v in (version, version - 1):
            url, body = files.get(f"v{v}/{cloud}/vms.csv")
            if body is None:
                continue
            label = _shown(url)
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CatalogError(
                    _("{file} is not UTF-8 text").format(file=label), fix=_("check --base-url")
                ) from exc
            return CatalogInput(
                provider=cloud,
                origin=f"downloaded from {label} on {today.isoformat()}; the file carries no price date",
                display_name=label,
                text=text,
            )
        return None

    def guarded(cloud: str) -> CatalogInput | None:
        try:
            return one(cloud)
        except BaseException:
            stop.set()  # the others stop at their next file instead of finishing a doomed update
            raise

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="catalog-update") as pool:
        futures = [pool.submit(guarded, cloud) for cloud in KNOWN_CLOUDS]
    errors = [f.exception() for f in futures if f.exception() is not None]
    real = [e for e in errors if not isinstance(e, _StoppedError)]
    if errors:
        raise (real or errors)[0]  # type: ignore[misc]
    inputs = [i for f in futures if (i := f.result()) is not None]
    if not inputs:
        raise CatalogError(
            _("No vms.csv found under {url}").format(url=f"{shown}/v{version}"), fix=_("check --base-url")
        )
    return version, inputs
