"""How long `gpuwise plan` takes over the full bundled catalog, as a multiple of a bare Python start-up.

Runs both as subprocesses (so import time counts, as users feel it), several times each, and prints the
medians and their ratio. Target: the plan within 40× the start-up of `python -c pass`.

    .venv/bin/python benchmarks/plan_speed.py [--runs 7] [--workload FILE] [--check]

`--check` exits 1 when the ratio is over the target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_RATIO = 40.0
CANDIDATES = (
    REPO / "examples" / "llama3-8b-lora.toml",
    REPO / "tests" / "fixtures" / "plan" / "llama3-8b-lora.toml",
)


def _time(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):  # 1: nothing qualifies is still a full plan
            sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workload", type=Path, default=None)
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 when the ratio exceeds {TARGET_RATIO:g}×"
    )
    args = parser.parse_args()
    workload = args.workload or next((p for p in CANDIDATES if p.is_file()), None)
    if workload is None:
        sys.exit("no workload file found; pass --workload FILE")
    gpuwise = Path(sys.executable).with_name("gpuwise")
    plan_cmd = (
        [str(gpuwise), "plan", str(workload), "--json"]
        if gpuwise.exists()
        else [sys.executable, "-m", "gpuwise.cli.main", "plan", str(workload), "--json"]
    )
    with tempfile.TemporaryDirectory() as home:
        # an empty user data dir: the bundled catalog only, no user catalog merged in
        env = {**os.environ, "GPUWISE_DATA_DIR": home, "GPUWISE_CONFIG_DIR": home}
        _time(plan_cmd, env, 1)  # warm the OS file cache and .pyc files
        bare = _time([sys.executable, "-c", "pass"], env, args.runs)
        planned = _time(plan_cmd, env, args.runs)
        out = subprocess.run(plan_cmd, env=env, capture_output=True, text=True, check=False).stdout
    import json

    doc = json.loads(out)
    bare_s, plan_s = statistics.median(bare), statistics.median(planned)
    ratio = plan_s / bare_s
    print(f"workload: {workload.relative_to(REPO) if workload.is_relative_to(REPO) else workload}")
    print(
        f"configurations considered: {doc['considered']} ({doc.get('qualifying', '?')} qualify), "
        f"providers: {len(doc['catalog']['sources'])}"
    )
    print(f"python -c pass : {bare_s * 1000:8.1f} ms (median of {args.runs})")
    print(f"gpuwise plan   : {plan_s * 1000:8.1f} ms (median of {args.runs})")
    print(
        f"ratio          : {ratio:8.1f}×  (target ≤ {TARGET_RATIO:g}×: "
        + ("met)" if ratio <= TARGET_RATIO else "MISSED)")
    )
    return 1 if args.check and ratio > TARGET_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
