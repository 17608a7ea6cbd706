"""The CPU's ceilings from /proc/cpuinfo, and the timing helper's bounds (fake clock)."""

from __future__ import annotations

import pytest

from gpuwise.bench.cpu import parse_cpuinfo
from gpuwise.bench.timing import time_calls

# Two processors of a constructed two-socket host (the fields as Linux prints them).
CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
cpu MHz\t\t: 2000.000
flags\t\t: fpu sse avx avx2 fma avx512f avx512_bf16 amx_bf16

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 1
cpu MHz\t\t: 3800.000
flags\t\t: fpu sse avx avx2 fma avx512f avx512_bf16 amx_bf16
"""


def test_peak_flops_follow_the_vector_width() -> None:
    cpu = parse_cpuinfo(CPUINFO, cores=4)
    assert cpu.sockets == 2 and cpu.clock_ghz == 3.8 and cpu.model == "Intel(R) Xeon(R) Platinum 8480+"
    assert cpu.fp32_flops_per_cycle == 64  # AVX-512: 16 lanes × FMA × 2 units
    assert cpu.peak_gflops("fp32")[0] == pytest.approx(4 * 3.8 * 64)
    assert cpu.peak_gflops("bf16")[0] == pytest.approx(4 * 3.8 * 1024)  # AMX
    avx2 = parse_cpuinfo(
        CPUINFO.replace(" avx512f avx512_bf16 amx_bf16", ""), cores=2, max_freq_khz=3_500_000
    )
    assert avx2.fp32_flops_per_cycle == 32 and avx2.clock_ghz == 3.5 and not avx2.has_bf16
    assert avx2.peak_gflops("bf16")[0] == avx2.peak_gflops("fp32")[0]  # no bf16 units: the fp32 rate
    sse = parse_cpuinfo("flags : fpu sse sse2\n", cores=1)
    assert sse.fp32_flops_per_cycle == 8 and sse.peak_gflops("fp32")[0] is None  # no clock: no peak


def test_a_peak_from_the_reported_mhz_is_not_called_a_ceiling() -> None:
    """Without cpufreq (a cloud VM) /proc/cpuinfo's MHz is the base clock, which boost passes: the peak's
    derivation says it is not a ceiling; from cpufreq's maximum it is one and says nothing of the kind."""
    vm = parse_cpuinfo(CPUINFO, cores=2)
    assert not vm.clock_is_max and "not a ceiling" in vm.peak_gflops("fp32")[1]
    metal = parse_cpuinfo(CPUINFO, cores=2, max_freq_khz=3_800_000)
    assert metal.clock_is_max and "not a ceiling" not in metal.peak_gflops("fp32")[1]


def test_memory_ceiling_is_per_socket_and_says_it_is_assumed() -> None:
    ceiling, how = parse_cpuinfo(CPUINFO, cores=4).memory_ceiling_gbs()
    assert ceiling == pytest.approx(2 * 12 * 51.2)
    assert "assumed" in how


class FakeClock:
    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now

    def work(self) -> None:
        self.now += self.step


def test_the_cap_stops_repetitions_but_one_always_runs() -> None:
    clock = FakeClock(step=1.0)
    t = time_calls(clock.work, warmup=2, repetitions=100, max_seconds=4.5, clock=clock)
    assert t.repetitions == 3  # 2 s of warm-up, then repetitions until past 4.5 s
    assert t.median_s == 1.0 and t.spread_pct == 0.0
    slow = FakeClock(step=10.0)
    once = time_calls(slow.work, warmup=3, repetitions=5, max_seconds=1.0, clock=slow)
    assert once.repetitions == 1 and once.median_s == 10.0


def test_sync_brackets_every_timed_call() -> None:
    calls: list[str] = []
    time_calls(
        lambda: calls.append("run"),
        warmup=1,
        repetitions=2,
        max_seconds=60,
        sync=lambda: calls.append("sync"),
    )
    assert calls == ["run", "sync", "run", "sync", "run", "sync"]


def test_the_table_explains_a_fraction_over_100_percent(capsys: pytest.CaptureFixture[str]) -> None:
    from gpuwise.cli.bench_output import print_suite

    row = {"task": "gemm_fp32", "value": 0.166, "unit": "TFLOPS", "peak": 0.1565, "fraction_of_peak": 1.061}
    document = {"suite": "quick", "device": "cpu", "machine": {"cpu": "AMD EPYC"}, "results": [row]}
    print_suite(document)
    assert "Over 100 %" in " ".join(capsys.readouterr().out.split())
    print_suite({**document, "results": [{**row, "value": 0.05, "fraction_of_peak": 0.32}]})
    assert "Over 100 %" not in capsys.readouterr().out
