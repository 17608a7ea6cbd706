"""The one config file (docs/config.md): `[machine]`, `[idle]`, `[alerts]`, `[exporter]`.

Each capability validates its own section (with its own pydantic model); this module finds and reads
the file, turns TOML syntax errors into a ConfigError that names the file and line, and owns the checks
every file that leads to running a command must pass: `check_command_line` (it splits) and
`check_trusted_file` (nobody but its owner or root could have written it).
"""

from __future__ import annotations

import logging
import math
import os
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gpuwise import paths
from gpuwise.errors import ConfigError, close_matches
from gpuwise.locale import _

if TYPE_CHECKING:
    from pydantic import BaseModel

    M = TypeVar("M", bound=BaseModel)

KNOWN_SECTIONS = ("machine", "idle", "alerts", "exporter", "monitor")


@dataclass(frozen=True)
class Config:
    path: Path | None
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        return dict(self.sections.get(name, {}))


def load_config(path: Path | None = None) -> Config:
    """Read ``path`` (or the default config file). A missing default file is an empty config;
    a missing file the user named is an error.

    Read through gpuwise.safe_read (bounded size and nesting, no pipes or devices). Before anything is
    returned: every number must be finite, every command line must parse (COMMAND_KEYS), and a file that
    holds a command must be one only its owner and root can change (check_trusted_file)."""
    from gpuwise import safe_read

    explicit = path is not None
    target = path if path is not None else paths.config_file()
    if not target.exists() and not target.is_symlink():
        if explicit:
            raise ConfigError(
                _("Config file {path} does not exist").format(path=target),
                fix=_("create it, or drop --config to use {default}").format(default=paths.config_file()),
            )
        return Config(path=None)
    fix = _("correct the line named above (TOML syntax: key = value, [section])")
    raw, st = safe_read.read_bytes_and_stat(
        target,
        what=_("Config file"),
        fix=_("give the TOML config file, a few kB (default: {default})").format(default=paths.config_file()),
        max_bytes=safe_read.MAX_TOML_BYTES,
    )
    source = _("Config file {path}").format(path=target)
    text = safe_read.decode_utf8(
        raw, source, fix=_("give the TOML config file (a binary or non-UTF-8 file cannot be one)")
    )
    data = safe_read.parse_toml(text, source, fix=fix)
    unknown = [k for k in data if k not in KNOWN_SECTIONS]
    if unknown:
        hint = close_matches(unknown[0], KNOWN_SECTIONS)
        raise ConfigError(
            _("Config file {path}: unknown section [{section}]").format(path=target, section=unknown[0])
            + (_(". Did you mean [{section}]?").format(section=hint[0]) if hint else ""),
            fix=_("use only the sections {sections}").format(
                sections=", ".join(f"[{s}]" for s in KNOWN_SECTIONS)
            ),
        )
    sections = {k: v for k, v in data.items() if isinstance(v, dict)}
    _check_finite(sections, target)
    commands = []
    for section, key in COMMAND_KEYS:
        value = sections.get(section, {}).get(key)
        if isinstance(value, str):
            check_command_line(
                value, f"Config file {target}: {section}.{key}", shell=(section, key) in SHELL_KEYS
            )
        if value:
            commands.append(f"{section}.{key}")
    if commands:
        check_trusted_file(
            target, st, holds=_("the command in {keys}").format(keys=_(" and ").join(commands))
        )
    return Config(path=target, sections=sections)


# Keys whose value is a program gpuwise runs: (section, key). idle's run through /bin/sh -c; the alert
# command is split like a shell would (or given as a list) and run without a shell.
COMMAND_KEYS = (
    ("idle", "command"),
    ("idle", "pre_stop_hook"),
    ("idle", "activity_command"),  # split like a shell would and run without one (idle/activity.py)
    ("alerts", "command"),
)
SHELL_KEYS = (("idle", "command"), ("idle", "pre_stop_hook"))  # these go to /bin/sh -c

# The one way to run a config's commands from a file that fails check_trusted_file: loud, and per process.
INSECURE_ENV = "GPUWISE_INSECURE_CONFIG"


def _check_finite(sections: Mapping[str, Any], target: Path) -> None:
    """TOML has `inf` and `nan`; no setting of ours means either (a threshold of nan never fires)."""
    stack: list[tuple[str, Any]] = [(name, value) for name, value in sections.items()]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(
                _("Config file {path}: {key} = {value} is not a finite number").format(
                    path=target, key=where, value=value
                ),
                fix=_("give {key} a number (inf and nan are not allowed)").format(key=where),
            )
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))


def check_command_line(text: str, where: str, *, shell: bool = False) -> list[str]:
    """Split a command line like a POSIX shell would (shlex) and return its words, or raise a ConfigError
    that gives the position of the unclosed quote or the dangling backslash. ``shell``: the line goes to
    /bin/sh, where a word starting with '#' begins a comment (an apostrophe in it is not a quote).

    Called when a file is loaded, so a command that cannot run is refused at start, not met at the
    moment an alert fires or a machine should stop."""
    problem = _quote_problem(text, comments=shell)
    if problem is None:
        try:
            return shlex.split(text, comments=shell)
        except ValueError as exc:  # not expected after the scan; still bad input, not a traceback
            problem = (len(text) - 1, str(exc).lower())
    pos, what = problem
    raise ConfigError(
        _("{where}: {what} at character {pos} of {text}").format(
            where=where, what=what, pos=pos + 1, text=repr(text)
        ),
        why=_("the command line cannot be split into words the way a shell would"),
        fix=_(
            "close the quote (or escape it with a backslash); a list of words, e.g. "
            '["notify-send", "GPU alert"], needs no quoting where a list is allowed'
        ),
    )


def _quote_problem(text: str, *, comments: bool) -> tuple[int, str] | None:
    """(0-based position, what) of the first quoting error in ``text`` under POSIX shell rules."""
    i, n = 0, len(text)
    word_start = True
    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 >= n:
                return i, _("a backslash at the end, escaping nothing,")
            i += 2
            word_start = False
            continue
        if ch in "'\"":
            close = text.find("'", i + 1) if ch == "'" else _closing_double_quote(text, i + 1)
            if close < 0:
                return i, _("an unclosed single quote") if ch == "'" else _("an unclosed double quote")
            i = close + 1
            word_start = False
            continue
        if comments and ch == "#" and word_start:
            return None  # the rest is a comment
        word_start = ch.isspace()
        i += 1
    return None


def _closing_double_quote(text: str, i: int) -> int:
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i
        else:
            i += 1
    return -1


def check_trusted_file(path: Path, st: os.stat_result | None = None, *, holds: str) -> None:
    """Refuse (ConfigError, exit 2) a file whose content makes gpuwise run a program when someone other
    than the running user or root could have written it, like ssh's StrictModes for authorized_keys:
    the file is not owned by the running user or root, or it is writable by others, or by a group that
    is not the owner's own private group; or its folder is owned by someone else or writable by others
    (who could replace the file; a sticky folder such as /tmp lets nobody replace another's file).

    ``st`` is the stat of the file as read (safe_read.read_bytes_and_stat), so the check is on the very
    file whose content is used. ``holds`` says what the file would make us run. Setting
    GPUWISE_INSECURE_CONFIG=1 runs it anyway, with a warning on every load."""
    real = Path(os.path.realpath(path))
    try:
        file_st = st if st is not None else real.stat()
        dir_st = real.parent.stat()
    except OSError as exc:
        raise ConfigError(
            _("Cannot check who may change {path}: {reason}").format(path=path, reason=exc.strerror),
            fix=_("check the path"),
        ) from exc
    me = os.geteuid()
    problems: list[str] = []
    fixes: list[str] = []
    if file_st.st_uid not in (me, 0):
        problems.append(_("it belongs to {user}").format(user=_user(file_st.st_uid)))
        fixes.append(f"chown {_user(me)} {real}")
    if file_st.st_mode & stat.S_IWOTH or (
        file_st.st_mode & stat.S_IWGRP and not _private_group(file_st.st_gid, file_st.st_uid)
    ):
        problems.append(
            _("others can write to it (mode {mode})").format(mode=f"{stat.S_IMODE(file_st.st_mode):04o}")
        )
        fixes.append(f"chmod go-w {real}")
    if dir_st.st_uid not in (me, 0):
        problems.append(
            _("its folder {folder} belongs to {user}").format(folder=real.parent, user=_user(dir_st.st_uid))
        )
        fixes.append(_("move it to a folder of yours, e.g. {folder}").format(folder=paths.config_dir()))
    elif (dir_st.st_mode & stat.S_IWOTH and not dir_st.st_mode & stat.S_ISVTX) or (
        dir_st.st_mode & stat.S_IWGRP and not _private_group(dir_st.st_gid, dir_st.st_uid)
    ):
        problems.append(
            _("others can write to its folder {folder} (mode {mode})").format(
                folder=real.parent, mode=f"{stat.S_IMODE(dir_st.st_mode):04o}"
            )
        )
        fixes.append(f"chmod go-w {real.parent}")
    if not problems:
        return
    message = _("{path} holds {holds}, but {problems}").format(
        path=path, holds=holds, problems=_(" and ").join(problems)
    )
    why = _("whoever can change it could make gpuwise run their own command as {user}").format(user=_user(me))
    if os.environ.get(INSECURE_ENV) == "1":
        logging.getLogger("gpuwise.config").warning(
            "SECURITY: %s; running it anyway because %s=1 is set (%s)", message, INSECURE_ENV, why
        )
        return
    raise ConfigError(
        message,
        why=why,
        fix=_("{fixes} (or set {variable}=1 to run it anyway, at your own risk)").format(
            fixes=_(" and ").join(fixes), variable=INSECURE_ENV
        ),
    )


def _user(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _private_group(gid: int, uid: int) -> bool:
    """The owner's own group with nobody else in it (Debian and Ubuntu give each user one and a umask of
    002, so group-writable files are normal there and harmless: the same exception Debian's ssh makes)."""
    import grp
    import pwd

    try:
        user = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return user.pw_gid == gid and all(member == user.pw_name for member in group.gr_mem)


def validate_section(data: Mapping[str, Any], name: str, model: type[M], *, source: str = "config.toml") -> M:
    """Validate one section with the pydantic model of the room that owns it. The first problem becomes a
    ConfigError naming the file, the key and, for a misspelt key, its closest known spelling."""
    from pydantic import ValidationError

    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        problem = first["msg"]
        if first["type"] == "extra_forbidden":
            hint = close_matches(str(first["loc"][-1]), model.model_fields)
            problem = _("unknown key") + (
                _(". Did you mean {key}?").format(key=repr(hint[0])) if hint else ""
            )
        raise ConfigError(
            f"{source}: {name}.{where}: {problem}",
            fix=_("correct or remove that key in the [{section}] section").format(section=name),
        ) from exc
