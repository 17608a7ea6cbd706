"""Checkpoint sync throughput, and the wall-clock cost `gpuwise run` adds to a job.

1. Throughput: a checkpoint of --gib GiB, written as --files shards of random bytes, is uploaded to a local
   S3-compatible endpoint (moto's server on 127.0.0.1) twice: by gpuwise (`CheckpointStore.upload`, which
   uploads files in parallel, sends each large file in 64 MiB parts several at a time, checks every file's
   ETag and then writes the manifest), and by plain boto3, one file after another, single-threaded
   (`upload_file` with `use_threads=False`). It prints both rates in MiB/s and their ratio (target ≥ 1.0).
   moto keeps the objects in memory, so this needs about twice --gib of free RAM.
2. Overhead: a CPU-bound job that times its own work runs directly and then under
   `gpuwise run --preemption off --no-ledger` with its checkpoint folder watched. It prints the slowdown of
   the job's own timing (target < 1 %) and, separately, the fixed start-up and exit time gpuwise adds.

    .venv/bin/python benchmarks/checkpoint_sync.py [--gib 2] [--files 4] [--job-s 20] [--repeats 3]

Exits 1 when a target is missed. Needs the dev extra (moto, boto3, s3fs).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNK = 64 * 1024 * 1024

JOB = r"""
import sys, time
target = float(sys.argv[1])
t0 = time.perf_counter()
x = 0
n = 0
while time.perf_counter() - t0 < target:
    for i in range(200_000):
        x += i * i
    n += 1
t = time.perf_counter() - t0
print(f"WORK {n / t:.6f}")
"""


def write_checkpoint(folder: Path, gib: float, files: int) -> int:
    folder.mkdir(parents=True)
    each = int(gib * 1024**3 / files)
    for i in range(files):
        with (folder / f"model-{i:05d}.bin").open("wb") as fh:
            left = each
            while left > 0:
                n = min(CHUNK, left)
                fh.write(os.urandom(n))
                left -= n
    (folder / "COMPLETE").write_text("")
    return each * files


def throughput(gib: float, files: int) -> tuple[float, float]:
    import boto3
    from boto3.s3.transfer import TransferConfig
    from moto.server import ThreadedMotoServer

    from gpuwise.run.store import CheckpointStore, scan_local

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    client = boto3.client("s3", endpoint_url=endpoint)
    client.create_bucket(Bucket="bench")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = Path(tmp, "step-1")
            total = write_checkpoint(ckpt, gib, files)
            mib = total / 1024**2
            print(f"checkpoint: {files} files, {mib:,.0f} MiB")

            single = TransferConfig(use_threads=False, multipart_chunksize=CHUNK, multipart_threshold=CHUNK)
            t0 = time.perf_counter()
            for f in sorted(ckpt.iterdir()):
                client.upload_file(str(f), "bench", f"boto3/{f.name}", Config=single)
            boto3_s = time.perf_counter() - t0
            client_objects = client.list_objects_v2(Bucket="bench", Prefix="boto3/")["Contents"]
            for o in client_objects:  # free moto's memory before the second upload
                client.delete_object(Bucket="bench", Key=o["Key"])

            store = CheckpointStore("s3://bench/gpuwise")
            (local,) = scan_local(Path(tmp))
            t0 = time.perf_counter()
            store.upload(local, "bench-run")
            gpuwise_s = time.perf_counter() - t0
    finally:
        server.stop()
    return mib / boto3_s, mib / gpuwise_s


def overhead(job_s: float, repeats: int) -> tuple[float, float]:
    """(slowdown of the job's own work rate in %, fixed seconds added) — best of `repeats` each."""

    def once(argv: list[str]) -> tuple[float, float]:
        t0 = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        wall = time.perf_counter() - t0
        rate = float(next(line for line in out.splitlines() if line.startswith("WORK")).split()[1])
        return rate, wall

    job = [sys.executable, "-c", JOB, str(job_s)]
    with tempfile.TemporaryDirectory() as tmp:
        env_ckpt = str(Path(tmp, "ckpt"))
        wrapped = [
            sys.executable, "-m", "gpuwise", "run", "--preemption", "off", "--no-ledger",
            "--checkpoint-dir", env_ckpt, "--", *job,
        ]  # fmt: skip
        direct_runs = []
        run_runs = []
        for _ in range(repeats):  # interleaved, so a change in machine load hits both
            direct_runs.append(once(job))
            run_runs.append(once(wrapped))
    best_direct = max(r for r, _ in direct_runs)
    best_run = max(r for r, _ in run_runs)
    slowdown_pct = 100 * (best_direct / best_run - 1)
    fixed_s = min(w for _, w in run_runs) - min(w for _, w in direct_runs)
    return slowdown_pct, fixed_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=2.0, help="checkpoint size in GiB (default 2)")
    ap.add_argument("--files", type=int, default=4, help="number of shard files (default 4)")
    ap.add_argument("--job-s", type=float, default=20.0, help="length of the overhead job in seconds")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args()
    ok = True
    if not args.skip_throughput:
        boto3_rate, gpuwise_rate = throughput(args.gib, args.files)
        ratio = gpuwise_rate / boto3_rate
        print(f"upload: boto3 single-stream {boto3_rate:,.1f} MiB/s, gpuwise {gpuwise_rate:,.1f} MiB/s "
              f"(verified, with manifest): ratio {ratio:.2f} (target >= 1.0)")  # fmt: skip
        ok &= ratio >= 1.0
    slowdown, fixed = overhead(args.job_s, args.repeats)
    print(f"run overhead: job's own work rate {slowdown:+.2f} % under gpuwise run (target < 1 %); "
          f"start-up and exit add {fixed:.2f} s once")  # fmt: skip
    ok &= slowdown < 1.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
