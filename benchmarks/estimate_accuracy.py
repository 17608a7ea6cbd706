"""How close gpuwise's estimates are to public measurements, next to the naive rule of thumb.

Reads tests/estimate/validation.toml (each row cites its source), estimates every row, and prints per row
the measured value, gpuwise's estimate, the naive rule's estimate ("6·N·D at 40% MFU, 16 bytes per
parameter") and their ratios; then the median absolute relative error and the share within 2× for both,
over all rows, over the rows held out from calibration, and over the calibration rows; then the same for
held-out set 2 (rows marked `set = "holdout-2"`, collected after the constants were set and never used to
set one: the honest measure of how the estimator generalises) and for both tables combined.

    .venv/bin/python benchmarks/estimate_accuracy.py
"""

from __future__ import annotations

import statistics
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "tests" / "estimate" / "validation.toml"
GIB = 1024**3


@dataclass(frozen=True)
class RowResult:
    id: str
    metric: str
    measured: float
    gpuwise: float
    naive: float
    calibration: bool
    groups: tuple[str, ...] = ()
    set: str = "main"  # "holdout-2": collected after the constants were fixed, never used to set one

    @property
    def error(self) -> float:
        return abs(self.gpuwise - self.measured) / self.measured

    @property
    def naive_error(self) -> float:
        return abs(self.naive - self.measured) / self.measured


def _naive(row: dict[str, Any], workload: Any, gpu: Any) -> float:
    """6·N·D at 40% of the BF16 (else FP16) dense peak; 16 bytes per parameter; 2·N per output token."""
    peak = (gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16") or 0.0) * 1e12
    n = workload.model.n_params
    metric = row["metric"]
    if metric == "memory_gib":
        return 16 * n / GIB
    if metric == "mfu":
        return 0.40
    if metric == "tokens_per_s_per_gpu":
        return 0.40 * peak / (6 * n)
    if metric == "samples_per_s_per_gpu":  # the rule read literally: 6·N (training) or 2·N FLOPs per sample
        return 0.40 * peak / ((2 if workload.train is None else 6) * n)
    if metric == "output_tokens_per_s":
        return 0.40 * peak * row["count"] / (2 * n)
    t = workload.train
    tokens = t.tokens * t.epochs if t.tokens is not None else t.samples * t.epochs * (t.seq_len or 1)
    gpu_hours = 6 * n * tokens / (0.40 * peak) / 3600
    if metric == "time_to_train_min":
        return gpu_hours / row["count"] * 60
    return gpu_hours


def _gpuwise(row: dict[str, Any], est: Any) -> float:
    metric = row["metric"]
    if metric == "gpu_hours":
        return float(est.gpu_hours)
    if metric == "hours":
        return float(est.hours)
    if metric == "time_to_train_min":
        return float(est.hours) * 60
    if metric in ("tokens_per_s_per_gpu", "samples_per_s_per_gpu"):
        return float(est.throughput_per_gpu)
    if metric == "mfu":
        return float(est.mfu)
    if metric == "memory_gib":
        return float(est.memory.total - est.memory.overhead) / GIB
    if metric == "output_tokens_per_s":
        return float(est.throughput_total)
    raise ValueError(f"unknown metric {metric!r}")


def _groups(row: dict[str, Any], workload: Any) -> tuple[str, ...]:
    """The job families the issue asks about, besides the metric: MLPerf, LoRA, FP8 and CNN rows."""
    groups = []
    if row["metric"] == "time_to_train_min":
        groups.append("MLPerf time-to-train")
    t = workload.train
    if t is not None and t.method in ("lora", "qlora"):
        groups.append("LoRA/QLoRA")
    precision = t.precision if t is not None else workload.inference.weights_precision
    if precision == "fp8":
        groups.append("FP8")
    if workload.model.kind == "cnn":
        groups.append("CNN")
    return tuple(groups)


def load_rows(path: Path = TABLE) -> list[dict[str, Any]]:
    return list(tomllib.loads(path.read_text(encoding="utf-8"))["row"])


def evaluate(rows: list[dict[str, Any]] | None = None) -> list[RowResult]:
    from gpuwise.catalog.specs import resolve_gpu
    from gpuwise.estimate import estimate
    from gpuwise.workload import parse_workload

    out = []
    for row in rows if rows is not None else load_rows():
        workload = parse_workload(dict(row["workload"]), f"validation row {row['id']}")
        gpu = resolve_gpu(row["gpu"])
        est = estimate(workload, gpu, int(row["count"]), row.get("nodes"))
        out.append(
            RowResult(
                id=row["id"],
                metric=row["metric"],
                measured=float(row["measured"]),
                gpuwise=_gpuwise(row, est),
                naive=_naive(row, workload, gpu),
                calibration=bool(row.get("calibration", False)),
                groups=_groups(row, workload),
                set=str(row.get("set", "main")),
            )
        )
    return out


def summary(results: list[RowResult]) -> dict[str, float]:
    def stats(rs: list[RowResult], naive: bool) -> tuple[float, float]:
        if not rs:
            return float("nan"), float("nan")
        errs = [r.naive_error if naive else r.error for r in rs]
        ratios = [(r.naive if naive else r.gpuwise) / r.measured for r in rs]
        within = sum(1 for q in ratios if 0.5 <= q <= 2.0) / len(rs)
        return statistics.median(errs), within

    main = [r for r in results if r.set == "main"]
    held = [r for r in main if not r.calibration]
    cal = [r for r in main if r.calibration]
    holdout_2 = [r for r in results if r.set == "holdout-2"]
    out: dict[str, float] = {}
    groups = (
        ("all", main),
        ("held_out", held),
        ("calibration", cal),
        ("holdout_2", holdout_2),
        ("combined", results),
    )
    for label, rs in groups:
        out[f"{label}_median"], out[f"{label}_within_2x"] = stats(rs, naive=False)
        out[f"naive_{label}_median"], out[f"naive_{label}_within_2x"] = stats(rs, naive=True)
    return out


def main() -> int:
    results = evaluate()
    print(
        f"{'row':44} {'metric':22} {'measured':>12} {'gpuwise':>12} {'ratio':>6} {'naive':>12} {'ratio':>6}"
    )
    for r in results:
        mark = "*" if r.calibration else ("²" if r.set == "holdout-2" else " ")
        ours = f"{r.gpuwise:12.4g} {r.gpuwise / r.measured:6.2f}"
        naive = f"{r.naive:12.4g} {r.naive / r.measured:6.2f}"
        print(f"{r.id + mark:44} {r.metric:22} {r.measured:12.4g} {ours} {naive}")
    s = summary(results)
    print("\n(* = row used to calibrate a constant; ² = held-out set 2)")
    counts = {
        "all": sum(1 for r in results if r.set == "main"),
        "held_out": sum(1 for r in results if r.set == "main" and not r.calibration),
        "calibration": sum(1 for r in results if r.calibration),
        "holdout_2": sum(1 for r in results if r.set == "holdout-2"),
        "combined": len(results),
    }
    print(
        "(all/held_out/calibration: the main table; holdout_2: rows collected after the constants were set "
        "and never used to set one; combined: both)"
    )
    for label, n in counts.items():
        med, w2 = s[label + "_median"], s[label + "_within_2x"]
        nmed, nw2 = s["naive_" + label + "_median"], s["naive_" + label + "_within_2x"]
        ours = f"gpuwise median error {med:.1%}, within 2× {w2:.0%}"
        naive = f"naive median error {nmed:.1%}, within 2× {nw2:.0%}"
        print(f"{label:12} n={n:2}  {ours}   |   {naive}")
    print("\nby metric (median error, gpuwise vs naive; held-out rows only in brackets):")
    for metric in sorted({r.metric for r in results}):
        _print_group(metric, [r for r in results if r.metric == metric])
    print("\nby job family:")
    for group in ("MLPerf time-to-train", "LoRA/QLoRA", "FP8", "CNN"):
        _print_group(group, [r for r in results if group in r.groups])
    return 0


def _print_group(label: str, rs: list[RowResult]) -> None:
    if not rs:
        return
    ours = statistics.median(r.error for r in rs)
    naive = statistics.median(r.naive_error for r in rs)
    within = sum(1 for r in rs if 0.5 <= r.gpuwise / r.measured <= 2) / len(rs)
    held = [r.error for r in rs if not r.calibration]
    held_text = f"[{statistics.median(held):6.1%}]" if held else "[   n/a]"
    print(
        f"  {label:22} n={len(rs):2}  gpuwise {ours:6.1%} {held_text}  within 2x {within:4.0%}"
        f"   naive {naive:8.1%}"
    )


if __name__ == "__main__":
    sys.exit(main())
