"""The one-line failure messages nvidia-smi prints instead of output, and the GPUs they say are lost.

`classify_error_text` names the failure (an `ErrorKind`; the doctor maps it to a finding). A GPU that
nvidia-smi names in an "Unable to determine the device handle" line becomes a lost sample beside the
others (`with_lost_gpus`), in whichever format the rest of the output is.

Pure: text in, data out. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from gpuwise.gpu.kernel_log import normalize_bus_id
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, ParseProblem, Reading, Sample, Snapshot
from gpuwise.gpu.smi_fields import Parsed
from gpuwise.locale import _

__all__ = [
    "ErrorKind",
    "classify_error_text",
    "looks_like_error_text",
    "lost_sample",
    "parse_error_text",
    "with_lost_gpus",
]


class ErrorKind:
    """Ids for the failure texts nvidia-smi prints instead of output (the doctor maps them to findings)."""

    DRIVER_MISSING = "driver_missing"  # "couldn't communicate with the NVIDIA driver"
    NO_DEVICES = "no_devices"  # "No devices were found"
    GPU_LOST = "gpu_lost"  # "Unable to determine the device handle for GPU…" / "GPU is lost"
    NVML_INIT = "nvml_init"  # "Failed to initialize NVML: Unknown Error"
    LIBRARY_MISMATCH = "library_mismatch"  # "Failed to initialize NVML: Driver/library version mismatch"


_ERROR_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"couldn't communicate with the NVIDIA driver", re.I), ErrorKind.DRIVER_MISSING),
    (re.compile(r"^No devices were found", re.I | re.M), ErrorKind.NO_DEVICES),
    (re.compile(r"Unable to determine the device handle for GPU", re.I), ErrorKind.GPU_LOST),
    (re.compile(r"GPU is lost", re.I), ErrorKind.GPU_LOST),
    (re.compile(r"Driver/library version mismatch", re.I), ErrorKind.LIBRARY_MISMATCH),
    (re.compile(r"Failed to initialize NVML", re.I), ErrorKind.NVML_INIT),
)
_LOST_BUS = re.compile(
    r"device handle for GPU\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])"
)


def classify_error_text(text: str) -> str | None:
    """The ErrorKind of an nvidia-smi failure text, or None."""
    head = text[:4000]
    for pattern, kind in _ERROR_PATTERNS:
        if pattern.search(head):
            return kind
    return None


def looks_like_error_text(text: str) -> bool:
    """A short output (a few lines) that is one of nvidia-smi's failure messages."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return 0 < len(lines) <= 5 and classify_error_text(text) is not None


_LOST_LINE = re.compile(
    r"^[^\S\n]*Unable to determine the device handle for GPU\s*"
    r"(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]).*$",
    re.M | re.I,
)


def with_lost_gpus(snapshot: Snapshot, text: str, timestamp_s: float) -> Snapshot:
    """`snapshot` plus a lost sample for each GPU that nvidia-smi said it could not reach, in a line printed
    before (or among) the readings of the others. A lost GPU must never vanish silently: its index is
    unknown, so it goes after the others with `extra["index_known"] = "no"`."""
    found = list(_LOST_LINE.finditer(text))
    if not found:
        return snapshot
    known = {normalize_bus_id(s.bus_id) for s in snapshot.samples if isinstance(s.bus_id, str)}
    samples = list(snapshot.samples)
    errors = list(snapshot.errors)
    next_index = max((s.index for s in samples), default=-1) + 1
    for m in found:
        line = " ".join(m.group(0).split())
        if line not in errors:
            errors.append(line)
        bus = m.group("bus").upper()
        if normalize_bus_id(bus) in known:
            continue
        known.add(normalize_bus_id(bus))
        lost = lost_sample(timestamp_s, next_index, bus, line)
        lost.extra["index_known"] = "no"
        samples.append(lost)
        next_index += 1
    return replace(snapshot, samples=tuple(samples), errors=tuple(errors))


def lost_sample(timestamp_s: float, index: int, bus_id: Reading[str], why: str) -> Sample:
    """A GPU that cannot be reached: every reading Failed(why), `lost=True`."""
    failed = Failed(why)
    readings: dict[str, Any] = {
        name: failed
        for name in Sample.__dataclass_fields__
        if name not in ("timestamp_s", "index", "lost", "extra", "bus_id")
    }
    return Sample(timestamp_s=timestamp_s, index=index, bus_id=bus_id, lost=True, **readings)


def parse_error_text(text: str, *, source: str = "<text>", default_timestamp_s: float = 0.0) -> Parsed:
    """A failure message -> a Snapshot with no samples (or one lost GPU) and the message in `errors`.

    The kind is in `classify_error_text(snapshot.errors[0])`. A lost GPU's index is unknown from the
    message, so the lost sample gets index 0 and `extra["index_known"] = "no"`.
    """
    message = " ".join(text.split())
    kind = classify_error_text(text)
    samples: tuple[Sample, ...] = ()
    if kind == ErrorKind.GPU_LOST:
        m = _LOST_BUS.search(text)
        bus: Reading[str] = m.group(1).upper() if m else NOT_SUPPORTED
        lost = lost_sample(default_timestamp_s, 0, bus, message)
        lost.extra["index_known"] = "no"
        samples = (lost,)
    unrecognised = _("unrecognised nvidia-smi message: {message}").format(message=repr(message[:200]))
    problems = [] if kind else [ParseProblem(source, unrecognised)]
    return Parsed(Snapshot(samples=samples, errors=(message,)), problems)
