"""Grid re-fit of one training-stack family on the FIT rows of tests/estimate/user_reports.toml.

For every (efficiency, per-layer seconds, per-step seconds) on the grid, every stack of the family
(stacks.STACK_FAMILY) gets those values and the family's fit rows with a time or throughput metric are
estimated again; the score is the mean |ln(true/estimated time)|, each term capped at ln 4 so that one
contradicting source cannot pull the fit. Held-out rows are never read (estimate_accuracy.held_out), so the
held-out figures stay a test of the result. Prints the best points and the current constants' score.

    .venv/bin/python benchmarks/stack_grid.py hf [--eff 0.6,0.8,1.0] [--layer-ms 0,5,10] [--step-s 0.05]
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import estimate_accuracy as ea

CAP = math.log(4)
DEFAULTS = {"--eff": "0.6,0.7,0.8,0.9,1.0,1.1,1.2", "--layer-ms": "0,2,4,6,8,10,12,16,24,32", "--step-s": ""}


def family_rows(family: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The family's fit rows whose metric is a time or a throughput (never a held-out row)."""
    from gpuwise.estimate.stacks import STACK_FAMILY

    def stack(r: dict[str, Any]) -> str:
        return str(r["workload"].get("train", {}).get("framework", r.get("stack", "")))

    return [
        r
        for r in rows
        if not ea.held_out(r)
        and r["metric"] in ea.TIME_METRICS + ea.RATE_METRICS
        and STACK_FAMILY.get(stack(r)) == family
    ]


def score(rows: list[dict[str, Any]]) -> tuple[float, float, float]:
    """(mean capped |ln residual|, median residual as a factor, share within 2×) as estimated now."""
    logs = [r.log_residual for r in ea.evaluate_table(rows, "user") if r.log_residual is not None]
    if not logs:
        return math.nan, math.nan, math.nan
    capped = statistics.mean(min(abs(x), CAP) for x in logs)
    within = sum(1 for x in logs if abs(x) <= math.log(2)) / len(logs)
    return capped, math.exp(statistics.median(logs)), within


def grid(family: str, effs: list[float], layers_s: list[float], steps_s: list[float | None]) -> None:
    from gpuwise.estimate import stacks as k

    rows = family_rows(family, ea.load_rows(ea.USER_TABLE))
    names = [n for n, f in k.STACK_FAMILY.items() if f == family]
    original = {n: k.STACKS[n] for n in names}
    current = score(rows)
    results = []
    try:
        for eff, layer_s, step_s in itertools.product(effs, layers_s, steps_s):
            for n in names:
                change: dict[str, float] = {"efficiency": eff, "layer_overhead_s": layer_s}
                if step_s is not None:
                    change["step_overhead_s"] = step_s
                k.STACKS[n] = dataclasses.replace(original[n], **change)  # type: ignore[arg-type]
            results.append((score(rows), eff, layer_s, step_s))
    finally:
        k.STACKS.update(original)
    print(f"{family}: {len(rows)} fit rows with a time or throughput metric")
    for (obj, med, within), eff, layer_s, step_s in sorted(results)[:10]:
        step = "" if step_s is None else f", {step_s:g} s per step"
        print(
            f"  mean |ln residual| {obj:.3f}  efficiency {eff:.2f}, {layer_s * 1e3:g} ms per layer{step}"
            f"  (median true/est ×{med:.2f}, within 2× {within:.0%})"
        )
    print(f"  current constants: {current[0]:.3f} (median ×{current[1]:.2f}, within 2× {current[2]:.0%})")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("--"):
        print(__doc__)
        return 2
    opts = dict(DEFAULTS)
    for flag in DEFAULTS:
        if flag in argv:
            opts[flag] = argv[argv.index(flag) + 1]
    effs = [float(x) for x in opts["--eff"].split(",")]
    layers = [float(x) / 1e3 for x in opts["--layer-ms"].split(",")]
    steps: list[float | None] = (
        [float(x) for x in opts["--step-s"].split(",")] if opts["--step-s"] else [None]
    )
    grid(argv[0], effs, layers, steps)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
