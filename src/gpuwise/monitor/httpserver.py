"""A small HTTP/1.1 server that stays responsive under load and abuse: one thread does all the I/O.

Why not `http.server.ThreadingHTTPServer` (what the exporter used first) or wsgiref: a thread per
connection with no timeouts and an accept backlog of 5 let 1,024 idle connections (they need no
token) starve every scrape, and 200 parallel scrapes overflowed the backlog (SYN retries: p99 > 1 s).
Why not a worker pool either (the second design): handing every request to a pool thread and back
cost four GIL hand-offs per request, and the pool's size capped how many scrapes one collection could
answer; 50 keep-alive clients saw p99 ~120-155 ms.

The design, in one paragraph. One loop thread owns the listening socket (backlog `backlog`, at least
128) and a `selectors` loop (epoll on Linux, so thousands of sockets cost nothing). A connection is
read without blocking until its request header has fully arrived; until then it is "waiting" and
costs one file descriptor and a small buffer. A complete header is parsed on the loop thread and
handed to the app as a `Request` with a `reply` callback. The app must not block: it answers at once
(`reply(response)` on the loop thread) or later from any thread (the exporter answers scrapes from its
collector thread). The loop writes each answer without blocking, one prebuilt buffer per response
(`Response.wire`, built once and shared by every request it answers); whatever the socket does not take
at once is written as it drains. A keep-alive connection then waits for its next request. Limits:

* a header must arrive within `header_timeout_s` of the connection (or of its first byte on a
  kept-alive connection): a slowloris client is answered 408 and closed; a kept-alive connection
  with no new request is closed after `keepalive_timeout_s`; an answer the client does not read
  within `write_timeout_s` is abandoned and the connection closed;
* a header larger than `max_header_bytes` is answered 431 and closed; a request with a body, or
  anything but GET/HEAD/OPTIONS, is answered by the app and then closed (bodies are never read);
* at most `max_connections` connections are open at once. When a new connection arrives at the cap,
  the connection that has waited longest without a complete request is closed to make room (idle
  and slow clients are the cheapest to lose: a real client reconnects, an attacker loses its slot).
  Only when every connection is being served does the loop stop accepting, so the kernel's backlog
  holds the newcomers until an answer is written. The same eviction answers running out of file
  descriptors (EMFILE).

So an idle flood cannot starve a scraper: a scraper's header completes within a round trip, after
which it cannot be evicted and is answered as soon as the app has its answer.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import unquote_to_bytes

log = logging.getLogger("gpuwise.monitor.http")

_SWEEP_S = 0.1  # how often waiting and writing connections are checked against their deadlines


@dataclass(frozen=True)
class Limits:
    """The server's bounds (defaults suit a metrics endpoint scraped by a few Prometheus servers)."""

    max_connections: int = 512
    backlog: int = 1024  # the kernel caps it at net.core.somaxconn (4096 on current Linux)
    header_timeout_s: float = 10.0  # Prometheus's default scrape_timeout is 10 s
    keepalive_timeout_s: float = 90.0
    write_timeout_s: float = 10.0
    max_header_bytes: int = 16384

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.backlog < 128:
            raise ValueError("max_connections must be 1 or more and backlog 128 or more")


@dataclass(frozen=True)
class Request:
    """One parsed request header (bodies are never read)."""

    method: str  # upper case
    path: str  # percent-decoded
    query: str
    version: str  # HTTP/1.0 or HTTP/1.1
    headers: Mapping[str, str]  # lower-case names; a repeated header's values joined by ", "
    received_at: float  # time.monotonic() when the header was complete
    peer: str


class Response:
    """A status, headers and body. Its bytes on the wire are built once per (keep-alive, HEAD) and then
    shared by every request it answers, so 50 scrapes answered by one collection cost one encoding."""

    __slots__ = ("_wire", "body", "headers", "status")

    def __init__(self, status: int, headers: Sequence[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = tuple(headers)
        self.body = body
        self._wire: dict[tuple[bool, bool], bytes] = {}

    def wire(self, keep_alive: bool, head_only: bool = False) -> bytes:
        """The whole response as sent; `head_only` (a HEAD request) leaves the body out."""
        got = self._wire.get((keep_alive, head_only))
        if got is None:
            lines = [f"HTTP/1.1 {self.status} {_reason(self.status)}"]
            lines += [f"{k}: {v}" for k, v in self.headers]
            if not any(k.lower() == "content-length" for k, _ in self.headers):
                lines.append(f"Content-Length: {len(self.body)}")
            lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            got = self._wire[keep_alive, head_only] = head if head_only else head + self.body
        return got


Reply = Callable[[Response], None]
App = Callable[[Request, Reply], None]  # runs on the loop thread; must not block; replies exactly once


@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    peer: str
    deadline: float  # monotonic time after which a waiting (or writing) connection is closed
    fresh: bool = True  # no request served on it yet
    buf: bytearray = field(default_factory=bytearray)
    keep: bool = False  # keep the connection open after the answer being written
    out: memoryview | None = None  # the part of the answer the socket has not taken yet


class _BadRequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class BoundedHTTPServer:
    """Serves `app` on `address` within `limits` (see the module docstring for the design).

    Use: `serve_forever()` in a thread; `shutdown()` from another; then `server_close()`."""

    def __init__(self, address: tuple[str, int], app: App, limits: Limits | None = None) -> None:
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
        self._serving: dict[int, _Conn] = {}  # by fd: handed to the app, or writing its answer
        self._writing: dict[int, _Conn] = {}  # by fd: the part of _serving with an answer half sent
        self._replies: list[tuple[_Conn, bool, bytes]] = []  # answers to write, queued from any thread
        self._replies_lock = threading.Lock()
        self._loop_thread: int | None = None
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._accepting = False
        self._resume_accept_at = 0.0
        self.evicted = 0  # connections closed to make room (tests and the log read it)
        self.timed_out = 0  # connections closed at their header, keep-alive or write deadline

    # -- the loop -------------------------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Run the loop until `shutdown()`; `poll_interval` bounds how late a deadline is noticed."""
        self._stopped.clear()
        self._loop_thread = threading.get_ident()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._set_accepting(True)
        try:
            next_sweep = 0.0
            while not self._stop.is_set():
                # deadlines are checked every _SWEEP_S, not per event: a sweep is O(open connections)
                timeout = max(0.0, min(poll_interval, next_sweep - time.monotonic()))
                try:
                    self._round(timeout)
                except Exception:  # the loop must outlive any one fault, or the endpoint goes dark
                    log.exception("the HTTP loop hit an unexpected error; continuing")
                    self._stop.wait(0.1)
                now = time.monotonic()
                if now >= next_sweep:
                    self._expire(now)
                    next_sweep = now + _SWEEP_S
                if not self._accepting and self._has_room() and time.monotonic() >= self._resume_accept_at:
                    self._set_accepting(True)
        finally:
            self._loop_thread = None
            self._stopped.set()

    def _round(self, timeout: float) -> None:
        for key, mask in self._selector.select(timeout):
            if key.fileobj is self._listener:
                self._accept()
            elif key.fileobj is self._wake_r:
                self._drain_wakeups()
            elif mask & selectors.EVENT_WRITE:
                self._write_more(key.data)
            else:
                self._read(key.data)
        self._write_replies()

    def _set_accepting(self, on: bool) -> None:
        if on and not self._accepting:
            self._selector.register(self._listener, selectors.EVENT_READ, None)
        elif not on and self._accepting:
            self._selector.unregister(self._listener)
        self._accepting = on

    def _open(self) -> int:
        return len(self._waiting) + len(self._serving)

    def _has_room(self) -> bool:
        return self._open() < self.limits.max_connections or bool(self._waiting)

    def _accept(self) -> None:
        for _ in range(64):  # a burst at a time, then let the others run
            full = self._open() >= self.limits.max_connections
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
        self._serving[conn.sock.fileno()] = conn
        self._dispatch(conn, end, time.monotonic())

    def _expire(self, now: float) -> None:
        for conn in [c for c in self._waiting.values() if c.deadline <= now]:
            self._unwait(conn)
            self.timed_out += 1
            if conn.buf:  # a header that never completed: say so (best effort, never blocks)
                with contextlib.suppress(OSError):
                    conn.sock.send(_simple(408, b"request header not received in time\n").wire(False))
            conn.sock.close()
        for conn in [c for c in self._writing.values() if c.deadline <= now]:
            log.debug("%s did not read its answer in %g s; closing", conn.peer, self.limits.write_timeout_s)
            self.timed_out += 1
            self._done(conn, keep=False)

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    # -- one request: parse, ask the app, write the answer ----------------------------------------------

    def _dispatch(self, conn: _Conn, end: int, received_at: float) -> None:
        if end < 0:
            self._reply(conn, False, _simple(431, b"request header too large\n"))
            return
        head = bytes(conn.buf[:end])
        del conn.buf[: end + 4]
        try:
            request = _parse_head(head, conn.peer, received_at)
        except _BadRequestError as exc:
            self._reply(conn, False, _simple(exc.status, str(exc).encode() + b"\n"))
            return
        connection = request.headers.get("connection", "").lower()
        keep = "close" not in connection if request.version == "HTTP/1.1" else "keep-alive" in connection
        if request.headers.get("content-length", "0").strip() not in ("", "0") or (
            "transfer-encoding" in request.headers
        ):
            keep = False  # we never read request bodies; close rather than misread the next request
        reply = _Reply(self, conn, keep, request.method == "HEAD")
        try:
            self.app(request, reply)
        except Exception:  # a fault in the app must not take the loop down
            log.exception("serving a request from %s failed", conn.peer)
            reply(_simple(500, b"internal error; see the log\n"))

    def _reply(self, conn: _Conn, keep: bool, response: Response, head_only: bool = False) -> None:
        """Queue an answer for the loop to write; callable from any thread."""
        data = response.wire(keep, head_only)
        with self._replies_lock:
            first = not self._replies
            self._replies.append((conn, keep, data))
        if first and threading.get_ident() != self._loop_thread:
            self._wake()  # one wake-up per batch: the loop takes every queued answer at once

    def _write_replies(self) -> None:
        while True:
            with self._replies_lock:
                replies, self._replies = self._replies, []
            if not replies:
                return
            for conn, keep, data in replies:
                conn.keep = keep
                self._send(conn, memoryview(data))

    def _send(self, conn: _Conn, data: memoryview) -> None:
        try:
            sent = conn.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:  # the client went away
            self._done(conn, keep=False)
            return
        if sent == len(data):
            self._done(conn, conn.keep)
            return
        fd = conn.sock.fileno()
        if conn.out is None:  # from now on the loop writes it as the socket drains
            conn.deadline = time.monotonic() + self.limits.write_timeout_s
            self._writing[fd] = conn
            self._selector.register(conn.sock, selectors.EVENT_WRITE, conn)
        conn.out = data[sent:]

    def _write_more(self, conn: _Conn) -> None:
        if conn.out is not None and self._writing.get(conn.sock.fileno()) is conn:
            self._send(conn, conn.out)

    def _done(self, conn: _Conn, keep: bool) -> None:
        fd = conn.sock.fileno()
        if self._writing.pop(fd, None) is not None:
            self._selector.unregister(conn.sock)
        conn.out = None
        self._serving.pop(fd, None)
        if not keep or self._stop.is_set():
            conn.sock.close()
            return
        conn.fresh = False
        conn.deadline = time.monotonic() + self.limits.keepalive_timeout_s
        self._wait(conn)
        if conn.buf:  # a pipelined request already arrived
            conn.deadline = time.monotonic() + self.limits.header_timeout_s
            self._maybe_dispatch(conn)

    # -- lifecycle ------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop `serve_forever()` and wait for it to return."""
        self._stop.set()
        self._wake()
        self._stopped.wait(timeout=10)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # the wake-up pipe is full: the loop is awake anyway
            self._wake_w.send(b"x")

    def server_close(self) -> None:
        """Close the listener and every connection (answers not yet written are dropped)."""
        close = getattr(self.app, "close", None)
        if close is not None:
            close()
        for conn in [*self._waiting.values(), *self._serving.values()]:
            conn.sock.close()
        self._waiting.clear()
        self._serving.clear()
        self._writing.clear()
        self._selector.close()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    def open_connections(self) -> int:
        """Connections open now (waiting plus being served); approximate while running."""
        return self._open()


class _Reply:
    """The `reply` callback of one request: the first answer counts, later ones are ignored."""

    __slots__ = ("_conn", "_head_only", "_keep", "_server", "_used")

    def __init__(self, server: BoundedHTTPServer, conn: _Conn, keep: bool, head_only: bool) -> None:
        self._server, self._conn, self._keep, self._head_only = server, conn, keep, head_only
        self._used = False

    def __call__(self, response: Response) -> None:
        if not self._used:
            self._used = True
            self._server._reply(self._conn, self._keep, response, self._head_only)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _parse_head(head: bytes, peer: str, received_at: float) -> Request:
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
    path, _, query = target.partition("?")
    return Request(
        method=method.upper(),
        path=unquote_to_bytes(path).decode("latin-1"),
        query=query,
        version=version,
        headers=headers,
        received_at=received_at,
        peer=peer,
    )


_TEXT = "text/plain; charset=utf-8"


def _simple(status: int, body: bytes) -> Response:
    return Response(status, [("Content-Type", _TEXT)], body)
