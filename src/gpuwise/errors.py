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

The render speaks the language gpuwise speaks (gpuwise.locale, a leaf too); in Chinese its sentences end
with "。" and are not separated by spaces.

Must not import anything outside the standard library.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from gpuwise.locale import _, language


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
        if language() != "en":
            return self._render_cjk()
        # A message may end with a question ("Did you mean 'H100'?") or a listing that ends its line:
        # keep those as they are rather than add a full stop.
        message = self.message
        parts = [message if message.endswith(("?", "\n")) else message.rstrip(".") + "."]
        if self.why:
            parts.append(sentence_start(self.why.rstrip(".")) + ".")
        if self.fix:
            parts.append("To fix: " + self.fix.rstrip(".") + ".")
        text = parts[0]
        for part in parts[1:]:
            text += part if text.endswith("\n") else " " + part
        return text

    def _render_cjk(self) -> str:
        """The paragraph in Chinese: a translated sentence ends with "。" and needs no space before the next
        one; a sentence still in English (not translated yet) keeps its English stop and spacing."""
        pieces = [self.message]
        if self.why:
            pieces.append(self.why)
        if self.fix:
            pieces.append(_("To fix: {fix}").format(fix=self.fix.rstrip(".。")))
        text = ""
        for piece in pieces:
            cjk = _has_cjk(piece)
            ended = piece.endswith(("?", "？", "\n", "!", "！"))
            sentence = piece if ended else piece.rstrip(".。") + ("。" if cjk else ".")
            if text and not text.endswith("\n") and not (cjk and _has_cjk(text[-1])):
                text += " "
            text += sentence
        return text


# Lower-case names that may open a "why" and keep their spelling there: gpuwise itself and the tools and
# libraries its messages name. Anything with a digit, dot, dash, slash, underscore, backtick or brace in
# its first word (paths, ids, code, option names) is never touched anyway.
_LOWER_CASE_NAMES = frozenset(
    {
        "gpuwise",
        "pip",
        "torch",
        "torchrun",
        "vllm",
        "sglang",
        "nvcc",
        "docker",
        "kubectl",
        "conda",
        "uv",
        "jq",
        "peft",
        "deepspeed",
        "sky",
        "systemd",
        "systemctl",
        "sudo",
        "apt",
        "curl",
        "git",
        "python",
    }
)
_ORDINARY_WORD = re.compile(r"[a-z]+[,;:]?")


def sentence_start(text: str) -> str:
    """`text` as the start of a sentence: its first letter capitalised when its first word is an ordinary
    lower-case word ("the file …" → "The file …"); a product name (gpuwise), code, a path, an option or an
    id keeps its spelling ("gpuwise reads …", "hf_config …", "/data …", "--gpu …")."""
    word = text.split(" ", 1)[0]
    if not _ORDINARY_WORD.fullmatch(word) or word.rstrip(",;:") in _LOWER_CASE_NAMES:
        return text
    return text[:1].upper() + text[1:]


def label_gap(label: str) -> str:
    """What separates a label ("Error:") from its text: a space after an ASCII colon, nothing after a
    full-width one ("错误：…"), whose width already holds the gap."""
    return "" if label.endswith("：") else " "


def labelled(label: str, text: str) -> str:
    """`label`, its gap, then `text`."""
    return label + label_gap(label) + text


def _has_cjk(text: str) -> bool:
    """Whether `text` holds a CJK ideograph or full-width punctuation (a translated sentence)."""
    return any("\u3000" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef" for c in text)


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
        if language() == "en":
            message = f"Unknown {kind} {name!r}"
            if self.matches:
                message += ". Did you mean " + " or ".join(repr(m) for m in self.matches) + "?"
        else:
            names = f" {_('or')} ".join(repr(m) for m in self.matches)
            template = (
                _("Unknown {kind} {name}. Did you mean {names}?")
                if self.matches
                else _("Unknown {kind} {name}")
            )
            message = template.format(kind=kind, name=repr(name), names=names)
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
