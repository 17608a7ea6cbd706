"""The remedies of a training workload: settings first, then methods, then GPUs, then stacked changes.

Pure; run by estimate/remedies.py on its `Search` (which estimates, filters and records).
"""

from __future__ import annotations

import math

from gpuwise.estimate import remedies_diffusion as diffusion
from gpuwise.estimate.models import Estimate
from gpuwise.estimate.remedies import COUNTS, SEQ_STEP, Search, Updates
from gpuwise.locale import _
from gpuwise.workload.spec import TrainSpec, Workload

_INTEGER_BASES = ("int8", "gptq-4bit", "awq-4bit")  # FSDP/ZeRO-3 cannot shard them (train_memory.py)
_FOUR_BIT = ("nf4", "gptq-4bit", "awq-4bit")


def train_remedies(s: Search) -> None:
    """Every single change that fits; when none does, the lightest stack of changes that does."""
    t = s.w.train
    assert t is not None
    if t.micro_batch > 1:
        s.largest("train.micro_batch", range(1, t.micro_batch))
    if s.w.arch.kind == "transformer" and t.seq_len:
        s.largest("train.seq_len", _seq_values(t))
    for updates in _method_changes(s.w, t, s.count):
        s.try_one(updates)
    if diffusion.is_diffusion(s.w):
        diffusion.fewest_blocks_to_swap(s)
    _more_gpus(s, t)
    # A shorter seq_len truncates the samples: when it is all that fits alone, the stack that keeps them
    # whole is searched too (a 24 GB LoRA was told only "seq_len 256", never "checkpointing + micro_batch 1").
    if not any(r.fits and "train.seq_len" not in r.updates for r in s.found):
        _stacked(s, t)
    # Only more GPUs fitting is no answer for the GPUs asked: a 70B full fine-tune on one card was offered
    # nothing but "FSDP on 128 GPUs", never the stack that fits the one card.
    if not any(r.fits and r.count == s.count and "train.seq_len" not in r.updates for r in s.found):
        _stacked_here(s, t)


def _seq_values(t: TrainSpec) -> list[int]:
    """Shorter sequence lengths to try: multiples of SEQ_STEP below seq_len, never below avg_tokens."""
    assert t.seq_len is not None
    low = max(1, math.ceil(t.avg_tokens or 1))
    step = SEQ_STEP if t.seq_len > 2 * SEQ_STEP else 1
    values = {v for v in range(step, t.seq_len, step) if v >= low}
    if low < t.seq_len:
        values.add(low)
    return sorted(values)


def _shard(t: TrainSpec, updates: Updates) -> Updates:
    """The update that shards weights too (ZeRO-3 for a DeepSpeed job, FSDP otherwise); {} when sharded."""
    sharding = str(updates.get("train.sharding", t.sharding))
    if sharding in ("zero3", "fsdp"):
        return {}
    deepspeed = sharding in ("zero1", "zero2") or t.framework == "deepspeed"
    return {"train.sharding": "zero3" if deepspeed else "fsdp"}


def _method_changes(w: Workload, t: TrainSpec, count: int) -> list[Updates]:
    """Each change of method alone, lightest first; the search keeps those that fit."""
    out: list[Updates] = []
    if t.activation_checkpointing == "none":
        out.append({"train.activation_checkpointing": "selective"})
    if t.activation_checkpointing != "full":
        out.append({"train.activation_checkpointing": "full"})
    transformer = w.arch.kind == "transformer"
    if transformer and w.arch.vocab and not t.fused_kernels:
        out.append({"train.fused_kernels": True})
    if t.optimizer_kind == "adamw":
        out.append({"train.optimizer": "adamw8bit"})
    out.extend(_base_changes(w, t))
    if diffusion.is_diffusion(w):  # caching and a lighter base; CPU offload is not modelled for it
        out.extend(diffusion.single_changes(w, t))
    if count > 1 and diffusion.can_shard(w, t):
        out.append(_shard(t, {}))
    if not diffusion.is_diffusion(w):
        out.extend(_offload_changes(t))
    return [u for u in out if u]


def _base_changes(w: Workload, t: TrainSpec) -> list[Updates]:
    """A lighter frozen base: LoRA/QLoRA for a full fine-tune, NF4 for a 16-bit or int8 LoRA base."""
    if w.arch.kind != "transformer":
        return []
    if t.method == "full" and w.task == "finetune":
        return [{"train.method": "lora"}, {"train.method": "qlora"}]
    if t.method == "lora" and t.base_dtype not in _FOUR_BIT:
        return [{"train.base_precision": "nf4"}]
    return []


def _offload_changes(t: TrainSpec) -> list[Updates]:
    """CPU offload: of the optimizer (ZeRO-Offload needs a ZeRO stage, also on one GPU), and of the
    parameters too (ZeRO-3)."""
    if t.offload == "optimizer+params":
        return []
    out: list[Updates] = []
    if t.offload == "none":
        out.append(
            {"train.offload": "optimizer"}
            if t.zero_stage
            else {"train.sharding": "zero2", "train.offload": "optimizer"}
        )
    out.append(
        {"train.offload": "optimizer+params"}
        if t.zero_stage >= 3
        else {"train.sharding": "zero3", "train.offload": "optimizer+params"}
    )
    return out


def _more_gpus(s: Search, t: TrainSpec) -> None:
    """The fewest GPUs as set, and with weights sharded; say when more GPUs will not help."""
    plain = s.fewest_gpus({})
    if not diffusion.can_shard(s.w, t):
        if isinstance(plain, Estimate):
            why = "more GPUs alone will not help: data parallelism gives every GPU the whole frozen base"
            s.wont_help({"count": plain.count}, plain, why)
        return
    shard = _shard(t, {})
    sharded = s.fewest_gpus(shard) if shard else plain
    if isinstance(sharded, Estimate):
        why = _("more GPUs alone will not help, even with ZeRO-3/FSDP")
        if t.method != "full" and t.base_dtype in _INTEGER_BASES:
            why = _(
                "more GPUs alone will not help: every GPU must hold the whole {dtype} frozen base "
                "(integer-stored, FSDP/ZeRO-3 cannot shard it)"
            ).format(dtype=t.base_dtype)
        elif t.zero_stage >= 3:
            why = _(
                "more GPUs alone will not help: what ZeRO-3/FSDP cannot shard (activations, gathered layers)"
            )
        s.wont_help({**shard, "count": sharded.count}, sharded, why)
    elif isinstance(plain, Estimate):
        held = (
            _("the whole frozen base")
            if t.method != "full"
            else _("the whole model and its optimizer states")
        )
        why = _(
            "more GPUs alone will not help: data parallelism gives every GPU {held} (shard it instead)"
        ).format(held=held)
        if t.zero_stage:
            why = _("more GPUs alone will not help: what this ZeRO stage leaves whole stays on every GPU")
        s.wont_help({"count": plain.count}, plain, why)


def _stack_steps(w: Workload, t: TrainSpec) -> list[Updates]:
    """Changes to stack, lightest first, when none fits alone."""
    steps: list[Updates] = []
    if t.activation_checkpointing != "full":
        steps.append({"train.activation_checkpointing": "full"})
    if t.micro_batch > 1:
        steps.append({"train.micro_batch": 1})
    if w.arch.kind == "transformer" and w.arch.vocab and not t.fused_kernels:
        steps.append({"train.fused_kernels": True})
    if t.optimizer_kind == "adamw":
        steps.append({"train.optimizer": "adamw8bit"})
    steps.extend(_base_changes(w, t)[-1:])  # the lightest base only
    if diffusion.is_diffusion(w):
        steps.extend(diffusion.stack_steps(w, t))
        if diffusion.can_shard(w, t):
            steps.append({"train.sharding": _shard(t, {}).get("train.sharding", t.sharding)})
        return steps
    if t.offload != "optimizer+params":
        steps.append({"train.sharding": _shard(t, {}).get("train.sharding", t.sharding)})
        steps.append({"train.offload": "optimizer+params"})
    return steps


def _stacked(s: Search, t: TrainSpec) -> None:
    """Stack changes lightest first (skipping one the workload cannot take or that frees no memory here),
    each time on the current GPUs and then on the fewest that fit; then tensor parallelism within a node,
    then shorter sequences."""
    acc: Updates = {}
    prev = s.base
    for step in _stack_steps(s.w, t):
        trial = {**acc, **step}
        est = s.run(trial)
        if est is None:
            continue
        # Sharding frees memory only on more GPUs: the count search below judges it.
        if "train.sharding" not in step and 0 < prev.memory.total <= est.memory.total:
            continue
        acc, prev = trial, est
        if s.try_one(dict(acc)) or s.fewest_gpus({**acc, **_shard(t, acc)}) is True:
            _widen_micro_batch(s, t)
            return
    acc.update(_shard(t, acc))
    if diffusion.is_diffusion(s.w):  # then block swapping, then smaller images
        extra = {k: v for k, v in acc.items() if k != "train.sharding"}
        if not diffusion.fewest_blocks_to_swap(s, extra):
            values = diffusion.swap_values(s.w, t)
            most = {"diffusion.blocks_to_swap": values[-1]} if values else {}
            diffusion.largest_resolution(s, {**extra, **most})
        return
    if s.w.arch.kind != "transformer":
        return
    for tp in (2, 4, 8):
        counts = [c for c in COUNTS if c % tp == 0 and c > s.count]
        if s.fewest_gpus({**acc, "train.tensor_parallel": tp}, counts) is True:
            return
    if t.seq_len:
        s.largest("train.seq_len", _seq_values(t), acc)


def _stacked_here(s: Search, t: TrainSpec) -> None:
    """The lightest stack on the GPUs as asked, when the stack above reached for more GPUs: a LoRA that
    overflows one 24 GB card was offered FSDP on 2 GPUs, never checkpointing + micro_batch 1 on the one."""
    acc: Updates = {}
    for step in _stack_steps(s.w, t):
        if "train.sharding" in step and s.count == 1:
            continue  # sharding frees memory only across GPUs
        acc = {**acc, **step}
        if s.try_one(dict(acc)):
            _widen_micro_batch(s, t)
            return


def _widen_micro_batch(s: Search, t: TrainSpec) -> None:
    """A stack that fits with micro_batch 1 may fit a larger one: keep the largest instead."""
    last = s.found[-1]
    if last.updates.get("train.micro_batch") != 1:
        return
    rest = {k: v for k, v in last.updates.items() if k != "train.micro_batch"}
    s.largest("train.micro_batch", range(1, t.micro_batch), rest)
    if s.found[-1] is not last:
        s.found.remove(last)
