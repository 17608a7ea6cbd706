"""Load a `--query-gpu` CSV trace for `idle replay` (through gpuwise.gpu.smi_csv). Reads one file."""

from __future__ import annotations

from pathlib import Path

from gpuwise.errors import ReplayError
from gpuwise.gpu.sample import Sample
from gpuwise.gpu.smi_csv import decode_text, parse_query_csv


def load_trace(path: Path) -> list[Sample]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReplayError(
            f"cannot read {path}", why=exc.strerror or str(exc), fix="check the path and its permissions"
        ) from exc
    return parse_query_csv(decode_text(data), source=str(path))
