"""End-to-end training steps (a small GPT: tokens/s and MFU; a ResNet-50-layout CNN: images/s), in fp32 and
AMP, on synthetic data; and LLM decode tokens/s with a KV cache (the memory-bound serving case).

AMP is torch.autocast to bf16 (fp16 on a GPU older than Ampere). A CPU without bf16 arithmetic (AVX-512
BF16 or AMX) runs the AMP tasks in fp32 and says so: autocast there times conversions, not training, and one
step took over 10 s at the quick sizes. MFU = tokens/s × training FLOPs per token / the dense peak of the
dtype the matmuls ran in.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from gpuwise.bench.context import Context
from gpuwise.bench.results import TaskResult
from gpuwise.bench.timing import time_calls


def amp_dtype(ctx: Context) -> str | None:
    """The dtype autocast runs the matmuls in on this device, or None where AMP would not help."""
    if ctx.cuda:
        return "bf16" if ctx.torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if ctx.cpu.has_bf16 else None


def _precision(ctx: Context, amp: bool) -> tuple[str | None, str]:
    """(autocast dtype or None, the words for the results)."""
    if not amp:
        return None, "fp32"
    dtype = amp_dtype(ctx)
    if dtype is None:
        return None, "fp32 (this CPU has no bf16 arithmetic: AMP would time conversions)"
    return dtype, f"AMP {dtype}"


def _autocast(ctx: Context, dtype: str | None) -> Any:
    if dtype is None:
        return contextlib.nullcontext()
    torch = ctx.torch
    return torch.autocast(device_type=ctx.device, dtype=torch.bfloat16 if dtype == "bf16" else torch.float16)


def _train_step(ctx: Context, model: Any, inputs: Any, targets: Any, amp: str | None) -> Any:
    torch = ctx.torch
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        with _autocast(ctx, amp):
            out = model(inputs)
            loss = torch.nn.functional.cross_entropy(
                out.reshape(-1, out.shape[-1]).float(), targets.reshape(-1)
            )
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    s = ctx.sizes
    return time_calls(step, warmup=s.warmup, repetitions=s.repetitions, max_seconds=s.cap_s, sync=ctx.sync)


def train_step_transformer(ctx: Context, amp: bool) -> TaskResult:
    from gpuwise.bench import nets

    torch, started, g = ctx.torch, time.perf_counter(), ctx.sizes.gpt
    task = "train_step_transformer" + ("" if amp else "_fp32")
    torch.manual_seed(0)
    model = nets.Gpt(g.vocab, g.d_model, g.layers, g.heads, g.seq).to(ctx.device)
    tokens = torch.randint(0, g.vocab, (g.batch, g.seq + 1), device=ctx.device)
    autocast, precision = _precision(ctx, amp)
    timing = _train_step(ctx, model, tokens[:, :-1], tokens[:, 1:], autocast)
    tokens_per_s = g.batch * g.seq / timing.median_s
    flops_per_token = nets.gpt_train_flops_per_token(model, g.layers, g.d_model, g.seq)
    peak_tflops, source = ctx.peak_tflops(autocast or "fp32")
    mfu = tokens_per_s * flops_per_token / (peak_tflops * 1e12) if peak_tflops else None
    return TaskResult(
        task=task,
        unit="tokens/s",
        value=tokens_per_s,
        peak=peak_tflops * 1e12 / flops_per_token if peak_tflops else None,
        peak_source=f"tokens/s at the dense peak: {source}",
        seconds=time.perf_counter() - started,
        timing=timing,
        params={
            "model": f"GPT, {g.layers} layers, d_model {g.d_model}, {g.heads} heads, vocab {g.vocab}",
            "parameters": sum(p.numel() for p in model.parameters()),
            "batch": g.batch,
            "seq": g.seq,
            "precision": precision,
            "optimizer": "AdamW",
            "flops_per_token": flops_per_token,
            "flops_rule": "6N + 12·L·d·T (PaLM appendix B)",
        },
        extra={"mfu": mfu},
    )


def train_step_cnn(ctx: Context, amp: bool) -> TaskResult:
    from gpuwise.bench import nets

    torch, started, s = ctx.torch, time.perf_counter(), ctx.sizes
    task = "train_step_cnn" + ("" if amp else "_fp32")
    torch.manual_seed(0)
    model = nets.resnet50_layout(s.cnn_width_div).to(ctx.device)
    if ctx.cuda:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload,unused-ignore]
    images = torch.randn(s.cnn_batch, 3, s.cnn_image, s.cnn_image, device=ctx.device)
    labels = torch.randint(0, 1000, (s.cnn_batch,), device=ctx.device)
    autocast, precision = _precision(ctx, amp)
    timing = _train_step(ctx, model, images, labels, autocast)
    name = (
        "ResNet-50"
        if s.cnn_width_div == 1
        else f"ResNet-50 layout at 1/{s.cnn_width_div} width (not ResNet-50)"
    )
    return TaskResult(
        task=task,
        unit="images/s",
        value=s.cnn_batch / timing.median_s,
        peak_source="no ceiling in images/s",
        seconds=time.perf_counter() - started,
        timing=timing,
        params={
            "model": name,
            "parameters": sum(p.numel() for p in model.parameters()),
            "batch": s.cnn_batch,
            "image": f"3×{s.cnn_image}×{s.cnn_image}",
            "precision": precision,
            "optimizer": "AdamW",
        },
    )


def llm_decode(ctx: Context) -> TaskResult:
    """Tokens/s generating one token per sequence per step over a filled KV cache. Every step reads all
    weights once and the whole cache: the ceiling is memory bandwidth / bytes per step × batch."""
    from gpuwise.bench import decode, nets

    torch, started, s, g = ctx.torch, time.perf_counter(), ctx.sizes, ctx.sizes.gpt
    dtype = torch.bfloat16 if ctx.cuda else torch.float32  # a CPU without bf16 units would time conversions
    context = s.decode_context
    torch.manual_seed(0)
    model = nets.Gpt(g.vocab, g.d_model, g.layers, g.heads, context + s.decode_steps).to(ctx.device, dtype)
    model.eval()
    run = decode.Decoder(torch, model, s.decode_batch, context, s.decode_steps)
    timing = time_calls(run.generate, warmup=1, repetitions=s.repetitions, max_seconds=s.cap_s, sync=ctx.sync)
    tokens_per_s = s.decode_batch * s.decode_steps / timing.median_s
    bytes_per_step = run.bytes_per_step()
    bw, source = ctx.peak_bandwidth_gbs()
    return TaskResult(
        task="llm_decode",
        unit="tokens/s",
        value=tokens_per_s,
        peak=bw * 1e9 / bytes_per_step * s.decode_batch if bw else None,
        peak_source=f"tokens/s if every step streamed its bytes at the memory ceiling: {source}",
        seconds=time.perf_counter() - started,
        timing=timing,
        params={
            "model": f"GPT, {g.layers} layers, d_model {g.d_model}, vocab {g.vocab}",
            "dtype": str(dtype).removeprefix("torch."),
            "batch": s.decode_batch,
            "context": context,
            "new_tokens": s.decode_steps,
            "bytes_per_step": bytes_per_step,
        },
    )
