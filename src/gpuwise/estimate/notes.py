"""The assumptions an estimate collects while it runs, in order, each once.

Pure: every step of the estimator adds the lines that explain it; `const` records a constant's
`describe()` and returns its value, so reading a figure and citing it are one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwise.estimate.constants import Constant


@dataclass
class Notes:
    """Assumptions collected while estimating, in order, without duplicates."""

    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)

    def const(self, c: Constant) -> float:
        self.add(c.describe())
        return c.value
