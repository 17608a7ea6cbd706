"""The systemd unit `gpuwise idle install` writes, with every path quoted and escaped for systemd.

systemd reads a unit line its own way, not a shell's (systemd.service(5) "Command lines", systemd.unit(5)
"Specifiers"): an ExecStart= line is split on whitespace unless a word is quoted, a quoted word takes
C-style backslash escapes, `%` starts a specifier everywhere (quoted or not; `%%` is a literal `%`), and
`$` substitutes an environment variable in ExecStart= (`$$` is a literal `$`). A virtualenv or data
folder with a space, `%` or `$` in its path therefore broke the unit written with shlex (shell) quoting.
Every word is written double-quoted with `\\`, `"` and control characters escaped, `%` doubled, and `$`
doubled in ExecStart=. Pure: strings in, text out. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuwise.errors import ConfigError
from gpuwise.locale import _

UNIT_NAME = "gpuwise-idle.service"

_C_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def systemd_quote(word: str, *, exec_line: bool) -> str:
    """`word` as one double-quoted systemd word whose value after systemd's unquoting, specifier and
    (with `exec_line`) variable expansion is `word` itself."""
    out: list[str] = []
    for ch in word:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ch == "%":
            out.append("%%")
        elif ch == "$" and exec_line:
            out.append("$$")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render_unit(exec_start: Sequence[str], config_dir: Path, data_dir: Path) -> str:
    """The unit text for `exec_start` (an absolute program path and its arguments)."""
    for word in exec_start:
        if "\x00" in word:
            raise ConfigError(
                _("the path {path} holds a NUL character").format(path=repr(word)),
                fix=_("install gpuwise elsewhere"),
            )
    command = " ".join(systemd_quote(w, exec_line=True) for w in exec_start)
    config = systemd_quote(f"GPUWISE_CONFIG_DIR={config_dir}", exec_line=False)
    data = systemd_quote(f"GPUWISE_DATA_DIR={data_dir}", exec_line=False)
    return (
        "[Unit]\n"
        "Description=gpuwise idle auto-stop (stops this machine when nobody uses its GPUs)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={command}\n"
        f"Environment={config}\n"
        f"Environment={data}\n"
        "Environment=PYTHONUNBUFFERED=1\n"
        "Restart=always\n"
        "RestartSec=30\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
