"""Mutations that damage real inputs: byte- and line-level mutations of a seed file, and structure-aware
mutations of parsed TOML/JSON trees and CSV tables.

Hypothesis draws a handful of integers per input (which seed, how many mutations, a random seed); the
mutations are derived from them here in plain Python. Drawing each mutation through hypothesis cost
2–5 ms per input, more than most parsers take, and ten thousand inputs per format must fit in minutes.
A crash is replayed from its saved input file, so nothing is lost by not shrinking.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import random
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time
from typing import Any

# Numbers that have broken parsers before: overflow, NaN, negative zero, 64-bit edges, forms some
# parsers accept and others do not, and nvidia-smi's own spellings of "no value".
NASTY_NUMBERS: tuple[str, ...] = (
    "1e308",
    "-1e308",
    "1e309",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "-0",
    "-0.0",
    "0",
    "-1",
    "1e-320",
    "18446744073709551616",
    "9" * 60,
    "-" + "9" * 60,
    "4294967295",
    "0x1F",
    "1_000",
    "+1",
    "01",
    "1.",
    ".5",
    "1e",
    "",
    " ",
    "N/A",
    "[N/A]",
    "[Not Supported]",
    "[Unknown Error]",
    "[GPU is lost]",
    "ERR!",
    "Unknown Error",
    "true",
    '"5"',
)

# Strings that break printing, quoting and splitting: control and escape sequences, bidi overrides,
# quotes of every kind, CSV/TOML/XML metacharacters and format directives.
NASTY_STRINGS: tuple[str, ...] = (
    "\x00",
    "\x07",
    "\x1b[2J\x1b[31m",
    "\x1b]8;;http://127.0.0.1/\x07link\x1b]8;;\x07",
    "\r",
    "\x7f",
    "\u202e",
    "\ufeff",
    "\u2028",
    "\U0001f600",
    '"',
    "'",
    '"""',
    "\\",
    ",",
    ";",
    "<",
    "&",
    "]]>",
    "<!--",
    "%",
    "%s%n",
    "{",
    "[",
    "]]",
    "=",
    "#",
    "\t",
    "\n",
    "\n\n",
    "[bold]x[/]",
    "$(id)",
    "`id`",
    "a b",
    "日本語",
)

NASTY_BYTES: tuple[bytes, ...] = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00\x00", b"\r\n")

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_TOKEN = re.compile(rb"[^\s,;=<>\"']+")

# A mutation is (kind, a, b): `kind` picks the operation, `a` and `b` are free integers it reads modulo
# whatever it needs. Kind 0 is the identity, so hypothesis shrinks towards the undamaged seed.
Op = tuple[int, int, int]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _pick(seq: Sequence[Any], n: int) -> Any:
    return seq[n % len(seq)]


def _long(n: int) -> bytes:
    # 1 KiB … 300 KiB: past csv's default 128 KiB field limit and any "name" a table column expects
    sizes = (1 << 10, 1 << 14, 131_073, 300_000)
    return _pick((b"A", b"9", b"\xc3\xa9", b"x,"), n >> 3) * _pick(sizes, n)


def _find(pattern: re.Pattern[bytes], data: bytes, a: int) -> re.Match[bytes] | None:
    """The first match at or after a position drawn from ``a`` (wrapping round): listing every match
    of a 100 KB recording would cost more than parsing it."""
    start = a % (len(data) + 1)
    return pattern.search(data, start) or pattern.search(data)


def apply_op(data: bytes, op: Op, *, nest: Callable[[int], tuple[bytes, bytes]] | None = None) -> bytes:
    """One byte/line mutation of ``data``."""
    kind, a, b = op
    n = len(data)
    kind %= 17
    if kind == 0:
        return data
    if kind == 1:  # truncate
        return data[: a % (n + 1)]
    if kind == 2:  # flip one bit
        if not n:
            return data
        i = a % n
        return data[:i] + bytes([data[i] ^ (1 << (b % 8))]) + data[i + 1 :]
    if kind == 3:  # overwrite one byte with any value
        if not n:
            return bytes([b % 256])
        i = a % n
        return data[:i] + bytes([b % 256]) + data[i + 1 :]
    lines = _lines(data)
    if kind == 4:  # delete a run of lines
        i = a % len(lines)
        return b"".join(lines[:i] + lines[i + 1 + b % 4 :])
    if kind == 5:  # duplicate a line, up to 50 times (two loggers writing one file, a stuck writer)
        i = a % len(lines)
        line = lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n"
        return b"".join([*lines[:i], *([line] * (1 + b % 50)), *lines[i:]])
    if kind == 6:  # shuffle the lines (or the lines after the first: keep a header)
        rng = random.Random(b)
        head, rest = (lines[:1], lines[1:]) if a % 2 else ([], lines[:])
        rest = [ln if ln.endswith(b"\n") else ln + b"\n" for ln in rest]
        rng.shuffle(rest)
        return b"".join(head + rest)
    if kind == 7:  # swap two lines
        i, j = a % len(lines), b % len(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return b"".join(lines)
    if kind == 8:  # replace one number with a nasty one
        m = _find(_NUMBER, data, a)
        if m is None:
            return data
        return data[: m.start()] + _pick(NASTY_NUMBERS, b).encode() + data[m.end() :]
    if kind == 9:  # replace every occurrence of one number (a whole column of them)
        m = _find(_NUMBER, data, a)
        if m is None:
            return data
        old = m.group()
        new = _pick(NASTY_NUMBERS, b).encode()
        return re.sub(rb"(?<![\d.])" + re.escape(old) + rb"(?![\d.])", new.replace(b"\\", b"\\\\"), data)
    if kind == 10:  # insert a nasty string
        i = a % (n + 1)
        return data[:i] + _pick(NASTY_STRINGS, b).encode() + data[i:]
    if kind == 11:  # insert invalid or awkward bytes
        i = a % (n + 1)
        return data[:i] + _pick(NASTY_BYTES, b) + data[i:]
    if kind == 12:  # one very long field in place of a token
        m = _find(_TOKEN, data, a)
        if m is None:
            return data + _long(b)
        return data[: m.start()] + _long(b) + data[m.end() :]
    if kind == 13:  # line endings: CRLF, CR only, or none at the end
        choice = b % 3
        if choice == 0:
            return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        if choice == 1:
            return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
        return data.rstrip(b"\r\n")
    if kind == 14:  # deep nesting, in the format's own syntax when it has one
        depth = _pick((50, 400, 1_000, 5_000, 100_000), b)
        opener, closer = nest(depth) if nest is not None else (b"[" * depth, b"]" * depth)
        i = a % (n + 1)
        # at a line start when possible: nesting inside a token is just a damaged token
        start = data.rfind(b"\n", 0, i) + 1
        return data[:start] + opener + closer + b"\n" + data[start:]
    if kind == 15:  # repeat a whole block of lines (a recording concatenated with itself)
        i = a % len(lines)
        j = min(len(lines), i + 1 + b % 40)
        block = b"".join(lines[i:j])
        if not block.endswith(b"\n"):
            block += b"\n"
        return b"".join(lines[:j]) + block * (1 + (b >> 6) % 3) + b"".join(lines[j:])
    # kind 16: delete a span of bytes
    i = a % (n + 1)
    return data[:i] + data[i + 1 + b % 64 :]


def random_ops(rng: random.Random, n: int) -> list[Op]:
    return [(rng.randrange(17), rng.getrandbits(31), rng.getrandbits(31)) for _ in range(n)]


def apply_ops(data: bytes, ops: list[Op], **kw: Any) -> bytes:
    for op in ops:
        data = apply_op(data, op, **kw)
    return data


# ---------------------------------------------------------------- gzip wrapping (replay files)


def gzip_wrap(data: bytes, mode: int) -> bytes:
    """A recording as `--replay` may meet it compressed: whole, cut short, damaged, or gzipped twice."""
    z = gzip.compress(data, compresslevel=1, mtime=0)
    mode %= 5
    if mode == 0:
        return z
    if mode == 1:  # truncated stream
        return z[: max(10, len(z) // 2)]
    if mode == 2:  # damaged body (CRC mismatch)
        i = min(len(z) - 9, 20)
        return z[:i] + bytes([z[i] ^ 0xFF]) + z[i + 1 :]
    if mode == 3:  # gzip of gzip
        return gzip.compress(z, compresslevel=1, mtime=0)
    return z + b"trailing garbage"  # two members, the second not gzip


_BOMB_CACHE: dict[tuple[bytes, int], bytes] = {}


def gzip_bomb(line: bytes, decompressed_mib: int) -> bytes:
    """Small gzip that inflates to ``decompressed_mib`` MiB of ``line`` repeated (a valid-looking
    recording that never ends). Built from identical gzip members, so building it is cheap."""
    key = (line, decompressed_mib)
    if key not in _BOMB_CACHE:
        chunk = line * max(1, (16 << 20) // max(1, len(line)))  # ~16 MiB per member
        member = gzip.compress(chunk, compresslevel=9, mtime=0)
        _BOMB_CACHE[key] = member * max(1, (decompressed_mib << 20) // len(chunk))
    return _BOMB_CACHE[key]


# ---------------------------------------------------------------- structure-aware trees (TOML, JSON)


# long values, drawn whole (hypothesis would spend milliseconds drawing 40,000 characters one by one)
_LONG_VALUES = ("A" * 40_000, "é" * 20_000, "\x1b[31m" * 5_000, "x" * 200_000, [0] * 20_000)


_VALUES: tuple[Any, ...] = (
    0,
    -1,
    1,
    2**63 - 1,
    -(2**63),
    10**40,
    0.0,
    -0.0,
    1e308,
    -1e308,
    1e-320,
    math.inf,
    -math.inf,
    math.nan,
    True,
    False,
    "",
    "auto",
    "H100",
    "llama-3-8b",
    "bf16",
    date(2026, 1, 1),
    datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
    time(12, 30),
    [],
    {},
    [1, "a"],
    [[[[[]]]]],
    {"x": {"y": {"z": 1}}},
    *NASTY_STRINGS,
)
_KEYS = ("", " ", "a.b", "x" * 200, "NaN", "\x1b[31m", "preset", "name", "count", "gpu", "enabled")


def random_value(rng: random.Random) -> Any:
    """A value of any TOML/JSON type, weighted towards the ones validators forget."""
    pick = rng.randrange(20)
    if pick == 0:
        return rng.choice(_LONG_VALUES)
    if pick == 1:
        return rng.randint(-(2**70), 2**70)
    if pick == 2:
        return rng.uniform(-1e6, 1e6) * rng.choice((1.0, 1e-300, 1e300))
    if pick == 3:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(12)))
    return rng.choice(_VALUES)


def random_key(rng: random.Random) -> str:
    if rng.randrange(3) == 0:
        return "".join(chr(rng.randrange(0x20, 0x250)) for _ in range(rng.randrange(1, 10)))
    return rng.choice(_KEYS)


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if len(prefix) > 30:  # inside a deliberately deep nest: nothing more to mutate there
        return out
    if isinstance(tree, dict):
        for k, v in tree.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(tree, list):
        for i, v in enumerate(tree[:20]):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _get(tree: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        tree = tree[p]
    return tree


def _nested(depth: int, leaf: Any, as_list: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


TreeOp = tuple[int, int, Any, str]


def random_tree_ops(rng: random.Random, n: int) -> list[TreeOp]:
    return [(rng.randrange(9), rng.getrandbits(31), random_value(rng), random_key(rng)) for _ in range(n)]


def apply_tree_ops(tree: Any, ops: list[TreeOp], *, max_depth: int = 3_000) -> Any:
    """Mutate a parsed TOML/JSON document: drop, rename, retype and nest keys and values."""
    import copy

    tree = copy.deepcopy(tree)
    for kind, n, value, key in ops:
        paths = _paths(tree)
        path = paths[n % len(paths)]
        if not path:
            if kind == 8 and isinstance(tree, dict):
                tree[key] = value
            continue
        parent = _get(tree, path[:-1])
        last = path[-1]
        if kind == 0:  # replace the value
            parent[last] = value
        elif kind == 1:  # delete it
            del parent[last]
        elif kind == 2 and isinstance(parent, dict):  # rename the key (typo, empty, control chars)
            parent[key] = parent.pop(last)
        elif kind == 3:  # wrap the value in a list
            parent[last] = [parent[last]]
        elif kind == 4:  # wrap the value in a table
            parent[last] = {str(key) or "k": parent[last]}
        elif kind == 5:  # nest deeply
            # deeper documents come from the byte-level nesting op (writing them here would need a
            # recursion limit that can overflow the C stack of the serialiser)
            depth = _pick((10, 200, 600, 1_500, max_depth), n >> 8)
            parent[last] = _nested(min(depth, max_depth), parent[last], bool(n & 1))
        elif kind == 6 and not isinstance(parent[last], list | dict):  # the value as a string ("5" for 5)
            parent[last] = str(parent[last])
        elif kind == 7 and isinstance(parent, dict):  # an extra unknown key next to it
            parent[key] = value
        elif kind == 8 and isinstance(parent, list):  # repeat the list element many times
            parent.extend([parent[last]] * (1 + n % 500))
    return tree


# ---------------------------------------------------------------- TOML writer (no dependency)


def _toml_key(key: Any) -> str:
    text = str(key)
    if re.fullmatch(r"[A-Za-z0-9_-]+", text):
        return text
    return _toml_str(text)


def _toml_str(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(value: Any, depth: int = 0) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v, depth + 1)}" for k, v in value.items()) + "}"
        )
    return _toml_str(str(value))


def to_toml(doc: Any) -> bytes:
    """Serialise a tree as TOML: top-level tables as [sections], deeper ones inline. Iterative where
    nesting is deep, so a 100,000-level document can be written (the reader is what is under test)."""
    import sys

    if not isinstance(doc, dict):
        doc = {"value": doc}
    plain = [(k, v) for k, v in doc.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in doc.items() if isinstance(v, dict)]
    lines = []
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))
    try:
        lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in plain)
        for k, v in tables:
            lines.append(f"\n[{_toml_key(k)}]")
            lines.extend(f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in v.items())
    except RecursionError:
        return b"value = 1\n"
    finally:
        sys.setrecursionlimit(old)
    return ("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass")


def to_json(doc: Any) -> bytes:
    """JSON as Python writes it (NaN and Infinity included: json.loads accepts them)."""
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))
    try:
        return json.dumps(doc, default=str).encode("utf-8", errors="surrogatepass")
    except (RecursionError, ValueError):
        return b"{}"
    finally:
        sys.setrecursionlimit(old)


# ---------------------------------------------------------------- CSV tables


CsvOp = tuple[int, int, int]


def random_csv_ops(rng: random.Random, n: int) -> list[CsvOp]:
    return [(rng.randrange(10), rng.getrandbits(31), rng.getrandbits(31)) for _ in range(n)]


def parse_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8", errors="replace"), newline="")))


def apply_csv_ops(rows: list[list[str]], ops: list[CsvOp], *, units: Sequence[str] = ()) -> list[list[str]]:
    """Mutate a table: cells, rows (duplicated, shuffled, dropped), columns and header names."""
    rows = [list(r) for r in rows] or [[""]]
    for kind, a, b in ops:
        r = a % len(rows)
        width = max(1, len(rows[r]))
        c = (a >> 8) % width
        if kind == 0:
            continue
        if kind == 1 and rows[r]:  # a nasty number in a cell
            rows[r][c] = _pick(NASTY_NUMBERS, b) + (" " + _pick(units, b >> 6) if units and b & 1 else "")
        elif kind == 2 and rows[r]:  # a nasty string in a cell
            rows[r][c] = _pick(NASTY_STRINGS, b)
        elif kind == 3 and rows[r]:  # a huge cell
            rows[r][c] = _long(b).decode("utf-8", errors="replace")
        elif kind == 4:  # duplicate a data row (or several), keeping or changing its place
            body = rows[1:] or rows
            row = body[a % len(body)]
            rows.insert(1 + b % len(rows), list(row))
            for _ in range(b % 20):
                rows.append(list(row))
        elif kind == 5:  # shuffle the data rows
            body = rows[1:]
            random.Random(b).shuffle(body)
            rows = rows[:1] + body
        elif kind == 6 and len(rows[0]) > 1:  # drop a column everywhere
            col = b % len(rows[0])
            rows = [row[:col] + row[col + 1 :] for row in rows]
        elif kind == 7:  # duplicate a column everywhere
            col = b % max(1, len(rows[0]))
            rows = [row[: col + 1] + row[col : col + 1] + row[col + 1 :] for row in rows]
        elif kind == 8 and rows[0]:  # rename a header cell (case, units, spaces, another column)
            col = b % len(rows[0])
            rows[0][col] = _pick(
                (
                    rows[0][col].upper(),
                    rows[0][col] + " [%]",
                    " " + rows[0][col] + " ",
                    "",
                    "index",
                    "timestamp",
                    rows[0][(col + 1) % len(rows[0])],
                ),
                a >> 4,
            )
        elif kind == 9 and rows[r]:  # a ragged row: cells missing or extra
            rows[r] = rows[r][: b % (len(rows[r]) + 1)] if a & 1 else rows[r] + ["x"] * (1 + b % 5)
    return rows


def write_csv(rows: list[list[str]], *, style: int = 0) -> bytes:
    """A table as csv writes it, or as nvidia-smi does (", " joined, no quoting: quotes stay raw)."""
    if style % 2 == 0:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        text = out.getvalue()
    else:
        text = "".join(", ".join(row) + "\n" for row in rows)
    return text.encode("utf-8", errors="surrogatepass")
