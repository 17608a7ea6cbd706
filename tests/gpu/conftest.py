"""Make this folder's helper module (`nvml_stub`) importable under either pytest import mode.

With `--import-mode=importlib` pytest no longer puts a test's folder on sys.path, so a sibling helper
would not import; adding the folder here keeps `from nvml_stub import …` working in both modes.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
