"""Samples as JSON: the one convention every command uses (`monitor --json`, `doctor --json`, the exporter's
debug output). Pure; standard library only.

How a reading that has no value is written (documented in the README):

* a value is written as it is (`"util_gpu_pct": 97.0`);
* "not supported" is `null` plus `"<field>_status": "not supported"`;
* "failed" is `null` plus `"<field>_status": "failed: <why>"`.

So `.util_gpu_pct` is always a number or null for `jq`, and the reason is one key away. Processes are a
list of `{pid, name, used_memory_bytes, kind}` (with the same `_status` rule for their memory).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpuwise.gpu.sample import Failed, GpuProcess, NotSupported, Sample, Snapshot


def reading_status(reading: object) -> str | None:
    """None for a value, else the words that stand in for it."""
    if isinstance(reading, NotSupported):
        return "not supported"
    if isinstance(reading, Failed):
        return f"failed: {reading.why}"
    return None


def _put(out: dict[str, Any], name: str, reading: object) -> None:
    status = reading_status(reading)
    if status is None:
        out[name] = [_record(r) for r in reading] if isinstance(reading, tuple) else _record(reading)
    else:
        out[name] = None
        out[name + "_status"] = status


def _record(value: object) -> Any:
    """A nested record (a MIG device) follows the same rule field by field: `{}` for "not supported" was
    what a plain dataclass dump wrote."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            _put(out, f.name, getattr(value, f.name))
        return out
    return value


def process_to_json(process: GpuProcess) -> dict[str, Any]:
    out: dict[str, Any] = {"pid": process.pid, "name": process.name, "kind": process.kind}
    _put(out, "used_memory_bytes", process.used_memory_bytes)
    return out


def sample_to_json(sample: Sample) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(sample):
        value = getattr(sample, f.name)
        if f.name == "processes":
            status = reading_status(value)
            if status is None:
                out["processes"] = [process_to_json(p) for p in value]
            else:
                out["processes"] = None
                out["processes_status"] = status
        elif f.name == "extra":
            out["extra"] = dict(value)
        else:
            _put(out, f.name, value)
    return out


def snapshot_to_json(snapshot: Snapshot) -> dict[str, Any]:
    out: dict[str, Any] = {"gpus": [sample_to_json(s) for s in snapshot.samples]}
    _put(out, "driver_version", snapshot.driver_version)
    _put(out, "cuda_driver_version", snapshot.cuda_driver_version)
    out["errors"] = list(snapshot.errors)
    return out
