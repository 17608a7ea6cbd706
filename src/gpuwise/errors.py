"""The one exception tree of gpuwise.

    GpuwiseError                 anything gpuwise reports to a user (exit 1 unless a subclass says otherwise)
    ├── UsageError               bad input from the user: exit code 2
    │   ├── ConfigError          a workload, config or option value that is wrong
    │   ├── NotFoundError        an unknown name (GPU, preset, provider) — carries close matches
    │   └── ReplayError          a --replay path that is none of the recorded formats
    ├── CatalogError             the price catalog cannot be read, imported or updated
    ├── GpuError                 NVML / nvidia-smi faults (a lost GPU, a driver that does not answer)
    └── StorageError             history database, object storage, files that cannot be written

Every error carries three parts, rendered by the CLI as one paragraph: what happened (the message),
why it probably happened (`why`) and what to do (`fix`, printed after "To fix:"). Adapters translate
third-party exceptions with ``raise … from exc`` so the cause survives under ``--debug``.

Must not import anything outside the standard library.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GpuwiseError(Exception):
    """Base of every error gpuwise reports to a user."""

    exit_code: int = 1

    def __init__(self, message: str, *, why: str = "", fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.why = why
        self.fix = fix

    def render(self) -> str:
        """One paragraph: what, why, and "To fix: …"."""
        # A message may end with a question ("Did you mean 'H100'?") or a listing that ends its line:
        # keep those as they are rather than add a full stop.
        message = self.message
        parts = [message if message.endswith(("?", "\n")) else message.rstrip(".") + "."]
        if self.why:
            why = self.why.rstrip(".")
            parts.append(why[:1].upper() + why[1:] + ".")
        if self.fix:
            parts.append("To fix: " + self.fix.rstrip(".") + ".")
        text = parts[0]
        for part in parts[1:]:
            text += part if text.endswith("\n") else " " + part
        return text


class UsageError(GpuwiseError):
    """Bad input from the user (a file, an option, a name): exit code 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A workload file, config file or option value that is wrong."""


class NotFoundError(UsageError):
    """An unknown name; carries close matches so the message can say "Did you mean …?"."""

    def __init__(self, kind: str, name: str, choices: Iterable[str], *, fix: str = "", why: str = "") -> None:
        self.kind = kind
        self.name = name
        self.matches = close_matches(name, choices)
        message = f"Unknown {kind} {name!r}"
        if self.matches:
            message += ". Did you mean " + " or ".join(repr(m) for m in self.matches) + "?"
        super().__init__(message, why=why, fix=fix)


class ReplayError(UsageError):
    """A --replay path that is none of the recorded formats gpuwise reads."""


class CatalogError(GpuwiseError):
    """The price catalog cannot be read, imported or updated."""


class GpuError(GpuwiseError):
    """NVML or nvidia-smi did not answer as expected."""


class StorageError(GpuwiseError):
    """A file, database or object store could not be read or written."""


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Names in ``choices`` close to ``word`` (case-insensitive), best first."""
    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[f] for f in found]
