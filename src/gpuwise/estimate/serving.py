"""Serving latency in the user's units: time to first token (TTFT), time per output token (TPOT) and the
end-to-end time of one request, at the workload's concurrency and for a single stream.

The inference estimate (estimate/inference.py) knows what one replica's steps cost: a prompt's prefill and
one decode step at a given number of sequences. This module turns those into what one request sees under
the replica's batching:

* **continuous** (vLLM, TGI, TensorRT-LLM in-flight batching, the default): a new request joins the running
  batch at the next step. Its first token comes out of its own prefill, after waiting for the other
  requests' prefills already queued; every other request's prefill stalls its decoding once during its
  life, so TPOT = decode step + (concurrency - 1) prefills spread over its output tokens.
* **static** (Hugging Face `generate` on a padded batch, offline `LLM.generate` benchmarks): the
  `concurrency` requests arrive together, are prefilled together and decoded together; every request's
  first token waits for the whole batch's prefill; nothing interrupts the decode.

Measured against NVIDIA NIM's and vLLM's published Llama 70B figures in tests/estimate/test_serving.py.
Pure: no I/O; must not import the CLI, the catalog or the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuwise.estimate.constants import Constant
from gpuwise.locale import _

BATCHING = ("continuous", "static")

# Waiting for the prefills queued ahead of a request: the mean wait of an M/D/1 queue whose server is the
# prefill (Pollaczek–Khinchine with deterministic service: W = ρ·S / (2·(1 − ρ))). The arrivals of a closed
# loop of `concurrency` clients are not Poisson; the formula is the textbook upper-middle estimate and is
# checked against NIM's TTFT-by-concurrency tables in the tests.
QUEUE_MODEL = Constant(
    "ttft_queue_model",
    0.5,
    "× ρ·prefill/(1 − ρ)",
    "mean wait of an M/D/1 queue (Pollaczek-Khinchine formula with deterministic service time)",
)


@dataclass(frozen=True)
class Latency:
    """What one request sees, in seconds: first token, each later token, the whole response."""

    concurrency: int  # sequences decoded together per replica
    batching: str  # "continuous" | "static"
    ttft_s: float  # request sent -> first output token
    tpot_s: float  # mean time between output tokens after the first (vLLM's TPOT, NIM's ITL)
    request_s: float  # request sent -> last output token = ttft_s + (output_tokens - 1) · tpot_s
    single_stream: Latency | None = None  # the same replica serving one request at a time
    # the most requests in flight per replica whose KV cache still fits (outside the allocator's margin)
    max_concurrency_in_memory: int | None = None
    # the most requests in flight per replica that meet the workload's latency targets and fit; 0: not even
    # one (None: no target given)
    max_concurrency_within_targets: int | None = None

    @property
    def tokens_per_s_per_request(self) -> float:
        """Streaming speed one user sees once the first token arrived (1 / TPOT)."""
        return 1.0 / self.tpot_s if self.tpot_s > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        """`estimate --json`'s `latency` object (docs/json.md)."""
        out: dict[str, object] = {
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "request_s": self.request_s,
            "concurrency": self.concurrency,
            "batching": self.batching,
            "output_tokens_per_s_per_request": self.tokens_per_s_per_request,
        }
        if self.single_stream is not None:
            out["single_stream"] = self.single_stream.to_json()
        if self.max_concurrency_in_memory is not None:
            out["max_concurrency_in_memory"] = self.max_concurrency_in_memory
        if self.max_concurrency_within_targets is not None:
            out["max_concurrency_within_targets"] = self.max_concurrency_within_targets
        return out


@dataclass(frozen=True)
class ReplicaTimes:
    """What one replica's work costs, from the inference estimate.

    `prefill_s`: one prompt's prefill as part of a batch of prefills (the weights read once for all).
    `prefill_alone_s`: one prompt's prefill run by itself (at least one full read of the local weights).
    `step_s(n)`: one decode step with n sequences in the batch.
    """

    prefill_s: float
    prefill_alone_s: float
    step_s: Callable[[int], float]
    output_tokens: int


def latency(times: ReplicaTimes, *, concurrency: int, batching: str) -> Latency:
    """TTFT, TPOT and request time at `concurrency`, with the single-stream figures beside them."""
    here = _at(times, concurrency, batching)
    if concurrency == 1:
        return Latency(1, batching, here.ttft_s, here.tpot_s, here.request_s, single_stream=here)
    return Latency(
        concurrency,
        batching,
        here.ttft_s,
        here.tpot_s,
        here.request_s,
        single_stream=_at(times, 1, batching),
    )


def _at(times: ReplicaTimes, c: int, batching: str) -> Latency:
    if batching not in BATCHING:
        raise ValueError(f"batching must be one of {BATCHING}, not {batching!r}")
    later = max(times.output_tokens - 1, 0)
    step = times.step_s(c)
    if c == 1:
        ttft = times.prefill_alone_s
        tpot = step
    elif batching == "static":
        # the batch's prompts are prefilled together: the weights are read once, the FLOPs add up
        ttft = max(c * times.prefill_s, times.prefill_alone_s)
        tpot = step
    else:
        # share of the replica's time spent on the other requests' prefills (Little's law: while one
        # request lives, each of the other c - 1 clients sends one request)
        others = (c - 1) * times.prefill_s
        rho = min(others / (others + times.prefill_s + later * step), 0.95)
        wait = QUEUE_MODEL.value * rho * times.prefill_s / (1 - rho)
        ttft = times.prefill_alone_s + wait + step / 2  # joins at the end of the running step
        tpot = step + others / max(later, 1)
    return Latency(c, batching, ttft, tpot, ttft + later * tpot)


def meets(lat: Latency, max_latency_s: float | None, max_ttft_s: float | None) -> bool:
    """Whether `lat` meets both targets (an absent target is met)."""
    return (max_latency_s is None or lat.request_s <= max_latency_s) and (
        max_ttft_s is None or lat.ttft_s <= max_ttft_s
    )


def largest(ok: Callable[[int], bool], limit: int = 4096) -> int:
    """The largest n in [1, limit] with ok(n), for an `ok` that holds up to a point and fails beyond it
    (latency and memory both grow with concurrency); 0 when ok(1) fails. Bisection: ~12 calls."""
    if not ok(1):
        return 0
    lo, hi = 1, limit + 1  # ok(lo) holds; ok(hi) is taken to fail
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def latency_note(lat: Latency) -> str:
    """The assumption line that says how the latency figures were modelled."""
    how = (
        _(
            "continuous batching: a request joins the running batch at the next step; the other requests' "
            "prefills delay its first token (M/D/1 queue) and stall its decode once each"
        )
        if lat.batching == "continuous"
        else _(
            "static batching: the batch's requests arrive together, are prefilled together (first token "
            "after the whole batch's prefill) and decoded together; a request arriving mid-batch waits for "
            "the batch to end (not counted)"
        )
    )
    return _("latency at concurrency {count} per replica, {how}").format(count=lat.concurrency, how=how)
