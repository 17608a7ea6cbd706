"""How fast the catalog answers "who sells H100s on Lambda?", against SkyPilot's `sky show-gpus`.

Measures, as medians over several runs:

1. gpuwise in a fresh Python process: import, load the whole bundled catalog (every provider, all
   normalisation) and query H100 offers on Lambda;
2. the same as a user types it: `gpuwise catalog offers --gpu H100 --provider lambda`;
3. SkyPilot: `sky show-gpus H100 --infra lambda`, reading the same bundled lambda.csv, placed where
   SkyPilot reads its catalog (`~/.sky/catalogs/<schema version>/lambda/vms.csv`, under a temporary HOME
   so no network is needed and the user's ~/.sky is untouched). SkyPilot answers through a local API
   server, which the first (untimed) run starts and the script stops at the end.

and prints the ratio gpuwise / SkyPilot. Target: at most 0.25.

    .venv/bin/python benchmarks/catalog_speed.py [--runs 5] [--sky-venv DIR] [--check]

SkyPilot lives in its own virtualenv (default /tmp/gpuwise-bench-sky, or $GPUWISE_BENCH_SKY_VENV); the
script creates it with `pip install skypilot` when it is missing. `--check` exits 1 when over target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_RATIO = 0.25
BUNDLED_LAMBDA = REPO / "src" / "gpuwise" / "catalog" / "data" / "offers" / "lambda.csv"
IN_PROCESS = """
import time
t0 = time.perf_counter()
from pathlib import Path
from gpuwise.catalog.offers import load_catalog
from gpuwise.catalog.query import query_offers
catalog = load_catalog(Path({empty!r}))
found = query_offers(catalog, gpu="H100", provider="lambda")
t1 = time.perf_counter()
assert found, "no H100 offers on lambda"
print(t1 - t0, len(catalog.offers), len(found))
"""


def _run(cmd: list[str], env: dict[str, str], timeout_s: float = 300) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed, done.stdout


def _ensure_sky(venv: Path) -> Path:
    sky = venv / "bin" / "sky"
    if sky.exists():
        return sky
    print(f"Installing SkyPilot into {venv} (once; about a minute) …", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "skypilot"], check=True, timeout=900)
    return sky


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--sky-venv",
        type=Path,
        default=Path(os.environ.get("GPUWISE_BENCH_SKY_VENV", "/tmp/gpuwise-bench-sky")),
    )
    parser.add_argument("--check", action="store_true", help=f"exit 1 when the ratio exceeds {TARGET_RATIO}")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gpuwise-bench-") as tmp:
        empty = Path(tmp) / "gpuwise-data"  # no user catalog: the bundled files only
        env = {**os.environ, "GPUWISE_DATA_DIR": str(empty), "GPUWISE_CONFIG_DIR": str(empty)}

        in_process = []
        for _ in range(args.runs):
            _, out = _run([sys.executable, "-c", IN_PROCESS.format(empty=str(empty))], env)
            seconds, total, found = out.split()
            in_process.append(float(seconds))
        gpuwise_bin = Path(sys.executable).with_name("gpuwise")
        cli = [str(gpuwise_bin)] if gpuwise_bin.exists() else [sys.executable, "-m", "gpuwise.cli.main"]
        cli += ["catalog", "offers", "--gpu", "H100", "--provider", "lambda"]
        cli_times = [_run(cli, env)[0] for _ in range(args.runs)]

        sky = _ensure_sky(args.sky_venv)
        sky_python = sky.with_name("python")
        _, version = _run(
            [
                str(sky_python),
                "-c",
                "from sky.skylet import constants; print(constants.CATALOG_SCHEMA_VERSION)",
            ],
            dict(os.environ),
        )
        version = version.strip()
        home = Path(tmp) / "home"
        catalog_path = home / ".sky" / "catalogs" / version / "lambda" / "vms.csv"
        catalog_path.parent.mkdir(parents=True)
        shutil.copyfile(BUNDLED_LAMBDA, catalog_path)  # fresh mtime: SkyPilot sees no need to download
        sky_env = {**os.environ, "HOME": str(home), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"}
        sky_cmd = [str(sky), "show-gpus", "H100", "--infra", "lambda"]
        try:
            warm, out = _run(sky_cmd, sky_env)  # starts SkyPilot's local API server; not timed
            if "gpu_1x_h100" not in out:
                sys.exit(f"SkyPilot did not list the Lambda H100 offers:\n{out[-2000:]}")
            sky_times = [_run(sky_cmd, sky_env)[0] for _ in range(args.runs)]
        finally:
            subprocess.run(
                [str(sky), "api", "stop"], env=sky_env, capture_output=True, timeout=120, check=False
            )

    ip, cl, sk = (statistics.median(t) for t in (in_process, cli_times, sky_times))
    print(f"catalog: {total} offers from every bundled provider; {found} H100 offers on lambda")
    print(
        f"gpuwise load + query, fresh process (in-process timer): {ip * 1000:7.1f} ms (median of {args.runs})"
    )
    print(
        f"gpuwise catalog offers --gpu H100 --provider lambda:     {cl * 1000:7.1f} ms (wall, incl. start-up)"
    )
    print(f"sky show-gpus H100 --infra lambda (SkyPilot {version}, API server warm): {sk * 1000:7.1f} ms")
    print(f"  (SkyPilot's first call, which starts its API server: {warm:.1f} s, not counted)")
    ratio = cl / sk
    print(
        f"ratio gpuwise CLI / SkyPilot: {ratio:.3f} (target ≤ {TARGET_RATIO}); "
        f"in-process / SkyPilot: {ip / sk:.3f}"
    )
    return 1 if args.check and ratio > TARGET_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
