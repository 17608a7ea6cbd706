"""Checkpoint sync throughput, and the wall-clock cost `gpuwise run` adds to a job.

1. Throughput: a checkpoint of --gib GiB, written as --files shards of random bytes, is uploaded to a local
   S3-compatible endpoint (moto's server on 127.0.0.1, in a process of its own, as a real endpoint never
   shares the client's interpreter and its lock) by gpuwise (`CheckpointStore.upload`: files in parallel,
   large ones in 64 MiB parts a few at a time, each part read once and hashed where it is sent from, every
   file's ETag checked, then the manifest) and by plain boto3, one file after another, single-threaded
   (`upload_file` with `use_threads=False`). The two alternate, --repeats times each, each into a fresh
   bucket that is emptied afterwards, so machine load and the server's state hit both alike. It prints the
   median rates in MiB/s, their ratio (target >= 1.0), and the CPU seconds per GiB each side spent (client
   and server): on a busy machine the rates swing, the CPU seconds much less. moto joins a multipart
   upload's parts in memory: its server peaked at 7.2 GiB of RAM with --gib 2 (the benchmark itself at
   1.2 GiB), and it needs about --gib of free disk under $TMPDIR besides the checkpoint itself.
   What limits the ratio where cores are short (measured on a shared 2-core machine at load 7, CPU s per
   GiB): moto handles requests under one interpreter lock, 15-19 s per GiB whoever sends them, so parallel
   streams do not make it faster. boto3's client spends about 2.5 s per GiB (botocore's CRC32 and, over
   plain HTTP, the SHA-256 payload signature). gpuwise spends that plus its own SHA-256 (manifest) and MD5
   (ETag check), about 3 s per GiB more; before the single-read upload path, s3fs's `put_file` and a
   second read of every file cost 2-5 s per GiB on top. moto's server also spends more per GiB on
   gpuwise's requests than on boto3's (18 against 14.6 s at load 2-3; 22 against 18 at load 9). Not
   from the parts in flight: an adaptive limit tried on a branch (2 in flight rising to 8 while
   throughput grew) left the server's CPU per GiB unchanged at 18.0-18.1 and the ratio at 0.74 against
   0.76 for a fixed 8, so it was not kept; the cause (checksum headers, the verifying HEADs?) is not
   pinned down. Measured 2026-12-02: ratio 0.71 with --gib 1 at load 9 (client 7.3 + server 22.2 CPU
   s per GiB, boto3 2.8 + 18.0); 0.76 with --gib 1 at load 2-3 (44.9 against 59.5 MiB/s); 0.75 with
   the defaults at load 4-7 (22.0 against 29.4 MiB/s). With spare cores the client's work runs beside
   the server's; where none is spare the ratio falls short by about that work. On the same machine idle
   (load 0.3-0.5, later that day): ratio 1.05 with --gib 1 (62.4 against 59.2 MiB/s; client 6.2 + server
   18.0 CPU s per GiB, boto3 2.3 + 15.4) but 0.92 with the defaults (59.9 against 64.9 MiB/s; 5.7 + 18.9,
   boto3 2.4 + 14.0): the target holds only for the smaller checkpoint, and the server's extra ~4-5 s per
   GiB on gpuwise's requests is still the gap. Overhead there: 0.23 % CPU (target met); the wall-clock
   pairs spread -20 .. +42 % around a +2.1 % median at load 1.1, too wide to judge either way.
   That gap was pinned down the next day by uploading the same bytes several ways against the same server:
   raw botocore parts with bytes bodies cost moto 18-19 CPU s per GiB, the same parts with CRC32 named at
   CreateMultipartUpload 15.6-15.8, boto3's upload_file 15-16.5. Naming no algorithm leaves the endpoint to
   give the object a full-object CRC64NVME (S3's default since 2025), which moto computes over the joined
   parts; boto3 names CRC32, and now gpuwise does too. Measured 2026-12-02 after that change, defaults,
   load 1.5-2 (another engineer's tests running): ratio 1.19 (68.2 against 57.2 MiB/s; client 5.8 +
   server 17.1 CPU s per GiB, boto3 2.4 + 16.0); overhead 0.33 % CPU; wall-clock pairs median -8.2 %
   (the wrapped job faster: noise of that size either way). With --gib 1 at load 2 the same day: ratio
   1.14 (62.0 against 54.2 MiB/s; server 15.7 against 16.0 CPU s per GiB: no longer more for gpuwise).
2. Overhead: a CPU-bound job that reports its own work rate and CPU time runs directly and under
   `gpuwise run --preemption off --no-ledger` with its checkpoint folder watched, --pairs times each,
   alternating, plus an empty job both ways for the fixed cost. The target (< 1 %) is checked on the CPU
   gpuwise itself spends per second of the job (the process tree's CPU minus the job's own, minus the
   empty job's): the most it can slow the job where no core is spare, a figure machine load barely moves.
   The wall-clock slowdown of each pair is printed too, median, quartiles and range, since on a busy
   machine it swings by several per cent either way; it is judged too (median < 1 %) unless the 5-minute
   load average exceeds the CPU count, which is then said. The machine (CPUs, load average) is printed
   first and last.

    .venv/bin/python benchmarks/checkpoint_sync.py [--gib 2] [--files 4] [--repeats 3] [--job-s 10] \\
        [--pairs 8]

Exits 1 when a target is missed. Needs the dev extra (moto, boto3, s3fs).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median, quantiles

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
print(f"WORK {n / t:.6f} CPU {time.process_time():.6f}")
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


MOTO = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print("%s:%d" % server.get_host_and_port(), flush=True)
sys.stdin.read()  # until the benchmark closes our stdin
server.stop()
"""


def start_moto() -> tuple[subprocess.Popen[str], str]:
    """moto's S3 server in a child process on 127.0.0.1; (the process, its endpoint URL)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", MOTO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, "http://" + proc.stdout.readline().strip()


def cpu_s(server_pid: int) -> tuple[float, float]:
    """(this process's CPU seconds, the server's), user plus system."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    fields = Path(f"/proc/{server_pid}/stat").read_text().rsplit(")", 1)[1].split()
    server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (proc(5))
    return mine.ru_utime + mine.ru_stime, server


@dataclass
class Side:
    rates: list[float] = field(default_factory=list)
    client_cpu_s: list[float] = field(default_factory=list)
    server_cpu_s: list[float] = field(default_factory=list)


def throughput(gib: float, files: int, repeats: int) -> tuple[Side, Side]:
    """(boto3 single-stream, gpuwise): the rate in MiB/s and CPU seconds of each run."""
    import boto3
    from boto3.s3.transfer import TransferConfig

    from gpuwise.run.store import CheckpointStore, scan_local

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    server, endpoint = start_moto()
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    client = boto3.client("s3", endpoint_url=endpoint)
    single = TransferConfig(use_threads=False, multipart_chunksize=CHUNK, multipart_threshold=CHUNK)
    sides = {"boto3": Side(), "gpuwise": Side()}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = Path(tmp, "step-1")
            total = write_checkpoint(ckpt, gib, files)
            mib = total / 1024**2
            print(f"checkpoint: {files} files, {mib:,.0f} MiB; {repeats} runs each, alternating")
            (local,) = scan_local(Path(tmp))
            for i in range(repeats):
                for who in ("boto3", "gpuwise") if i % 2 == 0 else ("gpuwise", "boto3"):
                    bucket = f"bench-{i}-{who}"
                    client.create_bucket(Bucket=bucket)
                    c0, s0 = cpu_s(server.pid)
                    t0 = time.perf_counter()
                    if who == "boto3":
                        for f in sorted(ckpt.iterdir()):
                            client.upload_file(str(f), bucket, f"boto3/{f.name}", Config=single)
                    else:
                        CheckpointStore(f"s3://{bucket}/gpuwise").upload(local, "bench-run")
                    elapsed = time.perf_counter() - t0
                    c1, s1 = cpu_s(server.pid)
                    side = sides[who]
                    side.rates.append(mib / elapsed)
                    side.client_cpu_s.append((c1 - c0) * 1024 / mib)
                    side.server_cpu_s.append((s1 - s0) * 1024 / mib)
                    for o in client.list_objects_v2(Bucket=bucket).get("Contents", []):
                        client.delete_object(Bucket=bucket, Key=o["Key"])  # frees the server's disk
                    client.delete_bucket(Bucket=bucket)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
    return sides["boto3"], sides["gpuwise"]


@dataclass
class Run:
    rate: float  # the job's own work per second of its wall clock
    wall_s: float
    extra_cpu_s: float  # CPU seconds of the process tree beyond what the job itself reports


def _once(argv: list[str]) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # its own session either way, as `gpuwise run` gives the job one: with the kernel's autogroup
    # scheduling a new session is a new group, which on a loaded machine alone changes the job's share
    out = subprocess.run(argv, capture_output=True, text=True, check=True, start_new_session=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    words = next(line for line in out.splitlines() if line.startswith("WORK")).split()
    tree_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)  # waited-for tree
    return Run(float(words[1]), wall, tree_cpu - float(words[3]))


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    return q[0], q[1], q[2]


@dataclass
class Overhead:
    cpu_pcts: list[float]  # per wrapped run: gpuwise's CPU per second of the job, in % (the most it can
    # slow a job where no core is spare)
    wall_pcts: list[float]  # per pair: slowdown of the job's work rate under `gpuwise run`, in %
    fixed_wall_s: float  # start-up and exit, once
    fixed_cpu_s: float


def overhead(job_s: float, pairs: int) -> Overhead:
    """Direct and wrapped runs alternate (each pair in turn order), so load changes hit both; the CPU
    gpuwise itself spends is measured too, which machine load barely moves."""

    def argv(seconds: float, wrapped: bool) -> list[str]:
        job = [sys.executable, "-c", JOB, str(seconds)]
        if not wrapped:
            return job
        return [
            sys.executable, "-m", "gpuwise", "run", "--preemption", "off", "--no-ledger",
            "--checkpoint-dir", ckpt_dir, "--", *job,
        ]  # fmt: skip

    runs: dict[tuple[float, bool], list[Run]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_dir = str(Path(tmp, "ckpt"))
        for i in range(pairs):
            for seconds in (job_s, 0.0):  # a long job, and an empty one for the fixed cost
                for wrapped in (False, True) if i % 2 == 0 else (True, False):
                    runs.setdefault((seconds, wrapped), []).append(_once(argv(seconds, wrapped)))
    base = median(r.extra_cpu_s for r in runs[(job_s, False)] + runs[(0.0, False)])  # the job's exit
    short_cpu = median(r.extra_cpu_s for r in runs[(0.0, True)]) - base
    walls = [
        100 * (d.rate / w.rate - 1) for d, w in zip(runs[(job_s, False)], runs[(job_s, True)], strict=True)
    ]
    fixed_wall = median(r.wall_s for r in runs[(0.0, True)]) - median(r.wall_s for r in runs[(0.0, False)])
    cpu = [100 * (r.extra_cpu_s - base - short_cpu) / job_s for r in runs[(job_s, True)]]
    return Overhead(cpu, walls, fixed_wall, short_cpu)


def machine() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=2.0, help="checkpoint size in GiB (default 2)")
    ap.add_argument("--files", type=int, default=4, help="number of shard files (default 4)")
    ap.add_argument("--job-s", type=float, default=10.0, help="length of the overhead job in seconds")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each upload (default 3)")
    ap.add_argument(
        "--pairs", type=int, default=8, help="direct/wrapped pairs of the overhead job (default 8)"
    )
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args()
    ok = True
    print(f"machine: {machine()}")
    if not args.skip_throughput:
        boto3_side, gpuwise_side = throughput(args.gib, args.files, args.repeats)
        boto3_rate, gpuwise_rate = median(boto3_side.rates), median(gpuwise_side.rates)
        ratio = gpuwise_rate / boto3_rate
        print(f"upload: boto3 single-stream {boto3_rate:,.1f} MiB/s, gpuwise {gpuwise_rate:,.1f} MiB/s "
              f"(verified, with manifest): ratio {ratio:.2f} (target >= 1.0), medians")  # fmt: skip
        print(f"upload CPU s per GiB (client + server): boto3 {median(boto3_side.client_cpu_s):.1f} + "
              f"{median(boto3_side.server_cpu_s):.1f}, gpuwise {median(gpuwise_side.client_cpu_s):.1f} + "
              f"{median(gpuwise_side.server_cpu_s):.1f}")  # fmt: skip
        ok &= ratio >= 1.0
    o = overhead(args.job_s, args.pairs)
    low, mid, high = _quartiles(o.wall_pcts)
    cpu_low, cpu_mid, cpu_high = _quartiles(o.cpu_pcts)
    print(f"run overhead: gpuwise's own CPU while a {args.job_s:g} s job runs: median {cpu_mid:.2f} % of the "
          f"job's time (quartiles {cpu_low:.2f} .. {cpu_high:.2f} % over {len(o.cpu_pcts)} runs; target "
          f"< 1 %): the most it can slow the job where no core is spare")  # fmt: skip
    print(f"  the job's work rate under gpuwise run, paired with direct runs: median {mid:+.2f} %, quartiles "
          f"{low:+.2f} .. {high:+.2f} %, all {min(o.wall_pcts):+.2f} .. {max(o.wall_pcts):+.2f} % over "
          f"{len(o.wall_pcts)} pairs (machine load moves this one)")  # fmt: skip
    print(f"  start-up and exit add {o.fixed_wall_s:.2f} s wall and {o.fixed_cpu_s:.2f} CPU s once")
    ok &= cpu_mid < 1.0
    if os.getloadavg()[1] < (os.cpu_count() or 1):
        ok &= mid < 1.0
    else:  # the pairs measure the other processes more than gpuwise: said, not judged
        print("  wall clock not judged: the machine was loaded past its CPU count")
    print(f"machine at the end: {machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
