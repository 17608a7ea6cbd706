"""Load a `--query-gpu` CSV trace for `idle replay` through gpuwise.gpu.smi_csv, keeping every GPU's row.

The shared parser keys rows by (timestamp, index) and drops repeats. A CSV without an `index` column
whose GPUs share a timestamp (multi-GPU logs written with `--query-gpu=timestamp,utilization.gpu,…`)
would then lose every GPU but the first — and an idle policy that sees only an idle GPU 0 would stop a
machine whose GPU 1 is busy. When rows went missing that way, each row is parsed on its own (still by the
shared parser) and the policy's grouping tells the GPUs apart by position. Reads one file; no other I/O.
"""

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
    text = decode_text(data)
    samples = parse_query_csv(text, source=str(path))
    lines = [ln for ln in text.lstrip("\ufeff").split("\n") if ln.strip()]
    header, rows = lines[0], lines[1:]
    has_index = any(c.strip().lower().split(" ")[0] == "index" for c in header.split(","))
    if has_index or len(samples) >= len(rows):
        return samples
    out: list[Sample] = []
    for n, row in enumerate(rows, start=2):
        try:
            out.extend(parse_query_csv(header + "\n" + row + "\n", source=f"{path}, row {n}"))
        except ReplayError:
            if n == len(rows) + 1:
                continue  # a half-written last line, as the shared parser allows
            raise
    return out
