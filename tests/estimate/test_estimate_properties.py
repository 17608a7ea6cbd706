"""Invariants of the estimator, checked with hypothesis over realistic ranges."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.estimate import estimate
from gpuwise.workload import Workload, parse_workload

H100 = resolve_gpu("H100")
MODELS = st.sampled_from(["gpt2", "llama-3.2-1b", "llama-3-8b", "mistral-7b", "qwen2.5-14b", "gemma-2-9b"])
METHODS = st.sampled_from(["full", "lora", "qlora"])
CKPT = st.sampled_from(["none", "selective", "full"])


def work(model: str, **train: Any) -> Workload:
    t: dict[str, Any] = {
        "method": "full",
        "precision": "bf16",
        "tokens": 1e9,
        "seq_len": 2048,
        "micro_batch": 2,
        "framework": "tuned",  # equal settings: the stack is one of them
    }
    t.update(train)
    return parse_workload({"task": "train", "model": {"preset": model}, "train": t}, "p.toml")


def mem(w: Workload, count: int = 1) -> float:
    return estimate(w, H100, count).memory.total


@settings(max_examples=40, deadline=None)
@given(
    model=MODELS, method=METHODS, ckpt=CKPT, batch=st.integers(1, 31), seq=st.sampled_from([256, 1024, 4096])
)
def test_memory_grows_with_batch_and_sequence(
    model: str, method: str, ckpt: str, batch: int, seq: int
) -> None:
    base = {"method": method, "activation_checkpointing": ckpt}
    assert mem(work(model, micro_batch=batch + 1, seq_len=seq, **base)) > mem(
        work(model, micro_batch=batch, seq_len=seq, **base)
    )
    assert mem(work(model, micro_batch=batch, seq_len=seq * 2, **base)) > mem(
        work(model, micro_batch=batch, seq_len=seq, **base)
    )


@settings(max_examples=30, deadline=None)
@given(method=METHODS, layers=st.integers(2, 60), hidden=st.sampled_from([1024, 2048, 4096]))
def test_memory_grows_with_parameters(method: str, layers: int, hidden: int) -> None:
    def custom(n_layers: int) -> Workload:
        params = 12 * n_layers * hidden**2 + 32000 * hidden
        model = {"params": float(params), "layers": n_layers, "hidden": hidden, "heads": hidden // 128}
        train = {"method": method, "precision": "bf16", "tokens": 1e9, "seq_len": 1024, "micro_batch": 1}
        return parse_workload({"task": "train", "model": model, "train": train}, "c.toml")

    assert mem(custom(layers + 1)) > mem(custom(layers))


@settings(max_examples=30, deadline=None)
@given(model=MODELS, sharding=st.sampled_from(["zero1", "zero2", "zero3", "fsdp"]), k=st.integers(0, 3))
def test_memory_shrinks_with_sharding_degree(model: str, sharding: str, k: int) -> None:
    w = work(model, sharding=sharding)
    small, large = 2**k, 2 ** (k + 1)
    m_small, m_large = estimate(w, H100, small).memory, estimate(w, H100, large).memory
    states = lambda m: m.weights + m.gradients + m.optimizer  # noqa: E731 - tiny local helper
    assert states(m_large) < states(m_small)


@settings(max_examples=30, deadline=None)
@given(model=MODELS, method=METHODS, count=st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
def test_time_falls_with_gpu_count_but_not_linearly(model: str, method: str, count: int) -> None:
    w = work(model, method=method, sharding="fsdp" if method == "full" else "none", global_batch=256)
    t1 = estimate(w, H100, count)
    t2 = estimate(w, H100, count * 2)
    assert t2.hours < t1.hours
    assert t2.hours > t1.hours / 2  # never perfectly linear: communication and smaller per-GPU work


@settings(max_examples=30, deadline=None)
@given(model=MODELS, batch=st.integers(1, 16), ckpt=CKPT)
def test_lora_needs_less_memory_than_full_finetuning(model: str, batch: int, ckpt: str) -> None:
    full = mem(work(model, micro_batch=batch, activation_checkpointing=ckpt))
    lora = mem(work(model, method="lora", micro_batch=batch, activation_checkpointing=ckpt))
    qlora = mem(work(model, method="qlora", micro_batch=batch, activation_checkpointing=ckpt))
    assert qlora < lora < full


@settings(max_examples=20, deadline=None)
@given(model=MODELS)
def test_checkpointing_saves_activation_memory(model: str) -> None:
    a = {
        c: estimate(work(model, activation_checkpointing=c, attention="eager"), H100).memory.activations
        for c in ("none", "selective", "full")
    }
    assert a["full"] < a["selective"] < a["none"]
