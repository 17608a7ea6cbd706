"""Printing helpers shared by every command: JSON to stdout, rich consoles, error paragraphs, and the
checks every command runs on the paths and numbers a user types before handing them to a room.

Must stay cheap to import (the standard library only): every command loads it. rich is imported when a
console is first used (`console`, `err_console`), so `gpuwise plan --json` never loads it (~40 ms).
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import json
import logging
import math
import os
import re
import select
import stat
import sys
from collections.abc import Iterable
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuwise.errors import ConfigError, StorageError, label_gap
from gpuwise.locale import _

if TYPE_CHECKING:
    from rich.console import Console

    console: Console  # stdout; built on first use by __getattr__ below
    err_console: Console  # stderr

# C0 controls but tab and newline, DEL, and C1 controls (U+0080-U+009F; some terminals read U+009B as CSI).
# Removed, not escaped: rich measured the text without them (a control has no width), so tables stay aligned,
# and what follows an ESC ("]0;pwned", "[2J") stays visible as plain text.
_CONTROLS = dict.fromkeys([*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)])


def sanitize_terminal_text(text: str) -> str:
    """``text`` without the control characters a terminal would act on (ESC starts escape sequences that
    retitle the window, clear the screen or, on some terminals, write files). GPU, process, provider and
    host names come from drivers, recordings and users' CSVs: never let them drive the terminal."""
    return text.translate(_CONTROLS)


def _safe_console(*, stderr: bool) -> Console:
    """A rich Console whose every rendered piece of text (tables, panels, plain prints, the live view, error
    paragraphs) is sanitised; rich's own styling travels outside the text, so colours survive."""
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

    class SafeConsole(Console):
        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            for segment in super().render(renderable, options):
                if segment.control or not segment.text:
                    yield segment
                    continue
                clean = segment.text.translate(_CONTROLS)
                yield segment if clean == segment.text else Segment(clean, segment.style, segment.control)

    return SafeConsole(stderr=stderr, highlight=False)


_CONSOLES: dict[str, bool] = {"console": False, "err_console": True}  # name -> writes to stderr


def __getattr__(name: str) -> Any:
    """`console` and `err_console`, each built once on first use (PEP 562), so importing this module does
    not import rich."""
    if name not in _CONSOLES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = _safe_console(stderr=_CONSOLES[name])
    globals()[name] = made
    return made


def closed_pipe(exc: BaseException) -> bool:
    """Whether `exc` comes from writing to stdout after its reader went away (`gpuwise … | head -3`).

    typer turns a BrokenPipeError into SystemExit(1), and so does rich's console (for typer's help, after
    pointing stdout at /dev/null); the BrokenPipeError stays reachable as the exit's context. A broken
    pipe elsewhere (a socket whose peer left) is a real fault: stdout must be the pipe that broke."""
    seen: BaseException | None = exc
    for _depth in range(8):  # a context chain is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno == errno.EPIPE:
            return _stdout_unread()
        seen = seen.__cause__ or seen.__context__
    return False


def _stdout_unread() -> bool:
    """fd 1 is a pipe with no reader left (poll reports an error on its write end) or /dev/null, where
    rich puts it when its reader left."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, 0)
        if any(events & select.POLLERR for _fd, events in poller.poll(0)):
            return True
        now, null = os.fstat(fd), Path(os.devnull).stat()
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both OSError and ValueError
        return False
    return (now.st_dev, now.st_ino) == (null.st_dev, null.st_ino)


# A write refused because the disk behind it is full (or the user's quota, or the largest file size, was
# reached): a fault of the user's machine, worth one paragraph rather than a traceback.
_FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def write_refused(exc: OSError) -> StorageError | None:
    """The error to show for a write a full disk refused (`gpuwise plan --json > plan.json` on a full disk,
    `> /dev/full`), else None: any other OSError that reaches the CLI is a defect to see whole."""
    if exc.errno not in _FULL_DISK:
        return None
    return StorageError(
        _("A write failed: {reason}").format(reason=exc.strerror or exc),
        why=_("the disk that the output goes to is full, or your quota on it is used up"),
        fix=_("free some space, or send the output to another disk"),
    )


def ensure_std_streams() -> None:
    """A closed stdout or stderr (`gpuwise … >&-`, a daemon started without them) is None in Python, and every
    print would fail with AttributeError: give each the null device instead, as the user asked for silence."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, Path(os.devnull).open("w", encoding="utf-8"))  # noqa: SIM115 - kept open for the process


def stdout_failed() -> bool:
    """Whether stdout still holds output it cannot write (flushing it fails again)."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # ValueError: already closed
        return True
    return False


def reader_gone() -> None:
    """The reader of stdout went away (`gpuwise … | head -3`): send fd 1 to /dev/null, so what is still
    buffered, and the interpreter's own flush at exit, go nowhere instead of failing again ("Exception
    ignored … BrokenPipeError" and exit code 120). The recipe of Python's signal docs, "Note on SIGPIPE";
    SIGPIPE itself stays ignored, because exporter and idle write to sockets whose peers may go away."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # no descriptor to point elsewhere (a test harness): nothing will flush to a closed pipe


def print_error(text: str) -> None:
    """One error paragraph on stderr after a red "Error:" (no space after the Chinese "错误：")."""
    from rich.markup import escape

    label = _("Error:")
    stderr: Console = globals().get("err_console") or __getattr__("err_console")  # built on first use
    stderr.print(f"[bold red]{escape(label)}[/]{label_gap(label)}{escape(text)}", soft_wrap=True)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, pydantic models, dates, paths and enums -> plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if hasattr(obj, "model_dump") and callable(obj.model_dump):
        return to_jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, float) and not math.isfinite(obj):  # NaN and ±Infinity are not JSON
        return None
    return obj


_RAW_IN_JSON = re.compile("[\x7f-\x9f]")


def print_json(obj: Any) -> None:
    """Write one JSON document to stdout (plain write: rich would wrap long lines)."""
    # allow_nan=False: strict JSON, which jq and JavaScript parse (Python's own json would accept NaN)
    text = json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False)
    # json escapes C0 controls itself; DEL and C1 it writes raw. They can only sit inside strings, so
    # writing them as \u escapes keeps the data identical and keeps the terminal out of it.
    sys.stdout.write(_RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    sys.stdout.flush()


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]  # typeshed: generic over the stream
    """Writes to the stderr of the moment, not the one at set-up: a test harness (or a caller) that swaps
    sys.stderr after the first long-running command must not get "Logging error" tracebacks."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr  # handle() holds the handler's lock here
        super().emit(record)

    def format(self, record: logging.LogRecord) -> str:
        return sanitize_terminal_text(super().format(record))  # names reach log lines too


def setup_logging() -> None:
    """Long-running commands (monitor live, exporter, idle run) log to stderr instead of printing results.
    One handler on the "gpuwise" logger, added once per process."""
    root = logging.getLogger("gpuwise")
    if not root.handlers:
        handler = _StderrHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.INFO)


# A process-substitution or stdin path (`--replay <(nvidia-smi -q -x)`, `--replay /dev/stdin`) is a pipe
# with a writer already attached: reading it is the point. Any other pipe or device is refused.
_STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/", "/dev/stdin")
_TEXT_CHECK_BYTES = 1 << 20


def check_input_file(path: Path, what: str, *, fix: str, text: bool = False) -> None:
    """Refuse, as bad input, a path that would hang or crash the reader behind it.

    A named pipe (FIFO) with nobody writing blocks `open()` forever, and a device such as /dev/zero never
    ends; both are refused unless the path is the process's own stream (/dev/stdin, /dev/fd/N). With
    ``text=True`` a regular file must also be UTF-8 (workload and config files are TOML): a binary file
    is refused with the offset of the first bad byte. Missing files and directories are left to the
    reader, which names them itself.
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # missing or unreachable: the reader says so in its own words
    if stat.S_ISDIR(mode):
        return
    if not stat.S_ISREG(mode):
        if str(path).startswith(_STREAM_PREFIXES):
            return
        message = (
            _("{what} {path} is a named pipe (FIFO)")
            if stat.S_ISFIFO(mode)
            else _("{what} {path} is not a regular file (a device or socket)")
        )
        raise ConfigError(
            message.format(what=what, path=path),
            why=_("reading it would wait for a writer or never end"),
            fix=fix,
        )
    if not text:
        return
    try:
        with path.open("rb") as fh:
            head = fh.read(_TEXT_CHECK_BYTES)
    except OSError:
        return  # unreadable: the reader reports it
    try:
        # final=False: a multi-byte character cut at the end of the sample is not an error
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        raise ConfigError(
            _("{what} {path} is not a text file").format(what=what, path=path),
            why=_("byte {offset} is not UTF-8 (a binary file, or a file in another encoding)").format(
                offset=exc.start
            ),
            fix=fix,
        ) from exc


def check_at_least(value: float | None, minimum: float, option: str, *, example: str) -> None:
    """Bad input (exit 2, with "To fix:") when an option is below its minimum; None means not given."""
    if value is None:
        return
    number = int(minimum) if minimum == int(minimum) else minimum
    fix = _("use e.g. {example}").format(example=example)
    if not value >= minimum:  # `not >=` also catches NaN
        raise ConfigError(
            _("{option} must be {number} or more, not {value}").format(
                option=option, number=number, value=f"{value:g}"
            ),
            fix=fix,
        )
    if math.isinf(value):
        raise ConfigError(
            _("{option} must be a finite number, not {value}").format(option=option, value=f"{value:g}"),
            fix=fix,
        )


def folder_writable(folder: Path) -> bool:
    """Whether this process may create a file in `folder` (for root: only a read-only file system says no)."""
    return os.access(folder, os.W_OK | os.X_OK)


def check_output_file(path: Path, option: str, *, name: str) -> None:
    """The file a result goes to: not a directory, in a folder that exists and is writable. Checked before
    any work starts, so a mistyped path costs nothing and leaves nothing half-done. A device, FIFO,
    socket or unsafe symlink is refused too (gpuwise.files says which links are followed)."""
    from gpuwise.files import resolve_output

    parent = path.parent
    if path.is_dir() and not path.is_symlink():
        raise ConfigError(
            _("{option} {path} is a directory").format(option=option, path=path),
            fix=_("give a file name, e.g. {example}").format(example=f"{option} {path / name}"),
        )
    if not parent.is_dir():
        raise ConfigError(
            _("{option} {path}: the folder {parent} does not exist").format(
                option=option, path=path, parent=parent
            ),
            fix=_("create it first (mkdir -p {parent}) or choose another path").format(parent=parent),
        )
    if not folder_writable(parent):
        raise ConfigError(
            _("{option} {path}: the folder {parent} is not writable").format(
                option=option, path=path, parent=parent
            ),
            fix=_("choose another path"),
        )
    resolve_output(path, option)
