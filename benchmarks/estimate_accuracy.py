"""How close gpuwise's estimates are to public measurements, next to the naive rule of thumb.

Reads tests/estimate/validation.toml (each row cites its source), estimates every row, and prints per row
the measured value, gpuwise's estimate, the naive rule's estimate ("6·N·D at 40% MFU, 16 bytes per
parameter") and their ratios; then the median absolute relative error and the share within 2× for both,
over all rows, over the rows held out from calibration, and over the calibration rows; then the same for
held-out set 2 (rows marked `set = "holdout-2"`, collected after the constants were set and never used to
set one: the honest measure of how the estimator generalises) and for both tables combined. The
validation table describes mature stacks: its training rows are estimated with `framework = "tuned"` unless
they name a stack.

Then the user-reported table, tests/estimate/user_reports.toml (public threads, READMEs and posts; each row
cited): per stack and for its fit and held-out parts, the median error, the share within 1.5× and 2×, the
fit-verdict hit rate and how often the measured value falls inside the estimate's [low, high] range. A row
is held out when int(sha256(id), 16) % 5 < 2 (about 40 %), unless it says `set = "fit"` or `set = "holdout"`;
constants are fitted on the other rows only. `--fit` also prints, from the fit rows only, what each stack's
efficiency and range would be fitted to. `--fit-only` prints the fit rows and that report and nothing else, so
that whoever re-fits a constant never sees a held-out residual (benchmarks/stack_grid.py searches a stack
family's efficiency and per-layer time on the same rows).

    .venv/bin/python benchmarks/estimate_accuracy.py [--user-reports PATH] [--fit | --fit-only]
"""

from __future__ import annotations

import hashlib
import math
import statistics
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "tests" / "estimate" / "validation.toml"
USER_TABLE = REPO / "tests" / "estimate" / "user_reports.toml"
GIB = 1024**3
TIME_METRICS = ("hours", "gpu_hours", "time_to_train_min", "s_per_step")
RATE_METRICS = ("tokens_per_s_per_gpu", "samples_per_s_per_gpu", "output_tokens_per_s", "mfu")


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
    if metric == "s_per_step":
        return float(est.details.get("s_per_step", math.nan))
    if metric == "fits":
        return 1.0 if est.fits else 0.0
    raise ValueError(f"unknown metric {metric!r}")


def _memory(row: dict[str, Any], est: Any) -> float:
    """Peak memory as the row's source measured it: allocated, reserved or what nvidia-smi shows."""
    m = est.memory
    kind = row.get("memory_kind", "allocated")
    context = 0.0
    if kind == "nvidia-smi":
        return float(m.total) / GIB
    # overhead = CUDA context (+ NCCL buffers) + fragmentation; reserved = allocated + fragmentation.
    from gpuwise.estimate import memory_constants as k

    context = k.CUDA_CONTEXT_GIB.value * GIB + (k.NCCL_BUFFERS_GIB.value * GIB if est.count > 1 else 0.0)
    allocated = m.total - m.overhead
    if kind == "reserved":
        return float(m.total - context) / GIB
    return float(allocated) / GIB


def _range(row: dict[str, Any], est: Any) -> tuple[float, float] | None:
    """The estimate's [low, high] for the row's metric, or None where it has no range (memory, fits)."""
    metric = row["metric"]
    if not (math.isfinite(est.hours_low) and math.isfinite(est.hours_high) and est.hours > 0):
        return None
    lo, hi = est.hours_low / est.hours, est.hours_high / est.hours
    value = _gpuwise(row, est)
    if metric in TIME_METRICS:
        return value * lo, value * hi
    if metric in RATE_METRICS:
        return value / hi, value / lo
    return None


def held_out(row: dict[str, Any]) -> bool:
    """The deterministic split nobody chooses: sha256 of the id, unless the row names its set."""
    explicit = row.get("set")
    if explicit == "fit":
        return False
    if explicit == "holdout":
        return True
    return int(hashlib.sha256(str(row["id"]).encode()).hexdigest(), 16) % 5 < 2


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


def _tuned(workload: dict[str, Any]) -> dict[str, Any]:
    """The validation table measures mature stacks: its training rows default to framework = "tuned"."""
    train = workload.get("train")
    if isinstance(train, dict) and "framework" not in train:
        return {**workload, "train": {**train, "framework": "tuned"}}
    return workload


def evaluate(rows: list[dict[str, Any]] | None = None) -> list[RowResult]:
    from gpuwise.catalog.specs import resolve_gpu
    from gpuwise.estimate import estimate
    from gpuwise.workload import parse_workload

    out = []
    for row in rows if rows is not None else load_rows():
        workload = parse_workload(_tuned(dict(row["workload"])), f"validation row {row['id']}")
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


# ------------------------------------------------------------------------------------------------------------
# Both tables, per stack, fit and held-out parts
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserResult:
    id: str
    table: str  # "validation" | "user"
    stack: str
    metric: str
    measured: float
    gpuwise: float
    held_out: bool
    low: float | None = None
    high: float | None = None
    verdict: str = ""

    @property
    def is_fit_row(self) -> bool:
        return self.metric == "fits"

    @property
    def ratio(self) -> float:
        return self.gpuwise / self.measured

    @property
    def error(self) -> float:
        return abs(self.gpuwise - self.measured) / self.measured

    @property
    def inside(self) -> bool | None:
        if self.low is None or self.high is None:
            return None
        return self.low <= self.measured <= self.high

    @property
    def log_residual(self) -> float | None:
        """ln(true time / estimated time): positive when the job ran slower than estimated."""
        if self.metric in TIME_METRICS:
            return math.log(self.measured / self.gpuwise)
        if self.metric in RATE_METRICS:
            return math.log(self.gpuwise / self.measured)
        return None


def evaluate_table(rows: list[dict[str, Any]], table: str) -> list[UserResult]:
    from gpuwise.catalog.specs import resolve_gpu
    from gpuwise.estimate import estimate
    from gpuwise.workload import parse_workload
    from gpuwise.workload.spec import default_framework

    out = []
    for row in rows:
        data = dict(row["workload"])
        if table == "validation":
            data = _tuned(data)
        elif "stack" in row and isinstance(data.get("train"), dict) and "framework" not in data["train"]:
            data = {**data, "train": {**data["train"], "framework": row["stack"]}}
        workload = parse_workload(data, f"{table} row {row['id']}")
        gpu = resolve_gpu(row["gpu"])
        est = estimate(
            workload, gpu, int(row["count"]), row.get("nodes"), network_gbps=row.get("network_gbps")
        )
        metric = row["metric"]
        if workload.train is not None:
            stack = default_framework(workload.task, workload.train, workload.model.kind)
        else:
            stack = "inference"
        if metric == "fits":
            measured = 1.0 if row["measured"] else 0.0
            value = 1.0 if est.fits else 0.0
        elif metric == "memory_gib":
            measured, value = float(row["measured"]), _memory(row, est)
        else:
            measured, value = float(row["measured"]), _gpuwise(row, est)
        rng = _range(row, est) if metric not in ("fits", "memory_gib") else None
        out.append(
            UserResult(
                id=row["id"],
                table=table,
                stack=stack,
                metric=metric,
                measured=measured,
                gpuwise=value,
                held_out=held_out(row) if table == "user" else bool(not row.get("calibration")),
                low=rng[0] if rng else None,
                high=rng[1] if rng else None,
                verdict=est.fit_verdict,
            )
        )
    return out


def stats(rs: list[UserResult]) -> dict[str, float]:
    """Median error, within 1.5× and 2×, fit-verdict hit rate and range coverage (nan where no rows)."""
    nums = [r for r in rs if not r.is_fit_row and math.isfinite(r.gpuwise) and r.gpuwise > 0]
    fits = [r for r in rs if r.is_fit_row]
    ranged = [r for r in rs if r.inside is not None]
    nan = float("nan")
    return {
        "n": float(len(rs)),
        "n_numeric": float(len(nums)),
        "median": statistics.median(r.error for r in nums) if nums else nan,
        "within_1_5x": sum(1 for r in nums if 1 / 1.5 <= r.ratio <= 1.5) / len(nums) if nums else nan,
        "within_2x": sum(1 for r in nums if 0.5 <= r.ratio <= 2) / len(nums) if nums else nan,
        "n_fit_verdicts": float(len(fits)),
        "fit_hit_rate": sum(1 for r in fits if r.gpuwise == r.measured) / len(fits) if fits else nan,
        "n_ranged": float(len(ranged)),
        "coverage": sum(1 for r in ranged if r.inside) / len(ranged) if ranged else nan,
        "unestimated": float(
            sum(1 for r in rs if not r.is_fit_row and not (math.isfinite(r.gpuwise) and r.gpuwise > 0))
        ),
    }


def load_user_rows(path: Path = USER_TABLE) -> list[dict[str, Any]] | None:
    if not path.exists():
        return None
    return load_rows(path)


def _fmt(label: str, st: dict[str, float]) -> str:
    def pct(x: float) -> str:
        return "  n/a" if math.isnan(x) else f"{x:5.0%}"

    med = "   n/a" if math.isnan(st["median"]) else f"{st['median']:6.1%}"
    return (
        f"  {label:26} n={int(st['n']):3}  median {med}  ≤1.5× {pct(st['within_1_5x'])}  "
        f"≤2× {pct(st['within_2x'])}  fit verdicts {pct(st['fit_hit_rate'])} of {int(st['n_fit_verdicts'])}"
        f"  in [low, high] {pct(st['coverage'])} of {int(st['n_ranged'])}"
    )


def print_tables(user_path: Path = USER_TABLE) -> dict[str, dict[str, float]]:
    """Per table, per part and per stack; returns the headline figures by label."""
    tables = [("validation", evaluate_table(load_rows(), "validation"))]
    user_rows = load_user_rows(user_path)
    if user_rows is None:
        print(f"\n(no user-reported table at {user_path}: skipped)")
    else:
        tables.append(("user", evaluate_table(user_rows, "user")))
    out: dict[str, dict[str, float]] = {}
    for name, results in tables:
        if name == "user":
            print(
                f"\n{'user row':46} {'stack':15} {'metric':14} {'measured':>10} {'gpuwise':>10} "
                f"{'ratio':>6}  range"
            )
            for r in results:
                mark = "ʰ" if r.held_out else " "
                rng = (
                    f"[{r.low:.4g}, {r.high:.4g}]" if r.low is not None and r.high is not None else r.verdict
                )
                print(
                    f"{r.id + mark:46} {r.stack:15} {r.metric:14} {r.measured:10.4g} {r.gpuwise:10.4g} "
                    f"{r.ratio if r.measured else math.nan:6.2f}  {rng}"
                )
            print("(ʰ = held out)")
        print(
            f"\n{name} table ("
            + ("held out = not used to fit a constant" if name == "validation" else "held out by sha256(id)")
            + "):"
        )
        for part, rs in (
            ("all", results),
            ("fit", [r for r in results if not r.held_out]),
            ("held-out", [r for r in results if r.held_out]),
        ):
            st = stats(rs)
            out[f"{name}/{part}"] = st
            print(_fmt(part, st))
        for stack in sorted({r.stack for r in results}):
            for part, rs in (
                ("fit", [r for r in results if r.stack == stack and not r.held_out]),
                ("held-out", [r for r in results if r.stack == stack and r.held_out]),
            ):
                if rs:
                    st = stats(rs)
                    out[f"{name}/{stack}/{part}"] = st
                    print(_fmt(f"{stack} ({part})", st))
    return out


def fit_ranges(results: list[UserResult]) -> dict[str, tuple[float, float, int]]:
    """(P5, P95, n) of true/estimated time per stack with enough fit rows, and "pooled" over every user
    stack: what HOURS_RANGE and HOURS_RANGE_POOLED in stacks.py are set from. Fit rows only."""
    from gpuwise.estimate import stacks as k

    fit = [r for r in results if not r.held_out and r.log_residual is not None]
    out: dict[str, tuple[float, float, int]] = {}

    def spread(logs: list[float]) -> tuple[float, float, int]:
        q = statistics.quantiles(sorted(logs), n=20, method="inclusive")
        return math.exp(q[0]), math.exp(q[-1]), len(logs)

    for stack in sorted({r.stack for r in fit}):
        logs = [r.log_residual for r in fit if r.stack == stack and r.log_residual is not None]
        if len(logs) >= k.RANGE_MIN_ROWS:
            out[stack] = spread(logs)
    pooled = [r.log_residual for r in fit if k.STACK_FAMILY.get(r.stack) and r.log_residual is not None]
    if len(pooled) >= 2:
        out["pooled"] = spread(pooled)
    return out


def fit_report(user_path: Path = USER_TABLE) -> None:
    """What the fit rows (never the held-out ones) say each stack's efficiency and range should be."""
    rows = load_user_rows(user_path)
    if rows is None:
        print("no user table")
        return
    results = [r for r in evaluate_table(rows, "user") if not r.held_out]
    from gpuwise.estimate import stacks as k

    print("\nfit rows only: ln(true/estimated time) by stack family")
    for family in sorted(set(k.STACK_FAMILY.values())):
        res = [r for r in results if k.STACK_FAMILY.get(r.stack) == family and r.log_residual is not None]
        logs = sorted(r.log_residual for r in res if r.log_residual is not None)
        if not logs:
            continue
        med = statistics.median(logs)
        print(
            f"  {family:10} n={len(logs):2}  median residual ×{math.exp(med):.2f} "
            f"(efficiency × {math.exp(-med):.2f})  rows: {', '.join(r.id for r in res)}"
        )
    for stack, (low, high, n) in fit_ranges(results).items():
        label = "pooled range" if stack == "pooled" else f"range {stack}"
        print(f"  {label}: P5 ×{low:.2f}  P95 ×{high:.2f} (n={n})")
    # The mature stacks' range comes from the validation table's main set (holdout-2 stays unseen).
    main_rows = [r for r in load_rows() if r.get("set", "main") == "main"]
    for stack in ("tuned", "inference"):
        logs = sorted(
            r.log_residual
            for r in evaluate_table(main_rows, "validation")
            if r.stack == stack and r.log_residual is not None
        )
        if len(logs) >= k.RANGE_MIN_ROWS:
            q = statistics.quantiles(logs, n=20, method="inclusive")
            print(
                f"  range {stack} (validation): P5 ×{math.exp(q[0]):.2f}  "
                f"P95 ×{math.exp(q[-1]):.2f} (n={len(logs)})"
            )


def print_fit_rows(user_path: Path = USER_TABLE) -> None:
    """The fit rows of the user table, one per line, and their figures: never a held-out row."""
    rows = load_user_rows(user_path)
    if rows is None:
        print(f"no user-reported table at {user_path}")
        return
    results = evaluate_table([r for r in rows if not held_out(r)], "user")
    print(f"{'fit row':58} {'stack':15} {'metric':20} {'measured':>10} {'gpuwise':>10}  true/est")
    for r in results:
        lr = r.log_residual
        tail = f"×{math.exp(lr):.2f}" if lr is not None else (r.verdict if r.is_fit_row else f"{r.ratio:.2f}")
        print(f"{r.id:58} {r.stack:15} {r.metric:20} {r.measured:10.4g} {r.gpuwise:10.4g}  {tail}")
    print(_fmt("fit rows", stats(results)))


def cli(argv: list[str]) -> int:
    user = USER_TABLE
    if "--user-reports" in argv:
        user = Path(argv[argv.index("--user-reports") + 1])
    if "--fit-only" in argv:
        print_fit_rows(user)
        fit_report(user)
        return 0
    code = main()
    print_tables(user)
    if "--fit" in argv:
        fit_report(user)
    return code


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
