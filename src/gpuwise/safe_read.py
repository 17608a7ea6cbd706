"""Reading a user's file whole, bounded: the one reader for every TOML and JSON file a user hands us
(workloads, config.toml, doctor fingerprints, bench results).

A hostile or mistaken file must end as bad input (a ConfigError, exit 2), never as a hang, a traceback or
gigabytes of memory:
- a named pipe or device is refused before it is opened for reading (a FIFO with no writer blocks open(),
  /dev/zero never ends), except the process's own streams (/dev/stdin, /dev/fd/N, `<(…)`), which are read
  under the same size cap;
- at most ``max_bytes`` are read;
- nesting deeper than ``max_depth`` is refused: before parsing for TOML (tomllib recurses once per level
  and raises RecursionError near 500, and a key of 20,000 dotted parts takes it seconds, quadratically),
  after parsing for JSON (whose C parser fails fast), so no caller ever walks a 400-deep structure;
- RecursionError and MemoryError from a parser become bad input.

Standard library, gpuwise.errors and gpuwise.locale only: every room may import it.
"""

from __future__ import annotations

import codecs
import fcntl
import json
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.locale import _

MAX_BYTES = 4 << 20  # 4 MiB: JSON (a C parser, fast); the largest fingerprint or bench file is under 100 kB
# 256 KiB for TOML: tomllib is pure Python, and at 4 MiB some shapes (a long array, thousands of tables)
# took 10-35 s on a busy 2-core machine; the largest workload or config we know is under 10 kB.
MAX_TOML_BYTES = 256 << 10
MAX_DEPTH = 32  # our formats nest 4 levels at most; 32 leaves room for users' extra tables
MAX_DOTTED_PARTS = 32  # a.b.c… in one TOML key: tomllib's time grows with the square of the parts

# The process's own streams: `--config <(…)` or `/dev/stdin` are pipes with a writer already attached.
_STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/", "/dev/stdin")


def read_bytes(path: Path, *, what: str, fix: str, max_bytes: int = MAX_BYTES) -> bytes:
    """The whole content of ``path`` ("{what} {path} …" in messages), or a ConfigError."""
    return read_bytes_and_stat(path, what=what, fix=fix, max_bytes=max_bytes)[0]


def read_bytes_and_stat(
    path: Path, *, what: str, fix: str, max_bytes: int = MAX_BYTES
) -> tuple[bytes, os.stat_result]:
    """The whole content of ``path`` and the stat of the very file read (owner, mode: for callers that must
    trust the file, see gpuwise.config.check_trusted_file).

    The file is opened without blocking and checked on the open descriptor, so what is checked is what
    is read (no swap between a stat() and the open())."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise ConfigError(_("{what} {path} does not exist").format(what=what, path=path), fix=fix) from exc
    except OSError as exc:
        raise _cannot_read(what, path, exc, fix) from exc
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(_("{what} {path} is a directory").format(what=what, path=path), fix=fix)
        if not stat.S_ISREG(mode):
            if not (str(path).startswith(_STREAM_PREFIXES) and stat.S_ISFIFO(mode)):
                kind = (
                    _("{what} {path} is a named pipe (FIFO)")
                    if stat.S_ISFIFO(mode)
                    else _("{what} {path} is not a regular file (a device or socket)")
                )
                raise ConfigError(
                    kind.format(what=what, path=path),
                    why=_("reading it would wait for a writer or never end"),
                    fix=fix,
                )
            # our own stream: read it with ordinary blocking reads
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise _cannot_read(what, path, exc, fix) from exc
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise ConfigError(
            _("{what} {path} is larger than {size}").format(what=what, path=path, size=_size(max_bytes)),
            why=_("no file of this kind is anywhere near that size: it is probably the wrong file"),
            fix=fix,
        )
    return data, st


def _cannot_read(what: str, path: Path, exc: OSError, fix: str) -> ConfigError:
    return ConfigError(
        _("Cannot read {what} {path}: {reason}").format(what=what.lower(), path=path, reason=exc.strerror),
        fix=fix,
    )


def read_text(path: Path, *, what: str, fix: str, max_bytes: int = MAX_BYTES) -> str:
    """Like read_bytes, decoded as UTF-8 (a binary file is named with the offset of its first bad byte)."""
    return decode_utf8(read_bytes(path, what=what, fix=fix, max_bytes=max_bytes), f"{what} {path}", fix=fix)


def decode_utf8(data: bytes, source: str, *, fix: str) -> str:
    """UTF-8 text, or a ConfigError that names the offset of the first bad byte. A leading byte-order mark
    (Windows Notepad writes one) is dropped: tomllib and json read it as a stray character at line 1."""
    try:
        return codecs.decode(data, "utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            _("{source} is not a text file: byte {offset} is not UTF-8").format(
                source=source, offset=exc.start
            ),
            fix=fix,
        ) from exc


def load_toml(
    path: Path, *, what: str, fix: str, max_bytes: int = MAX_TOML_BYTES, max_depth: int = MAX_DEPTH
) -> dict[str, Any]:
    """Read and parse a TOML file under the size and nesting bounds."""
    return parse_toml(
        read_text(path, what=what, fix=fix, max_bytes=max_bytes),
        f"{what} {path}",
        fix=fix,
        max_depth=max_depth,
    )


def load_json(
    path: Path, *, what: str, fix: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """Read and parse a JSON file under the size and nesting bounds."""
    return parse_json(
        read_text(path, what=what, fix=fix, max_bytes=max_bytes),
        f"{what} {path}",
        fix=fix,
        max_depth=max_depth,
    )


# Everything that can hold a bracket, a dot or an '=' without it being structure: strings and comments.
# Unterminated strings simply do not match here; tomllib then reports them with their line.
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}=,.\n]', re.S
)


def parse_toml(text: str, source: str, *, fix: str, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """Parse TOML text; ``source`` ("Workload file x.toml") starts every message."""
    _check_toml_shape(text, source, fix=fix, max_depth=max_depth)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            _("{source} is not valid TOML: {error}").format(source=source, error=exc), fix=fix
        ) from exc
    except (RecursionError, MemoryError) as exc:
        raise _too_deep(source, max_depth, fix) from exc
    except ValueError as exc:  # an integer of more than 4,300 digits (int()'s limit) is not a TOMLDecodeError
        raise ConfigError(
            _("{source} holds a value Python cannot read: {error}").format(source=source, error=exc), fix=fix
        ) from exc
    _check_depth(data, source, fix=fix, max_depth=max_depth)
    return data


def parse_json(text: str, source: str, *, fix: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse strict JSON text (NaN and Infinity are refused: they are not JSON)."""

    def refuse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    try:
        data = json.loads(text, parse_constant=refuse_constant)
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise ConfigError(
            _("{source} is not JSON: {error}").format(source=source, error=exc), fix=fix
        ) from exc
    except (RecursionError, MemoryError) as exc:
        raise _too_deep(source, max_depth, fix) from exc
    _check_depth(data, source, fix=fix, max_depth=max_depth)
    return data


def _check_toml_shape(text: str, source: str, *, fix: str, max_depth: int) -> None:
    """Refuse, before tomllib sees it, nesting deeper than ``max_depth`` and keys of too many dotted parts."""
    depth = dots = 0
    max_parts = min(MAX_DOTTED_PARTS, max_depth)
    for match in _TOML_TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            dots = 0
            if depth > max_depth:
                raise _too_deep(source, max_depth, fix)
        elif token in ("]", "}"):
            depth = max(0, depth - 1)
            dots = 0
        elif token == ".":
            dots += 1
            if dots >= max_parts:
                line = text.count("\n", 0, match.start()) + 1
                raise ConfigError(
                    _("{source}: line {line} has a key of more than {n} dotted parts").format(
                        source=source, line=line, n=max_parts
                    ),
                    fix=fix,
                )
        elif token in ("=", ",", "\n"):
            dots = 0


def _check_depth(data: Any, source: str, *, fix: str, max_depth: int) -> None:
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:  # iterative: the point is not to recurse
        node, depth = stack.pop()
        if depth > max_depth:
            raise _too_deep(source, max_depth, fix)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _too_deep(source: str, max_depth: int, fix: str) -> ConfigError:
    return ConfigError(
        _("{source} nests tables or lists more than {n} levels deep").format(source=source, n=max_depth),
        why=_("no gpuwise file needs more than a few levels"),
        fix=fix,
    )


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} bytes"
