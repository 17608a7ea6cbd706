"""The checkpoint manifest and the rules about complete checkpoints (pure: no files, no clock, no network).

A checkpoint is a directory (or, for PyTorch Lightning, one `.ckpt` file) under the checkpoint directory.
It is *complete* when its writer says so, by the writer's own last act:

* gpuwise: a file `COMPLETE` written last (`gpuwise.checkpoint.commit(path)` writes it).
* Hugging Face Trainer: a folder `checkpoint-N` holding a `trainer_state.json` that parses. Trainer's
  `_save_checkpoint` writes the model, then optimizer, scheduler, scaler and RNG state, and
  `trainer_state.json` last (transformers `src/transformers/trainer.py`, read in 5.24.0 and late 4.x;
  releases before about 4.36 wrote `rng_state.pth` just after it, so a resume could miss only the RNG state).
  The file is written in place, so a half-written one fails to parse and the folder is not complete.
* torch.distributed.checkpoint (DCP): a folder holding `.metadata`. The coordinator writes it after every
  rank's data, to `.metadata.tmp` then renamed (`_FileSystemWriter.finish` in
  torch/distributed/checkpoint/filesystem.py).
* PyTorch Lightning: a `*.ckpt` file. Lightning saves through `_atomic_save` (a temporary file moved into
  place), so a file under its final name is whole.

Names that start with a dot or end in `.tmp`, `.part` or `.partial` are someone's work in progress and are
never checkpoints. The manifest (`gpuwise-manifest.json`) lists every file with its size and SHA-256; the
syncer writes it after every file is uploaded and verified, so a remote checkpoint without a manifest (a
half-finished upload) is never listed or resumed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MANIFEST_NAME = "gpuwise-manifest.json"
COMPLETE_MARKER = "COMPLETE"
HF_STATE = "trainer_state.json"
DCP_METADATA = ".metadata"
FORMAT_VERSION = 1
KINDS = ("gpuwise", "hf", "dcp", "lightning")

_WORK_IN_PROGRESS = (".tmp", ".part", ".partial")
_HF_NAME = re.compile(r"^checkpoint-\d+$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NUMBER = re.compile(r"\d+")


class ManifestError(ValueError):
    """A manifest that is not the format this module writes."""


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative to the checkpoint, POSIX separators
    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    run_id: str
    name: str  # the checkpoint's folder (or .ckpt file) name
    kind: str  # one of KINDS
    is_dir: bool
    step: int | None
    created_at: float  # the checkpoint's modification time, Unix seconds
    files: tuple[FileEntry, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": "gpuwise-checkpoint",
                "version": FORMAT_VERSION,
                "run_id": self.run_id,
                "name": self.name,
                "kind": self.kind,
                "is_dir": self.is_dir,
                "step": self.step,
                "created_at": self.created_at,
                "files": [
                    {"path": f.path, "size_bytes": f.size_bytes, "sha256": f.sha256} for f in self.files
                ],
            },
            indent=1,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Manifest:
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestError(f"not JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != "gpuwise-checkpoint":
            raise ManifestError("not a gpuwise checkpoint manifest")
        if data.get("version") != FORMAT_VERSION:
            raise ManifestError(
                f"manifest version {data.get('version')!r}; this gpuwise reads {FORMAT_VERSION}"
            )
        try:
            files = tuple(_file_entry(f) for f in data["files"])
            m = cls(
                run_id=_text(data["run_id"], "run_id"),
                name=_text(data["name"], "name"),
                kind=_text(data["kind"], "kind"),
                is_dir=bool(data["is_dir"]),
                step=_optional_int(data["step"]),
                created_at=float(data["created_at"]),
                files=files,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"missing or malformed field: {exc}") from exc
        problem = validate(m)
        if problem:
            raise ManifestError(problem)
        return m


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{field} must be a non-empty string")
    return value


def _optional_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ManifestError("step must be an integer or null")
    return value


def _file_entry(raw: Any) -> FileEntry:
    if not isinstance(raw, dict):
        raise ManifestError("a file entry is not an object")
    size = raw["size_bytes"]
    if isinstance(size, bool) or not isinstance(size, int):
        raise ManifestError("size_bytes must be an integer")
    return FileEntry(path=_text(raw["path"], "path"), size_bytes=size, sha256=_text(raw["sha256"], "sha256"))


def safe_relative(path: str) -> bool:
    """A relative POSIX path that stays inside its folder (no absolute path, no `..`, no empty part)."""
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        return False
    parts = path.split("/")
    return all(p not in ("", ".", "..") for p in parts)


def validate(m: Manifest) -> str | None:
    """Why `m` cannot be trusted, or None. Guards downloads against paths that escape the target folder."""
    if not is_checkpoint_name(m.name) or "/" in m.name:
        return f"checkpoint name {m.name!r} is not a plain name"
    if m.kind not in KINDS:
        return f"unknown kind {m.kind!r}"
    if "/" in m.run_id or m.run_id in (".", ".."):
        return f"run id {m.run_id!r} is not a plain name"
    if not m.files:
        return "lists no files"
    seen: set[str] = set()
    for f in m.files:
        if not safe_relative(f.path) or f.path == MANIFEST_NAME:
            return f"file path {f.path!r} is not a plain relative path"
        if f.path in seen:
            return f"file {f.path!r} listed twice"
        seen.add(f.path)
        if f.size_bytes < 0 or not _SHA256.match(f.sha256):
            return f"file {f.path!r} has a bad size or checksum"
    if not m.is_dir and [f.path for f in m.files] != [m.name]:
        return "a single-file checkpoint must list exactly its own file"
    return None


def is_checkpoint_name(name: str) -> bool:
    return bool(name) and not name.startswith(".") and not name.endswith(_WORK_IN_PROGRESS)


def step_of(name: str) -> int | None:
    """The step a checkpoint's name carries: its last number (`checkpoint-500`, `epoch=2-step=1000.ckpt`)."""
    numbers = _NUMBER.findall(name)
    return int(numbers[-1]) if numbers else None


def hf_state_parses(text: str | None) -> bool:
    if text is None:
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def complete_kind(
    name: str, is_dir: bool, files: Collection[str], hf_state_text: str | None = None
) -> str | None:
    """The kind of a complete checkpoint, or None when `name` is not one (yet).

    `files` are the names directly inside the folder; `hf_state_text` is the content of its
    `trainer_state.json` when there is one (the caller reads it; a half-written file does not parse)."""
    if not is_checkpoint_name(name):
        return None
    if not is_dir:
        return "lightning" if name.endswith(".ckpt") else None
    if COMPLETE_MARKER in files:
        return "gpuwise"
    if _HF_NAME.match(name) and HF_STATE in files and hf_state_parses(hf_state_text):
        return "hf"
    if DCP_METADATA in files:
        return "dcp"
    return None


@dataclass(frozen=True)
class Candidate:
    """A complete checkpoint found somewhere (local folder or remote URL)."""

    name: str
    step: int | None
    time_s: float
    where: str  # "local" or "remote"


def order_key(c: Candidate) -> tuple[int, float, str]:
    """Newest last: by the step in the name, then by time, then by name (a total order)."""
    return (c.step if c.step is not None else -1, c.time_s, c.name)


def newest(candidates: Iterable[Candidate]) -> Candidate | None:
    ordered = sorted(candidates, key=order_key)
    return ordered[-1] if ordered else None


def to_prune(candidates: Sequence[Candidate], keep: int) -> list[Candidate]:
    """The ones beyond the newest `keep` (keep >= 1: the newest complete checkpoint is never pruned)."""
    ordered = sorted(candidates, key=order_key)
    return ordered[: max(0, len(ordered) - max(1, keep))]


def listed_names(keys: Iterable[str], run_prefix: str) -> list[str]:
    """Checkpoint names under `run_prefix` whose manifest exists, from a flat listing of object keys.

    A folder without `gpuwise-manifest.json` is an upload that did not finish: never listed."""
    prefix = run_prefix.rstrip("/") + "/"
    names: set[str] = set()
    for key in keys:
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix) :].split("/")
        if len(rest) == 2 and rest[1] == MANIFEST_NAME and is_checkpoint_name(rest[0]):
            names.add(rest[0])
    return sorted(names)


def missing_or_wrong(m: Manifest, present: Mapping[str, int]) -> list[str]:
    """Files the manifest lists that `present` (relative path -> bytes) lacks or has at another size."""
    out: list[str] = []
    for f in m.files:
        size = present.get(f.path)
        if size is None:
            out.append(f"{f.path} missing")
        elif size != f.size_bytes:
            out.append(f"{f.path} is {size} bytes, manifest says {f.size_bytes}")
    return out


def run_id_from(env: Mapping[str, str], command: Sequence[str], checkpoint_dir: str) -> tuple[str, str]:
    """A run id that stays the same when the same job is relaunched, and where it came from.

    The launcher's own job id when there is one (it survives a relaunch on another machine), else a hash
    of the command line and the checkpoint directory (the same job relaunched the same way)."""
    for var in ("GPUWISE_RUN_ID", "SKYPILOT_TASK_ID", "DSTACK_RUN_NAME", "SLURM_JOB_ID"):
        value = env.get(var, "").strip()
        if value:
            return plain_run_id(value), var
    import hashlib

    digest = hashlib.sha256(json.dumps([list(command), checkpoint_dir]).encode("utf-8")).hexdigest()
    return "run-" + digest[:16], "hash of the command and checkpoint directory"


def plain_run_id(value: str) -> str:
    """Launcher ids can hold `/` or spaces; a run id is one path segment."""
    cleaned = re.sub(r"[^A-Za-z0-9._=-]+", "-", value).strip("-.")
    return cleaned[:128] or "run"


def format_for_listing(m: Manifest) -> dict[str, Any]:
    return {
        "run_id": m.run_id,
        "name": m.name,
        "kind": m.kind,
        "step": m.step,
        "created_at": m.created_at,
        "files": len(m.files),
        "bytes": m.total_bytes,
    }
