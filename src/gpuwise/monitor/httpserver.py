"""A small HTTP/1.1 server for a WSGI app that stays responsive under load and abuse.

Why not `http.server.ThreadingHTTPServer` (what the exporter used) or wsgiref: a thread per
connection with no timeouts and an accept backlog of 5 let 1,024 idle connections (they need no
token) starve every scrape, and 200 parallel scrapes overflowed the backlog (SYN retries: p99 > 1 s).

The design, in one paragraph. One acceptor thread owns the listening socket (backlog `backlog`,
at least 128) and a `selectors` loop (epoll on Linux, so thousands of sockets cost nothing). A new
connection is read without blocking until its request header has fully arrived; until then it is
"waiting" and costs one file descriptor and a small buffer, never a thread. Only a complete header
is handed to a fixed pool of `workers` threads, which call the WSGI app and write the response with
a write timeout. A keep-alive connection goes back to the acceptor to wait for its next request.
Limits:

* a header must arrive within `header_timeout_s` of the connection (or of its first byte on a
  kept-alive connection): a slowloris client is answered 408 and closed; a kept-alive connection
  with no new request is closed after `keepalive_timeout_s`;
* a header larger than `max_header_bytes` is answered 431 and closed; a request with a body, or
  anything but GET/HEAD/OPTIONS, is answered by the app and then closed (bodies are never read);
* at most `max_connections` connections are open at once. When a new connection arrives at the cap,
  the connection that has waited longest without a complete request is closed to make room (idle
  and slow clients are the cheapest to lose: a real client reconnects, an attacker loses its slot).
  Only when every connection is being served does the acceptor stop accepting, so the kernel's
  backlog holds the newcomers until a worker finishes. The same eviction answers running out of
  file descriptors (EMFILE).

So an idle flood cannot starve a scraper: a scraper's header completes within a round trip, after
which it cannot be evicted and is served by the pool, whose queue is bounded by `max_connections`.
The pool has no per-request thread creation, and one Python process serves thousands of idle
sockets.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_to_bytes

log = logging.getLogger("gpuwise.monitor.http")

WsgiStartResponse = Callable[..., Callable[[bytes], object]]
WsgiApp = Callable[[dict[str, Any], WsgiStartResponse], Iterable[bytes]]

_SWEEP_S = 0.1  # how often waiting connections are checked against their deadlines
RECEIVED_AT = "gpuwise.received_at"  # environ key: time.monotonic() when the request header completed

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    505: "HTTP Version Not Supported",
}


@dataclass(frozen=True)
class Limits:
    """The server's bounds (defaults suit a metrics endpoint scraped by a few Prometheus servers)."""

    max_connections: int = 512
    workers: int = 8
    backlog: int = 1024  # the kernel caps it at net.core.somaxconn (4096 on current Linux)
    header_timeout_s: float = 10.0  # Prometheus's default scrape_timeout is 10 s
    keepalive_timeout_s: float = 90.0
    write_timeout_s: float = 10.0
    max_header_bytes: int = 16384

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.workers < 1 or self.backlog < 128:
            raise ValueError("max_connections and workers must be 1 or more and backlog 128 or more")


@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    peer: str
    deadline: float  # monotonic time after which a waiting connection is closed
    fresh: bool = True  # no request served on it yet
    buf: bytearray = field(default_factory=bytearray)


class _BadRequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class BoundedHTTPServer:
    """Serves `app` on `address` within `limits` (see the module docstring for the design).

    Use: `serve_forever()` in a thread; `shutdown()` from another; then `server_close()`."""

    def __init__(self, address: tuple[str, int], app: WsgiApp, limits: Limits | None = None) -> None:
        self.app = app
        self.limits = limits or Limits()
        host, port = address
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host, port))
            self._listener.listen(self.limits.backlog)
            self._listener.setblocking(False)
        except OSError:
            self._listener.close()
            raise
        self.server_address: tuple[str, int] = self._listener.getsockname()[:2]
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._waiting: OrderedDict[int, _Conn] = OrderedDict()  # by fd, oldest wait first
        self._busy = 0  # connections handed to the pool
        self._returned: deque[_Conn | None] = deque()  # from workers: keep-alive conns, None = closed
        self._pool = ThreadPoolExecutor(max_workers=self.limits.workers, thread_name_prefix="gpuwise-http")
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._accepting = False
        self._resume_accept_at = 0.0
        self.evicted = 0  # connections closed to make room (tests and the log read it)
        self.timed_out = 0  # connections closed at their header or keep-alive deadline

    # -- the acceptor loop ---------------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Run the acceptor until `shutdown()`; `poll_interval` bounds how late a deadline is noticed."""
        self._stopped.clear()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._set_accepting(True)
        try:
            next_sweep = 0.0
            while not self._stop.is_set():
                # deadlines are checked every _SWEEP_S, not per event: a sweep is O(waiting connections)
                timeout = max(0.0, min(poll_interval, next_sweep - time.monotonic()))
                try:
                    self._round(timeout)
                except Exception:  # the acceptor must outlive any one fault, or the endpoint goes dark
                    log.exception("the HTTP acceptor hit an unexpected error; continuing")
                    self._stop.wait(0.1)
                now = time.monotonic()
                if now >= next_sweep:
                    self._expire(now)
                    next_sweep = now + _SWEEP_S
                if not self._accepting and self._has_room() and time.monotonic() >= self._resume_accept_at:
                    self._set_accepting(True)
        finally:
            self._stopped.set()

    def _round(self, timeout: float) -> None:
        for key, _ in self._selector.select(timeout):
            if key.fileobj is self._listener:
                self._accept()
            elif key.fileobj is self._wake_r:
                self._drain_wakeups()
            else:
                self._read(key.data)
        self._drain_returned()

    def _set_accepting(self, on: bool) -> None:
        if on and not self._accepting:
            self._selector.register(self._listener, selectors.EVENT_READ, None)
        elif not on and self._accepting:
            self._selector.unregister(self._listener)
        self._accepting = on

    def _has_room(self) -> bool:
        return len(self._waiting) + self._busy < self.limits.max_connections or bool(self._waiting)

    def _accept(self) -> None:
        for _ in range(64):  # a burst at a time, then let the others run
            full = len(self._waiting) + self._busy >= self.limits.max_connections
            if full and not self._waiting:  # every connection is being served: the backlog holds the rest
                self._set_accepting(False)
                return
            try:
                sock, peer = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    if self._waiting:
                        self._evict_oldest()
                        continue
                    log.warning("out of file descriptors; pausing accepts for 0.1 s")
                    self._resume_accept_at = time.monotonic() + 0.1
                    self._set_accepting(False)
                    return
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EPERM):
                    continue  # the client gave up before we accepted it
                raise
            if full:  # make room for the newcomer (only once there is one: accept() may find none)
                self._evict_oldest()
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock, str(peer[0]), time.monotonic() + self.limits.header_timeout_s)
            self._wait(conn)
            self._read(conn)  # the request often arrives with the connection

    def _evict_oldest(self) -> None:
        _, conn = self._waiting.popitem(last=False)
        self._selector.unregister(conn.sock)
        conn.sock.close()
        self.evicted += 1

    def _wait(self, conn: _Conn) -> None:
        self._waiting[conn.sock.fileno()] = conn
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _unwait(self, conn: _Conn) -> None:
        del self._waiting[conn.sock.fileno()]
        self._selector.unregister(conn.sock)

    def _read(self, conn: _Conn) -> None:
        if self._waiting.get(conn.sock.fileno()) is not conn:
            return  # already handed over or closed in this round
        try:
            chunk = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # the client closed (or reset) the connection
            self._unwait(conn)
            conn.sock.close()
            return
        if not conn.buf and not conn.fresh:  # first byte of the next request on a kept-alive connection
            conn.deadline = time.monotonic() + self.limits.header_timeout_s
        conn.buf += chunk
        self._maybe_dispatch(conn)

    def _maybe_dispatch(self, conn: _Conn) -> None:
        end = conn.buf.find(b"\r\n\r\n", 0, self.limits.max_header_bytes + 4)
        if end < 0 and len(conn.buf) <= self.limits.max_header_bytes:
            return  # not complete yet: keep waiting (until the header deadline)
        self._unwait(conn)
        self._busy += 1
        self._pool.submit(self._serve, conn, end, time.monotonic())

    def _expire(self, now: float) -> None:
        for conn in [c for c in self._waiting.values() if c.deadline <= now]:
            self._unwait(conn)
            self.timed_out += 1
            if conn.buf:  # a header that never completed: say so (best effort, never blocks)
                with contextlib.suppress(OSError):
                    conn.sock.send(_simple(408, b"request header not received in time\n"))
            conn.sock.close()

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _drain_returned(self) -> None:
        while self._returned:
            conn = self._returned.popleft()
            self._busy -= 1
            if conn is None:
                continue
            conn.sock.setblocking(False)
            conn.fresh = False
            conn.deadline = time.monotonic() + self.limits.keepalive_timeout_s
            if self._stop.is_set():
                conn.sock.close()
                continue
            self._wait(conn)
            if conn.buf:  # a pipelined request already arrived
                conn.deadline = time.monotonic() + self.limits.header_timeout_s
                self._maybe_dispatch(conn)

    def _give_back(self, conn: _Conn | None) -> None:
        self._returned.append(conn)
        self._wake()

    # -- a worker: one request ------------------------------------------------------------------------

    def _serve(self, conn: _Conn, end: int, received_at: float) -> None:
        keep = False
        try:
            conn.sock.settimeout(self.limits.write_timeout_s)
            keep = self._respond(conn, end, received_at)
        except Exception:  # never let one request take a worker down
            log.exception("serving a request from %s failed", conn.peer)
            keep = False
        finally:
            if not keep:
                try:
                    conn.sock.close()
                finally:
                    self._give_back(None)
            else:
                self._give_back(conn)

    def _respond(self, conn: _Conn, end: int, received_at: float) -> bool:
        if end < 0:
            conn.sock.sendall(_simple(431, b"request header too large\n"))
            return False
        head = bytes(conn.buf[:end])
        del conn.buf[: end + 4]
        try:
            method, target, version, headers = _parse_head(head)
        except _BadRequestError as exc:
            conn.sock.sendall(_simple(exc.status, str(exc).encode() + b"\n"))
            return False
        connection = headers.get("connection", "").lower()
        keep = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        if headers.get("content-length", "0").strip() not in ("", "0") or "transfer-encoding" in headers:
            keep = False  # we never read request bodies; close rather than misread the next request
        environ = self._environ(conn, (method, target, version), headers, received_at)
        status, out_headers, body = call_wsgi(self.app, environ)
        names = {k.lower() for k, _ in out_headers}
        lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in out_headers]
        if "content-length" not in names:
            lines.append(f"Content-Length: {len(body)}")
        lines.append("Connection: keep-alive" if keep else "Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        conn.sock.sendall(data if method == "HEAD" else data + body)
        return keep

    def _environ(
        self, conn: _Conn, line: tuple[str, str, str], headers: dict[str, str], received_at: float
    ) -> dict[str, Any]:
        method, target, version = line
        path, _, query = target.partition("?")
        env: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
            "QUERY_STRING": query,
            "SERVER_NAME": str(self.server_address[0]),
            "SERVER_PORT": str(self.server_address[1]),
            "SERVER_PROTOCOL": version,
            "REMOTE_ADDR": conn.peer,
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(b""),
            "wsgi.errors": _LogStream(),
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            RECEIVED_AT: received_at,
        }
        for name, value in headers.items():
            key = name.upper().replace("-", "_")
            if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                env[key] = value
            else:
                env["HTTP_" + key] = value
        return env

    # -- lifecycle ------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop `serve_forever()` and wait for it to return."""
        self._stop.set()
        self._wake()
        self._stopped.wait(timeout=10)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # the wake-up pipe is full: the acceptor is awake anyway
            self._wake_w.send(b"x")

    def server_close(self) -> None:
        """Close the listener and every connection; workers finish the request they are writing."""
        self._pool.shutdown(wait=True)  # queued requests are answered; each is bounded by write_timeout_s
        for conn in list(self._waiting.values()):
            conn.sock.close()
        self._waiting.clear()
        while self._returned:
            kept = self._returned.popleft()
            if kept is not None:
                kept.sock.close()
        self._selector.close()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    def open_connections(self) -> int:
        """Connections open now (waiting plus being served); approximate while running."""
        return len(self._waiting) + self._busy


class _LogStream:
    """`wsgi.errors`: what an app writes there goes to the log."""

    def write(self, text: str) -> int:
        if text.strip():
            log.warning("%s", text.rstrip())
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[1].startswith("/"):
        raise _BadRequestError(400, "malformed request line")
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise _BadRequestError(505, "only HTTP/1.0 and HTTP/1.1 are served")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _BadRequestError(400, "malformed header line")
        key = name.lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return method.upper(), target, version, headers


def call_wsgi(app: WsgiApp, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """Run a WSGI app to completion: (status, headers, body)."""
    got: list[tuple[str, list[tuple[str, str]]]] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        del exc_info  # the app's exception, if any, propagates from app() itself
        got[:] = [(status, list(headers))]
        return written.append

    result = app(environ, start_response)
    try:
        body = b"".join([*written, *result])
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    if not got:
        raise RuntimeError("the WSGI app did not call start_response")
    return got[0][0], got[0][1], body


def _simple(code: int, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {code} {_REASONS.get(code, '')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body
