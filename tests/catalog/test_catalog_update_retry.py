"""`catalog update` against loopback mirrors that misbehave the ordinary ways: busy (HTTP 429 with
Retry-After), slow, failing (the fallback mirror takes over). Every request is counted per path, to prove
each file is fetched once; a token in the mirror's path never reaches any output."""

from __future__ import annotations

import http.server
import io
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import pytest
from rich.console import Console

from gpuwise import httpclient
from gpuwise.catalog.download import KNOWN_SCHEMA_VERSION, UpdateEvent, download_catalog, http_fetch
from gpuwise.cli.main import main
from gpuwise.cli.update_progress import UpdateProgress
from gpuwise.errors import CatalogError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "catalog" / "checkout" / "catalogs"
TODAY = date(2026, 11, 30)
TOKEN = "tok-s3cr3t-9f8e"


class Mirror(http.server.ThreadingHTTPServer):
    """Serves the fixture catalogs under ``/<prefix>/catalogs``; ``rules`` maps a path tail (v9/aws/vms.csv)
    to a behaviour; ``hits`` counts requests per tail and ``times`` keeps when each came."""

    daemon_threads = True

    def __init__(self, prefix: str, rules: dict[str, str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.prefix = f"/{prefix}/catalogs/" if prefix else "/catalogs/"
        self.rules = rules
        self.hits: Counter[str] = Counter()
        self.times: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{self.prefix.rstrip('/')}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Mirror

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        srv = self.server
        if not self.path.startswith(srv.prefix):
            self._send(404)
            return
        tail = self.path[len(srv.prefix) :]
        with srv.lock:
            srv.hits[tail] += 1
            n = srv.hits[tail]
            srv.times.setdefault(tail, []).append(time.monotonic())
        rule = srv.rules.get(tail, "")
        if rule == "busy" and n <= 2:
            self._send(429, b"slow down", {"Retry-After": "1"})
            return
        if rule == "fail":
            self._send(503, b"down")
            return
        file = FIXTURES / tail
        if not file.is_file():
            self._send(404)
            return
        body = file.read_bytes()
        if rule != "slow":
            self._send(200, body)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        step = max(1, len(body) // 4)
        for i in range(0, len(body), step):  # four pieces, 0.15 s apart
            self.wfile.write(body[i : i + step])
            self.wfile.flush()
            time.sleep(0.15)


@pytest.fixture
def mirrors() -> Iterator[Callable[[str, dict[str, str]], Mirror]]:
    started: list[Mirror] = []

    def start(prefix: str, rules: dict[str, str]) -> Mirror:
        server = Mirror(prefix, rules)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


FAST = httpclient.Retry(attempts=3, backoff_s=0.05, max_backoff_s=0.1)


@pytest.mark.timeout(60)
def test_update_retries_a_busy_mirror_waits_for_a_slow_file_and_falls_back(
    mirrors: Callable[[str, dict[str, str]], Mirror], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    primary = mirrors("", {"v9/aws/vms.csv": "busy", "v9/lambda/vms.csv": "slow", "v9/gcp/vms.csv": "fail"})
    fallback = mirrors("", {})
    target = tmp_path / "catalog"
    args = ["catalog", "update", "--base-url", primary.base, "--fallback-url", fallback.base]
    assert main([*args, "--catalog-dir", str(target), "--json"]) == 0
    out, err = capsys.readouterr()
    assert sorted(json.loads(out)["providers"]) == ["aws", "gcp", "lambda", "shadeform"]
    # retries: twice 429, each wait the Retry-After asked for, then the file
    assert primary.hits["v9/aws/vms.csv"] == 3
    times = primary.times["v9/aws/vms.csv"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(g >= 0.9 for g in gaps), gaps
    assert "v9/aws/vms.csv: HTTP 429; try 2 of 3 in 1.0 s" in err
    assert "v9/aws/vms.csv: HTTP 429; try 3 of 3 in 1.0 s" in err
    # the fallback: gcp fails on the primary (503 on every try), comes from the mirror, only it
    assert primary.hits["v9/gcp/vms.csv"] == 3
    # the fallback is named with its port: both servers listen on 127.0.0.1
    shown = f"http://127.0.0.1:{fallback.server_address[1]}"
    assert f"v9/gcp/vms.csv: trying the fallback {shown}" in err and "HTTP 503" in err
    assert dict(fallback.hits) == {"v9/gcp/vms.csv": 1}
    # progress: the slow file arrived whole, and each file is reported with its size
    size = (FIXTURES / "v9" / "lambda" / "vms.csv").stat().st_size
    assert f"v9/lambda/vms.csv: {size:,} bytes" in err
    assert "catalog update: schema v9, 25 clouds" in err
    assert "catalog update: 5 file(s)" in err  # v8/lambda too: the probe that found v8 kept it
    # each file requested once (the retried and failing ones aside)
    again = {p: n for p, n in primary.hits.items() if n != 1}
    assert again == {"v9/aws/vms.csv": 3, "v9/gcp/vms.csv": 3}


@pytest.mark.timeout(60)
def test_finding_the_newest_schema_fetches_each_file_once(
    mirrors: Callable[[str, dict[str, str]], Mirror],
) -> None:
    """The old probe asked for aws/gcp/lambda under v14 … v10 (15 requests) and downloaded AWS twice."""
    primary = mirrors("", {})
    version, inputs = download_catalog(primary.base, http_fetch(5.0), today=TODAY)
    assert version == 9
    assert set(primary.hits.values()) == {1}
    assert primary.hits["v9/aws/vms.csv"] == 1
    probes_past_newest = [p for p in primary.hits if p.startswith("v10/")]
    assert sorted(probes_past_newest) == ["v10/aws/vms.csv", "v10/gcp/vms.csv", "v10/lambda/vms.csv"]
    assert not any(p.startswith(f"v{KNOWN_SCHEMA_VERSION + 3}/") for p in primary.hits)
    assert sorted(i.provider for i in inputs) == ["aws", "gcp", "lambda", "shadeform"]


@pytest.mark.timeout(60)
def test_a_token_in_the_mirror_url_never_appears_in_output(
    mirrors: Callable[[str, dict[str, str]], Mirror], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    primary = mirrors(TOKEN, {"v9/aws/vms.csv": "busy"})
    target = tmp_path / "catalog"
    args = ["catalog", "update", "--base-url", primary.base, "--catalog-dir", str(target)]
    assert main([*args, "--schema-version", "9"]) == 0
    out, err = capsys.readouterr()
    assert "HTTP 429" in err and "v9/aws/vms.csv" in err  # it did talk about the mirror
    manifest = (target / "manifest.json").read_text()
    assert TOKEN not in out + err + manifest
    assert main(["catalog", "stats", "--json", "--catalog-dir", str(target)]) == 0
    assert TOKEN not in capsys.readouterr().out
    # failures too: a mirror that always fails, and one that is not there at all
    failing = mirrors(TOKEN, {f"v9/{c}/vms.csv": "fail" for c in ("aws", "gcp", "lambda")})
    fetch = http_fetch(2.0, retry=FAST)
    with pytest.raises(CatalogError) as failed:
        download_catalog(failing.base, fetch, today=TODAY, schema_version=9)
    assert "HTTP 503" in str(failed.value) and TOKEN not in str(failed.value)
    closed = f"http://127.0.0.1:9/{TOKEN}/catalogs"
    assert (
        main(["catalog", "update", "--base-url", closed, "--catalog-dir", str(target), "--timeout-s", "2"])
        == 1
    )
    err = capsys.readouterr().err
    assert "nothing was changed" in err and TOKEN not in err


def test_httpclient_reason_never_holds_the_url() -> None:
    url = f"http://127.0.0.1:9/{TOKEN}/x?sig=abc"
    assert TOKEN not in httpclient._reason(ValueError(f"bad url {url}"), url)
    assert httpclient.redact_url(url) == "http://127.0.0.1:9/…"


def test_redacted_url_keeps_the_port_and_drops_credentials() -> None:
    """The port was dropped, so a refused 127.0.0.1:1 read as 127.0.0.1 (which server?)."""
    assert httpclient.redact_url("https://user:pw@[::1]:8443/x?t=1") == "https://[::1]:8443/…"
    assert httpclient.redact_url("http://h.example:99999/") == "http://h.example"  # no such port: left out
    assert (
        httpclient.redact_url("https://hooks.slack.com/services/T0/B0/SECRET") == "https://hooks.slack.com/…"
    )


def test_retry_after_and_backoff() -> None:
    from datetime import UTC, datetime

    assert httpclient.retry_after_s("2") == 2.0
    assert httpclient.retry_after_s("nonsense") is None
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    assert httpclient.retry_after_s("Mon, 30 Nov 2026 12:00:05 GMT", lambda: now) == 5.0
    policy = httpclient.Retry(backoff_s=1.0, max_backoff_s=3.0, jitter=0.5)
    assert httpclient.backoff_s(1, policy, lambda: 0.0) == 0.5
    assert httpclient.backoff_s(2, policy, lambda: 1.0) == 3.0
    assert httpclient.backoff_s(5, policy, lambda: 0.5) == 3.0  # capped


def test_progress_bar_on_a_terminal_and_lines_otherwise() -> None:
    events = [
        UpdateEvent("plan", done=3, detail="v9"),
        UpdateEvent("start", "u1", "v9/aws/vms.csv"),
        UpdateEvent("progress", "u1", "x", 500, 1000),
        UpdateEvent("retry", "u1", "x", detail="HTTP 429; try 2 of 3 in 1.0 s"),
        UpdateEvent("done", "u1", "v9/aws/vms.csv", 1000),
    ]
    tty = Console(file=io.StringIO(), force_terminal=True, width=100)
    with UpdateProgress(tty) as progress:
        for e in events:
            progress(e)
    shown = tty.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[" in shown and "catalog files" in shown and "HTTP 429" in shown
    plain = Console(file=io.StringIO(), force_terminal=False, width=100)
    with UpdateProgress(plain) as progress:
        for e in events:
            progress(e)
    lines = plain.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines == [
        "catalog update: schema v9, 3 clouds",
        "catalog update: v9/aws/vms.csv: HTTP 429; try 2 of 3 in 1.0 s",
        "catalog update: v9/aws/vms.csv: 1,000 bytes",
        "catalog update: 1 file(s), 1,000 bytes",
    ]


# ---------------------------------------------------------------- import ~/.sky/catalogs


def _sky_catalogs(root: Path) -> Path:
    """SkyPilot's local catalog folder: vN/<cloud>/vms.csv plus vN/.meta/<cloud>/vms.csv.md5."""
    import shutil

    sky = root / ".sky" / "catalogs"
    for version in ("v8", "v9"):
        shutil.copytree(FIXTURES / version, sky / version)
    (sky / "v9" / ".meta" / "aws").mkdir(parents=True)
    (sky / "v9" / ".meta" / "aws" / "vms.csv.md5").write_text("0" * 32)
    return sky


def _noon(day: date) -> float:
    from datetime import datetime

    return datetime(day.year, day.month, day.day, 12).timestamp()


def test_import_sky_catalogs_dates_each_file_by_its_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from gpuwise.cli import catalog as cli_catalog

    monkeypatch.setattr(cli_catalog, "_today", lambda: TODAY)
    sky = _sky_catalogs(tmp_path)
    os.utime(sky / "v9" / "aws" / "vms.csv", (_noon(date(2026, 11, 2)),) * 2)
    os.utime(sky / "v9" / "lambda" / "vms.csv", (_noon(date(2026, 10, 20)),) * 2)
    os.utime(sky / "v9" / "gcp" / "vms.csv", (_noon(date(2027, 1, 1)),) * 2)  # a clock ahead: today at most
    target = tmp_path / "catalog"
    assert main(["catalog", "import", str(sky), "--catalog-dir", str(target), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc["providers"]) == ["aws", "gcp", "lambda"]  # the newest vN only
    assert doc["collected_from_file_times"] == {
        "aws": "2026-11-02",
        "gcp": "2026-11-30",
        "lambda": "2026-10-20",
    }
    manifest = json.loads((target / "manifest.json").read_text())["providers"]
    assert manifest["lambda"]["price_as_of"] == "2026-10-20" and manifest["lambda"]["date_exact"] is False
    assert "modification time" in manifest["lambda"]["origin"]
    assert main(["catalog", "offers", "--provider", "lambda", "--json", "--catalog-dir", str(target)]) == 0
    offers = json.loads(capsys.readouterr().out)["offers"]
    assert offers and {o["price_as_of"] for o in offers} == {"2026-10-20"}
    # a vN folder of it (SkyPilot keeps .meta there) is dated the same way
    assert main(["catalog", "import", str(sky / "v9"), "--catalog-dir", str(target), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["collected_from_file_times"]["aws"] == "2026-11-02"


def test_a_checkout_keeps_the_import_date(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A clone's file times say when it was cloned, not when the prices were collected."""
    from gpuwise.catalog.store import uses_file_dates

    assert not uses_file_dates(FIXTURES.parent)
    assert uses_file_dates(_sky_catalogs(tmp_path))
    target = tmp_path / "catalog"
    assert main(["catalog", "import", str(FIXTURES.parent), "--catalog-dir", str(target), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["collected_from_file_times"] == {}
