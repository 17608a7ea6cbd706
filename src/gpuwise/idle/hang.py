"""Hung-but-busy detection: a job that spins at full utilization while making no progress.

A deadlocked NCCL collective keeps every kernel of the ring spinning on a flag that never flips, so
`nvidia-smi` shows 100 % forever and the idle policy, rightly, calls the machine busy. What users report
from such hangs (one `nvidia-smi` reading each; no public time series of a hang was found):

* 100 % utilization at low, steady power: "GPU util is 100% but the power consumption is pretty low
  (~70W)" (NVIDIA/nccl#968); "utilization of all GPUs pegged at 100% … the power consumption of all of
  them is at idle" (Theano/libgpuarray#387); 100 % at 28 W of 250 W in P8 (tensorflow/tensorflow#2121);
  100 % at ~120 W per GPU on 600-W cards after a hung all_reduce (local-inference-lab/rtx6kpro#15).
* no memory or bus traffic: "100% SM utilization with 0% memory utilization indefinitely"
  (NVIDIA/nccl#2079); "~99% after the freeze … RX=0, TX=0" (NVIDIA/nccl-tests#117).
* but neither reading proves a hang. A real, working GB10 training run (the wandb_gb10 trace in
  tests/fixtures/recordings/traces) held 84–91 % at 28.4–28.9 W for 40 minutes: a steady job is as
  flat as a spin. And on AMD parts "100 % / 55 W" is what genuine compute looks like
  (ROCm/legacy-rocm-build#6530).

So the GPU side is only a precondition, and the decision rests on progress. A GPU *looks hung* when, for
every sample of the stretch, utilization is at least `util_pct` (95: every report above reads 99–100 %,
and the real training trace at 84–91 % stays out), power draw and memory used are reported (a GPU that
does not report them, like GB10's unified memory, is never judged), power draw and (where reported) the SM
clock stay within `flat_pct` (5 %) of their highest reading, memory used moves by less than
`mem_change_mib`, and,
where reported, memory utilization is at most 10 % and PCIe traffic under 10 MB/s. The machine looks hung
while every GPU either looks hung or sits idle (a hang leaves some ranks at 0 %: libgpuarray#387,
NVIDIA/nccl#1033) and at least one looks hung. It is a *possible hang* once that has lasted
`window_min` (30: three times PyTorch's default NCCL collective timeout of 10 min, pytorch/pytorch#110947,
so the framework's own watchdog acts first) with no progress — no watched file grew or changed
(`[idle] watch_paths`: logs, checkpoints) — and no sign of a user (SSH input, keep-alive, Jupyter, the
user's own activity check). Missing data (a failed reading, an unreadable watched path, a gap) restarts
the stretch: it can only delay a verdict. So does the network moving data (the `host` signal's
`net_kib_per_s`, 1 MiB/s): the reports above show a hang moving none ("RX=0, TX=0"), while a live job
with flat GPUs may (rank 0 uploading a checkpoint for longer than the window while the other ranks spin
in a barrier; a slow peer feeding a TCP collective). Host CPU is not progress: a hung job's threads spin
on the CPU too.

A possible hang is reported (warning); the machine is stopped for it only with `stop` (`[idle]
stop_on_hang = true`), and then only after the warning has stood for the policy's `warn_min`.

Pure: no files, clock or printing; imports the sample model, the policy's types and errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuwise.errors import ConfigError
from gpuwise.gpu.sample import Failed, NotSupported, Sample
from gpuwise.idle.message import Msg, join
from gpuwise.idle.policy import MIB, Observation, fmt_min, fmt_window
from gpuwise.idle.state import finite_or_none, whole
from gpuwise.locale import N_, _

MEM_UTIL_MAX_PCT = 10.0  # "0% memory utilization" in a spinning NCCL deadlock (NVIDIA/nccl#2079)
PCIE_MAX_BYTES_PER_S = 10e6  # "RX=0, TX=0" after the freeze (NVIDIA/nccl-tests#117); any copy moves GB/s
# signals that say a person is at the machine (a hung job's own process and `gpuwise run` do not)
USER_SIGNALS = frozenset({"ssh", "jupyter", "keepalive", "activity_command", "activity_url"})

HangState = Literal["none", "suspected", "stopping"]


@dataclass(frozen=True)
class HangConfig:
    window_min: float = 30.0
    util_pct: float = 95.0
    flat_pct: float = 5.0
    stop: bool = False

    def validate(self) -> HangConfig:
        def bad(name: str, value: float, want: str) -> ConfigError:
            return ConfigError(
                _("idle option {name} = {value} is not valid").format(name=name, value=value),
                why=_("it must be {want}").format(want=want),
                fix=_("set {name} in the idle section of config.toml to {want}").format(name=name, want=want),
            )

        if not (math.isfinite(self.window_min) and self.window_min > 0):
            raise bad("hang_window_min", self.window_min, _("a positive number of minutes"))
        if not (math.isfinite(self.util_pct) and 0 < self.util_pct <= 100):
            raise bad("hang_util_pct", self.util_pct, _("a percentage above 0 and at most 100"))
        if not (math.isfinite(self.flat_pct) and 0 <= self.flat_pct <= 100):
            raise bad("hang_flat_pct", self.flat_pct, _("a percentage from 0 to 100"))
        return self


@dataclass(frozen=True)
class HangVerdict:
    state: HangState
    reason: str
    since_s: float | None = None  # when the machine last showed progress, activity or a user
    stop_due_s: float | None = None  # when a stop would come (stop_on_hang), if nothing changes
    gpus: tuple[int, ...] = ()


def _value(reading: object) -> float | None:
    if isinstance(reading, NotSupported | Failed) or reading is None or isinstance(reading, bool):
        return None
    if not isinstance(reading, int | float) or not math.isfinite(float(reading)):
        return None
    return float(reading)


@dataclass
class _Stretch:
    """One GPU's current flat, fully busy stretch: when it began and the ranges seen since."""

    start_s: float
    power: tuple[float, float]
    mem: tuple[float, float]
    clock: tuple[float, float] | None

    def widened(self, power: float, mem: float, clock: float | None) -> _Stretch:
        def grow(r: tuple[float, float], v: float) -> tuple[float, float]:
            return (min(r[0], v), max(r[1], v))

        new_clock = None if clock is None or self.clock is None else grow(self.clock, clock)
        return _Stretch(self.start_s, grow(self.power, power), grow(self.mem, mem), new_clock)


@dataclass
class HangDetector:
    """Feed every observation in time order with `observe()`.

    `threshold_pct` and `mem_change_mib` are the idle policy's (what counts as an idle GPU and as a
    memory change); `gap_s` the longest gap that is not missing data; `warn_s` how long the warning
    stands before a stop."""

    config: HangConfig = field(default_factory=HangConfig)
    threshold_pct: float = 5.0
    mem_change_mib: float = 64.0
    gap_s: float = 120.0
    warn_s: float = 600.0
    _stretches: dict[int, _Stretch] = field(default_factory=dict, init=False)
    _machine_since: float | None = field(default=None, init=False)
    _last_ts: float | None = field(default=None, init=False)
    _suspected_at: float | None = field(default=None, init=False)
    _known: set[int] = field(default_factory=set, init=False)
    _just_restored: bool = field(default=False, init=False)  # until the first read after restore

    def reset(self) -> None:
        """Forget every stretch (after a stop, or when told the job moved on)."""
        self._stretches.clear()
        self._machine_since = None
        self._suspected_at = None

    def to_json(self) -> dict[str, Any]:
        """The clock the daemon persists: each GPU's flat stretch, the machine's, the last observation.
        The warning (`_suspected_at`) is left out on purpose, as the policy leaves out its own: after a
        restart the users are warned anew, so a stop never comes without this process's warning."""
        return {
            "last_ts": self._last_ts,
            "machine_since": self._machine_since,
            "known_gpus": sorted(self._known),
            "stretches": {
                str(i): {"start_s": s.start_s, "power": list(s.power), "mem": list(s.mem), "clock": s.clock}
                for i, s in sorted(self._stretches.items())
            },
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Continue from `to_json`'s evidence. Whether it still applies is decided by the next observation,
        exactly as for the idle policy's restored clock: more than `gap_s` after `last_ts` (the daemon was
        down longer than the policy's gap limit), a clock that went back, or another set of GPUs, and the
        stretch starts over. Raises ValueError for evidence of the wrong type or that contradicts itself
        (a stretch or the machine's stretch beginning after the last observation, or the machine's before
        one of its GPUs'): a damaged file must not date a hang earlier than anyone saw it; the caller then
        starts the clock over, which only delays a verdict."""
        last = finite_or_none(data.get("last_ts"), "last_ts")
        stretches = data.get("stretches", {})
        known = data.get("known_gpus", [])
        if not isinstance(stretches, dict) or not isinstance(known, list):
            raise ValueError("stretches or known_gpus of the wrong type")
        out = {whole(k, "a GPU index"): _stretch(v) for k, v in stretches.items()}
        since = finite_or_none(data.get("machine_since"), "machine_since")
        starts = [s.start_s for s in out.values()]
        if out and (last is None or max(starts) > last):
            raise ValueError("a stretch begins after the last observation")
        if since is not None and (not out or last is None or since > last or since < max(starts)):
            raise ValueError("machine_since does not match the stretches")
        self.reset()
        self._stretches, self._machine_since, self._last_ts = out, since, last
        self._known = {whole(i, "a GPU index") for i in known}
        self._just_restored = True

    def _flat(self, lo_hi: tuple[float, float]) -> bool:
        lo, hi = lo_hi
        return hi - lo <= self.config.flat_pct / 100.0 * hi

    def _gpu(self, s: Sample, t: float) -> Literal["hung", "idle", "busy"]:
        """Update GPU `s.index`'s stretch; say whether it looks hung, idle or anything else."""
        util = _value(s.util_gpu_pct)
        if s.lost or util is None:
            self._stretches.pop(s.index, None)
            return "busy"  # missing data: never part of a hang verdict
        if util <= self.threshold_pct:
            self._stretches.pop(s.index, None)
            return "idle"
        power, mem = _value(s.power_draw_watts), _value(s.memory_used_bytes)
        clock = _value(s.sm_clock_mhz)
        mem_util = _value(s.util_memory_pct)
        tx, rx = _value(s.pcie_tx_bytes_per_s), _value(s.pcie_rx_bytes_per_s)
        quiet_bus = (mem_util is None or mem_util <= MEM_UTIL_MAX_PCT) and (
            tx is None or rx is None or tx + rx <= PCIE_MAX_BYTES_PER_S
        )
        if util < self.config.util_pct or power is None or mem is None or not quiet_bus:
            self._stretches.pop(s.index, None)
            return "busy"
        old = self._stretches.get(s.index)
        new = None if old is None else old.widened(power, mem, clock)
        if (
            new is None
            or not self._flat(new.power)
            or new.mem[1] - new.mem[0] >= self.mem_change_mib * MIB
            or (new.clock is not None and not self._flat(new.clock))
        ):
            clock_range = None if clock is None else (clock, clock)
            new = _Stretch(t, (power, power), (mem, mem), clock_range)
        self._stretches[s.index] = new
        return "hung"

    def _machine(self, obs: Observation) -> tuple[int, ...]:
        """Update the machine's stretch; the GPUs that look hung now (empty: the stretch ended)."""
        t = obs.timestamp_s
        gap = self._last_ts is not None and not (0 <= t - self._last_ts <= self.gap_s)
        self._last_ts = t
        restored, self._just_restored = self._just_restored, False
        # data moving over the network (a checkpoint upload the other ranks wait for, a slow peer) is
        # progress: a deadlocked collective moves none (NVIDIA/nccl-tests#117); CPU use is not, as a hung
        # job's own threads spin on it
        if gap or obs.errors or not obs.samples or any(sig.moves_data for sig in obs.signals):
            self.reset()
            return ()
        looks: dict[int, str] = {}
        for s in obs.samples:
            state = self._gpu(s, t)
            # two readings of one GPU at one instant: anything but "hung"/"idle" wins, then "hung"
            prev = looks.get(s.index)
            looks[s.index] = state if prev is None or state == "busy" or prev == "idle" else prev
        missing = self._known - set(looks)
        if restored and set(looks) != self._known:  # not the GPUs the restored stretch was about
            missing = missing or set(looks) - self._known
        self._known |= set(looks)
        if missing:  # a GPU missing from this read: missing data
            self.reset()
            return ()
        # a GPU read twice in one poll ("hung" then "idle") keeps its "hung" look but its stretch ended with
        # the idle reading: it has no stretch to date the hang from, so it does not count as hung
        hung = tuple(sorted(i for i, v in looks.items() if v == "hung" and i in self._stretches))
        if not hung or any(v == "busy" for v in looks.values()):
            self._machine_since = None
            return ()
        start = max(self._stretches[i].start_s for i in hung)
        self._machine_since = start if self._machine_since is None else max(self._machine_since, start)
        return hung

    def observe(
        self, obs: Observation, *, last_progress_s: float | None, last_user_s: float | None = None
    ) -> HangVerdict:
        """One observation → the verdict. `last_progress_s`: when a watched path last changed (None:
        never seen to change); `last_user_s`: the latest sign of a person (see USER_SIGNALS)."""
        t = obs.timestamp_s
        hung = self._machine(obs)
        if not hung or self._machine_since is None:
            self._suspected_at = None
            return HangVerdict("none", Msg(N_("no GPU looks hung")))
        since = max(x for x in (self._machine_since, last_progress_s, last_user_s) if x is not None)
        cfg = self.config
        window_s = cfg.window_min * 60.0
        if t - since < window_s:
            self._suspected_at = None
            flat = Msg(
                N_("GPU {gpus} flat at full utilization without progress for {span}"),
                gpus=_list(hung),
                span=fmt_min(t - since),
            )
            after = Msg(N_("{flat} (a possible hang after {window})"), flat=flat, window=fmt_window(window_s))
            return HangVerdict("none", after, since, None, hung)
        if self._suspected_at is None:
            self._suspected_at = t
        stop_due = max(since + window_s, self._suspected_at) + self.warn_s
        what = self._describe(hung, t - since)
        if not cfg.stop:
            off = Msg(N_("{what}; not stopping (stop_on_hang is off)"), what=what)
            return HangVerdict("suspected", off, since, None, hung)
        if t >= stop_due:
            return HangVerdict("stopping", Msg(N_("stop: {what}"), what=what), since, stop_due, hung)
        soon = Msg(N_("{what}; stop in {left} (stop_on_hang)"), what=what, left=fmt_min(stop_due - t))
        return HangVerdict("suspected", soon, since, stop_due, hung)

    def _describe(self, hung: tuple[int, ...], for_s: float) -> str:
        parts: list[str] = []
        for i in hung[:2]:
            s = self._stretches[i]
            power = f"{s.power[0]:.0f}–{s.power[1]:.0f} W"
            clock = (
                ""
                if s.clock is None
                else Msg(N_(", SM clock {low:.0f}–{high:.0f} MHz"), low=s.clock[0], high=s.clock[1])
            )
            parts.append(join("", [f"GPU {i} {power}", clock, f", {s.mem[1] / MIB:.0f} MiB"]))
        if len(hung) > 2:
            parts.append("…")
        return Msg(
            N_(
                "possible hang: {n} GPU at ≥{util:g}% util with flat power, clock and memory and no "
                "progress (no watched file changed, no user) for {span} ({gpus})"
            )
            if len(hung) == 1
            else N_(
                "possible hang: {n} GPUs at ≥{util:g}% util with flat power, clock and memory and no "
                "progress (no watched file changed, no user) for {span} ({gpus})"
            ),
            n=len(hung),
            util=self.config.util_pct,
            span=fmt_min(for_s),
            gpus=join("; ", parts),
        )


def _stretch(value: object) -> _Stretch:
    def pair(x: object, key: str) -> tuple[float, float]:
        if not isinstance(x, list) or len(x) != 2:
            raise ValueError(f"{key} is not a [low, high] pair")
        lo, hi = (finite_or_none(v, key) for v in x)
        if lo is None or hi is None or not 0 <= lo <= hi:
            raise ValueError(f"{key} is not a [low, high] pair")
        return lo, hi

    if not isinstance(value, dict):
        raise ValueError("a stretch is not an object")
    start = finite_or_none(value.get("start_s"), "start_s")
    if start is None:
        raise ValueError("a stretch without start_s")
    clock = value.get("clock")
    return _Stretch(
        start,
        pair(value.get("power"), "power"),
        pair(value.get("mem"), "mem"),
        None if clock is None else pair(clock, "clock"),
    )


def _list(ids: tuple[int, ...]) -> str:
    return ", ".join(str(i) for i in ids)


def last_user_activity(obs: Observation) -> float | None:
    """The latest sign of a person in `obs`'s signals: an active or unreadable user signal counts as
    now (missing data counts as a person), a quiet one at its `last_active_s`."""
    latest: float | None = None
    for sig in obs.signals:
        if sig.name not in USER_SIGNALS:
            continue
        when = obs.timestamp_s if sig.state != "quiet" else sig.last_active_s
        if when is not None and math.isfinite(when):
            latest = when if latest is None else max(latest, min(when, obs.timestamp_s))
    return latest
