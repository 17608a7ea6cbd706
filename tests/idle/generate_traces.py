"""Generate the constructed idle traces in tests/fixtures/idle/ (reproducible: fixed seeds).

    .venv/bin/python tests/idle/generate_traces.py          # rewrite the fixtures
    .venv/bin/python tests/idle/generate_traces.py --check  # exit 1 if they differ from what is committed

Each trace is written exactly as `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,
memory.total,power.draw --format=csv -l N` prints it (units in the header and in every value, a space after
each comma, one row per GPU per sample, each GPU's row stamped separately). The shapes reproduce what real
jobs do; `manifest.json` records, per trace, whether a safe idle policy must never stop it or must stop it
inside the final idle stretch (offsets in seconds from the first sample).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "idle"

H100_TOTAL_MIB = 81559  # nvidia-smi's memory.total for an H100 80GB HBM3
RTX_TOTAL_MIB = 24564  # RTX 4090 / A10G class desktop GPU
GB10_HEADER = "timestamp, index, utilization.gpu [%], power.draw [W], temperature.gpu"
HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]"

# (util %, memory used MiB or None, power W) for one GPU at one instant
Reading = tuple[float, float | None, float]
# gpu index, offset s -> reading
Shape = Callable[[int, float], Reading]


@dataclass(frozen=True)
class Trace:
    name: str
    description: str
    gpus: int
    interval_s: float
    duration_s: float
    total_mib: int
    shape: Shape
    expect: str  # "never" | "stop"
    # for "stop": the policy must stop at an offset in [stop_after_s, stop_before_s]
    stop_after_s: float | None = None
    stop_before_s: float | None = None
    header: str = HEADER
    # a second `nvidia-smi -l` logger appending to the same file: its row for each GPU follows the first
    # logger's with the same stamp (what the red-team pass of issue 10 fed `idle replay`)
    second_logger: Shape | None = None
    start: datetime = datetime(2026, 5, 4, 21, 0, 0, tzinfo=UTC)


def _ts(t: datetime) -> str:
    return t.strftime("%Y/%m/%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def render(trace: Trace, rng: random.Random) -> str:
    lines = [trace.header]
    n = int(trace.duration_s // trace.interval_s) + 1
    for k in range(n):
        base = trace.start + timedelta(seconds=k * trace.interval_s + rng.uniform(0.0, 0.012))
        for gpu in range(trace.gpus):
            stamp = base + timedelta(milliseconds=gpu * rng.randint(0, 2))
            shapes = [trace.shape] if trace.second_logger is None else [trace.shape, trace.second_logger]
            for shape in shapes:
                util, mem, power = shape(gpu, k * trace.interval_s)
                if trace.header == GB10_HEADER:
                    lines.append(f"{_ts(stamp)}, {gpu}, {util:.0f} %, {power:.2f} W, {40 + util / 10:.0f}")
                    continue
                mem_txt = "[N/A]" if mem is None else f"{mem:.0f} MiB"
                lines.append(
                    f"{_ts(stamp)}, {gpu}, {util:.0f} %, {mem_txt}, {trace.total_mib} MiB, {power:.2f} W"
                )
    return "\n".join(lines) + "\n"


def _train(rng: random.Random, mem: float) -> Reading:
    return (rng.uniform(88, 100), mem + rng.uniform(-20, 20), rng.uniform(560, 690))


def _idle(rng: random.Random, mem: float) -> Reading:
    return (0.0, mem, rng.uniform(68, 75))


def traces() -> list[Trace]:
    rng = random.Random(20260504)
    out: list[Trace] = []

    # 1. Training with evaluation phases of 50, 62 and 70 min at 0 % while the process holds its memory.
    evals = [(3600, 3600 + 50 * 60), (3 * 3600, 3 * 3600 + 62 * 60), (5 * 3600, 5 * 3600 + 70 * 60)]

    def eval_phases(gpu: int, t: float) -> Reading:
        if any(a <= t < b for a, b in evals):
            _ = rng.random()  # kept so the other traces draw the same numbers
            return (0.0, 71230 + rng.uniform(-8, 8), rng.uniform(110, 125))
        return _train(rng, 71230)

    out.append(
        Trace(
            "eval_phases_h100_30s",
            "1×H100: training with 50/62/70-min eval phases at 0 %, memory held",
            1,
            30,
            7 * 3600,
            H100_TOTAL_MIB,
            eval_phases,
            "never",
        )
    )

    # 2. The same on a GPU that does not report memory (GB10 unified memory): a 58-min eval at 0 %.
    def eval_nomem(gpu: int, t: float) -> Reading:
        if 2 * 3600 <= t < 2 * 3600 + 58 * 60:
            return (0.0, None, rng.uniform(10, 12))
        return (rng.uniform(85, 95), None, rng.uniform(24, 28))

    out.append(
        Trace(
            "eval_phase_gb10_nomem_15s",
            "GB10: training with a 58-min eval at 0 %, memory not reported",
            1,
            15,
            4 * 3600,
            0,
            eval_nomem,
            "never",
            header=GB10_HEADER,
        )
    )

    # 3. Input-bound training: 0 % for most samples, short bursts when a batch arrives, and two data-loader
    #    stalls (a new shard is downloaded) of 14 and 25 min with no burst at all; memory held throughout.
    stalls = [(3600, 3600 + 14 * 60), (2 * 3600, 2 * 3600 + 25 * 60)]

    def input_bound(gpu: int, t: float) -> Reading:
        if any(a <= t < b for a, b in stalls) or rng.random() > 0.12:
            return (0.0, 20480 + rng.uniform(-4, 4), rng.uniform(90, 110))
        return (rng.uniform(40, 100), 20480 + rng.uniform(-4, 4), rng.uniform(300, 550))

    out.append(
        Trace(
            "input_bound_h100_5s",
            "1×H100: input-bound, 0 % in 88 % of samples, 14- and 25-min loader stalls",
            1,
            5,
            3 * 3600,
            H100_TOTAL_MIB,
            input_bound,
            "never",
        )
    )

    # 4. An interactive notebook: 5–20 min of work, then 25–35-min pauses; the model stays loaded in some
    #    pauses and is freed (kernel context left) in others.
    plan: list[tuple[float, float, bool]] = []  # (start, end, working); memory freed in odd pauses
    t0 = 0.0
    i = 0
    while t0 < 5 * 3600:
        work = rng.uniform(5, 20) * 60
        pause = rng.uniform(25, 35) * 60
        plan.append((t0, t0 + work, True))
        plan.append((t0 + work, t0 + work + pause, i % 2 == 1))  # third field: memory freed in this pause
        t0 += work + pause
        i += 1

    def interactive(gpu: int, t: float) -> Reading:
        for k, (a, b, flag) in enumerate(plan):
            if a <= t < b:
                if k % 2 == 0:
                    return (rng.uniform(30, 100), 15200 + rng.uniform(-30, 30), rng.uniform(200, 500))
                return (0.0, 480.0 if flag else 15200.0, rng.uniform(65, 72))
        return (0.0, 15200.0, 70.0)

    end_interactive = plan[-2][1]  # end on a work period
    out.append(
        Trace(
            "interactive_pauses_h100_10s",
            "1×H100: notebook, 5–20 min of work then 25–35-min pauses (model kept or freed)",
            1,
            10,
            end_interactive,
            H100_TOTAL_MIB,
            interactive,
            "never",
        )
    )

    # 5. An 8-GPU node where one GPU trains and seven sit empty.
    def one_of_eight(gpu: int, t: float) -> Reading:
        if gpu == 3:
            return _train(rng, 64010)
        return (0.0, 1.0 if gpu else 4.0, rng.uniform(68, 72))

    out.append(
        Trace(
            "multi_gpu_8x_one_busy_30s",
            "8×H100: GPU 3 trains for 4 h, 7 GPUs empty",
            8,
            30,
            4 * 3600,
            H100_TOTAL_MIB,
            one_of_eight,
            "never",
        )
    )

    # 6. An 8-GPU DDP job whose rank 0 evaluates alone for 65 min while ranks 1–7 wait at 0 % holding memory.
    def rank0_eval(gpu: int, t: float) -> Reading:
        if 2 * 3600 <= t < 2 * 3600 + 65 * 60:
            if gpu == 0 and rng.random() < 0.5:
                return (rng.uniform(20, 60), 60500.0, rng.uniform(200, 300))
            return _idle(rng, 60500.0 if gpu == 0 else 58800.0)
        return _train(rng, 60500.0 if gpu == 0 else 58800.0)

    out.append(
        Trace(
            "multi_gpu_8x_rank0_eval_30s",
            "8×H100 DDP: rank 0 evaluates 65 min, ranks 1–7 idle with memory held",
            8,
            30,
            4 * 3600,
            H100_TOTAL_MIB,
            rank0_eval,
            "never",
        )
    )

    # --- traces that end in a long idle stretch: must stop within it
    # 7. Training for 2 h, the process exits, the machine sits empty for 3 h.
    def job_then_idle(gpu: int, t: float) -> Reading:
        return _train(rng, 70100) if t < 2 * 3600 else (0.0, 1.0, rng.uniform(66, 70))

    out.append(
        Trace(
            "job_then_idle_3h_h100_30s",
            "1×H100: trains 2 h, exits, then 3 h empty",
            1,
            30,
            5 * 3600,
            H100_TOTAL_MIB,
            job_then_idle,
            "stop",
            2 * 3600 + 55 * 60,
            2 * 3600 + 70 * 60,
        )
    )

    # 8. 8 GPUs train for 3 h, the job exits, 2.5 h empty.
    def multi_then_idle(gpu: int, t: float) -> Reading:
        return _train(rng, 66000) if t < 3 * 3600 else (0.0, 1.0, rng.uniform(66, 70))

    out.append(
        Trace(
            "multi_gpu_8x_job_then_idle_2h30_30s",
            "8×H100: trains 3 h, exits, then 2.5 h empty",
            8,
            30,
            5.5 * 3600,
            H100_TOTAL_MIB,
            multi_then_idle,
            "stop",
            3 * 3600 + 55 * 60,
            3 * 3600 + 70 * 60,
        )
    )

    # 9. A job that hangs after 1.5 h: 0 % with its memory still held for 3 h (a deadlocked collective that
    #    does not spin, or a notebook left with a model loaded). Stops after the held-memory window.
    def hung(gpu: int, t: float) -> Reading:
        return _train(rng, 70100) if t < 1.5 * 3600 else (0.0, 70100.0, rng.uniform(95, 100))

    out.append(
        Trace(
            "hung_job_memory_held_3h_h100_30s",
            "1×H100: trains 1.5 h then hangs at 0 % with memory held for 3 h",
            1,
            30,
            4.5 * 3600,
            H100_TOTAL_MIB,
            hung,
            "stop",
            1.5 * 3600 + 115 * 60,
            1.5 * 3600 + 130 * 60,
        )
    )

    # 10. A desktop GPU: a 40-min job, then 3 h of display noise (bursts up to 30 % at ~300 MiB, as in the
    #     landct trace). Display noise is not a job: stop an hour after the job.
    def desktop(gpu: int, t: float) -> Reading:
        if t < 40 * 60:
            return (rng.uniform(85, 100), 9800 + rng.uniform(-200, 200), rng.uniform(250, 320))
        burst = rng.random() < 0.3
        return (rng.uniform(6, 30) if burst else rng.uniform(0, 3), 305 + rng.uniform(-5, 22), 25.0)

    out.append(
        Trace(
            "desktop_noise_tail_3h_5s",
            "RTX desktop: a 40-min job, then 3 h of display noise (≤ 30 % at ~300 MiB)",
            1,
            5,
            40 * 60 + 3 * 3600,
            RTX_TOTAL_MIB,
            desktop,
            "stop",
            40 * 60 + 55 * 60,
            40 * 60 + 70 * 60,
        )
    )

    # Shapes found while replaying real nvidia-smi logs (a V100 job at 0–12 % util, an RTX job that frees
    # its memory between phases) and in reviewing the defaults. New rng so the traces above stay as they are.
    rng2 = random.Random(20261130)

    # 11. A small job on a large GPU: 420 MiB (a CUDA context and a small model) at ~30 % util on an 80 GB
    #     card, below the 512 MiB baseline and the 35 % display-noise floor, started after monitoring began
    #     (the card read 1 MiB before it). Above the GPU's own lowest reading, so it is a job, not noise.
    def small_job(gpu: int, t: float) -> Reading:
        if t < 10 * 60:
            return (0.0, 1.0, rng2.uniform(60, 64))
        return (rng2.uniform(20, 34), 420 + rng2.uniform(-6, 6), rng2.uniform(120, 160))

    out.append(
        Trace(
            "small_job_420mib_h100_10s",
            "1×H100: a 420-MiB job at 20–34 % util for 3 h (below baseline and noise floor); 1 MiB before",
            1,
            10,
            3 * 3600 + 10 * 60,
            H100_TOTAL_MIB,
            small_job,
            "never",
        )
    )

    # 12. A starved job: util is 0 in ~95 % of 1-s samples and the bursts read only 1–4 % (a tiny kernel
    #     per batch, below the 5 % threshold), memory held for 3 h. Any kernel time on a GPU that holds
    #     memory is the job's work.
    def starved(gpu: int, t: float) -> Reading:
        if rng2.random() < 0.05:
            return (float(rng2.randint(1, 4)), 6150 + rng2.uniform(-2, 2), rng2.uniform(75, 90))
        return (0.0, 6150 + rng2.uniform(-2, 2), rng2.uniform(70, 74))

    out.append(
        Trace(
            "starved_low_util_bursts_h100_1s",
            "1×H100: loader-starved job, 0 % in ~95 % of 1-s samples, bursts of 1–4 % only, memory held 3 h",
            1,
            1,
            3 * 3600,
            H100_TOTAL_MIB,
            starved,
            "never",
        )
    )

    # 13. A job that frees its memory between epochs (torch.cuda.empty_cache) and then spends 80 min on CPU
    #     work at 0 %: only its CUDA context (430 MiB, below the 512 MiB baseline) stays on the card, which
    #     read 3 MiB before the job. Memory above the GPU's lowest reading is held: the 120-min window.
    def frees(gpu: int, t: float) -> Reading:
        if t < 5 * 60:
            return (0.0, 3.0, 60.0)
        if 65 * 60 <= t < 145 * 60:  # the CPU phase
            return (0.0, 430.0, rng2.uniform(68, 72))
        return _train(rng2, 30500)

    out.append(
        Trace(
            "frees_memory_cpu_phase_80min_h100_30s",
            "1×H100: trains, frees all but its 430-MiB context for an 80-min CPU phase at 0 %, trains",
            1,
            30,
            4 * 3600,
            H100_TOTAL_MIB,
            frees,
            "never",
        )
    )

    # 14. An RL fine-tuning run as in a real 15-s log (balance-budget): generation and training alternate
    #     with memory swinging 4–71 GB, one 24-min stretch at 0 % with 22 GB held mid-run; then the run
    #     ends at 1.5 h and a 1-GiB process stays on the card at 0 % for 5 h. Stop ~2 h after the exit.
    def rl_then_leftover(gpu: int, t: float) -> Reading:
        if t >= 90 * 60:
            return (0.0, 1047.0, rng2.uniform(60, 64))
        if 32 * 60 <= t < 56 * 60:  # the quiet stretch with memory held
            return (0.0, 22058.0, rng2.uniform(90, 95))
        phase = int(t // 120) % 3
        if phase == 2:  # generation swings memory and idles the SMs between batches
            return (float(rng2.choice([0, 0, 1, 3, 9])), rng2.choice([20460.0, 34186.0, 66048.0]), 120.0)
        return (rng2.uniform(22, 99), 22940 + rng2.uniform(-20, 20), rng2.uniform(250, 400))

    out.append(
        Trace(
            "rl_run_then_leftover_1gib_5h_15s",
            "1×80 GB GPU: RL run, a 24-min quiet stretch; exits at 1.5 h, a 1-GiB process stays at 0 % 5 h",
            1,
            15,
            6.5 * 3600,
            H100_TOTAL_MIB,
            rl_then_leftover,
            "stop",
            90 * 60 + 115 * 60,
            90 * 60 + 135 * 60,
        )
    )

    # 15. Issue 10's red-team case: two loggers append to one file, so every (timestamp, index) has two
    # rows. The first logger's rows say GPU 1 is idle; the second's say it is 97-100 % busy the whole time.
    # A reader that kept one row per (timestamp, index) kept the idle one and stopped a busy machine.
    def first_logger(gpu: int, t: float) -> Reading:
        del t
        return _idle(rng, 2)

    def second_logger(gpu: int, t: float) -> Reading:
        del t
        return (rng.uniform(97, 100), 2, rng.uniform(600, 690)) if gpu == 1 else _idle(rng, 2)

    out.append(
        Trace(
            "two_loggers_one_file_busy_3h_2gpu_30s",
            "2×H100, two loggers in one file: one logger's rows show GPU 1 idle, the other's 97-100 % busy",
            2,
            30,
            3 * 3600,
            H100_TOTAL_MIB,
            first_logger,
            "never",
            second_logger=second_logger,
        )
    )
    return out


def build() -> dict[str, str]:
    files: dict[str, str] = {}
    manifest: dict[str, dict[str, object]] = {}
    for i, trace in enumerate(traces()):
        files[trace.name + ".csv"] = render(trace, random.Random(1000 + i))
        manifest[trace.name + ".csv"] = {
            "description": trace.description,
            "expect": trace.expect,
            "stop_after_s": trace.stop_after_s,
            "stop_before_s": trace.stop_before_s,
            "gpus": trace.gpus,
            "interval_s": trace.interval_s,
        }
    files["manifest.json"] = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    return files


def main(argv: list[str]) -> int:
    files = build()
    if "--check" in argv:
        stale = [n for n, text in files.items() if not (OUT / n).exists() or (OUT / n).read_text() != text]
        if stale:
            print("stale fixtures: " + ", ".join(stale))
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
