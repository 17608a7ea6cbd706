"""Printing helpers shared by every command: JSON to stdout, rich consoles, error paragraphs."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import sys
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


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
    if isinstance(obj, float) and math.isnan(obj):  # NaN is not JSON
        return None
    return obj


def print_json(obj: Any) -> None:
    """Write one JSON document to stdout (plain write: rich would wrap long lines)."""
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def setup_logging() -> None:
    """Long-running commands (monitor live, exporter, idle run) log to stderr instead of printing results.
    One handler on the "gpuwise" logger, added once per process."""
    root = logging.getLogger("gpuwise")
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
