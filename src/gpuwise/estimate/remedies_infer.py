"""The remedies of an inference workload: a smaller concurrency, lower-precision weights or KV cache, more
tensor parallelism; stacked when none fits alone.

Pure; run by estimate/remedies.py on its `Search`. More GPUs as replicas never lower the memory per GPU
(each replica holds the whole model), so "more GPUs" here is a wider tensor-parallel group.
"""

from __future__ import annotations

from gpuwise.estimate.remedies import TENSOR_PARALLEL, Search, Updates, bisect_values
from gpuwise.locale import _
from gpuwise.workload.spec import InferenceSpec

# Bytes per weight of each precision, to try only the lower ones (fp8 and int4 are the serving choices).
_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


def inference_remedies(s: Search) -> None:
    """Every single change that fits; when none does, the lightest stack of changes that does."""
    inf = s.w.inference
    assert inf is not None
    if inf.concurrency > 1:
        s.largest("inference.concurrency", range(1, inf.concurrency))
    transformer = s.w.arch.kind == "transformer"
    for updates in _precision_changes(inf, transformer):
        s.try_one(updates)
    if s.base.infeasible_reason is not None:  # e.g. tensor_parallel above the GPU count
        s.fewest_gpus({})
    wider = _wider_tp(s, inf, {})
    if any(r.fits for r in s.found):
        return
    acc: Updates = {}
    steps: list[Updates] = [*_precision_changes(inf, transformer), {"inference.concurrency": 1}]
    for step in steps:
        acc.update(step)
        if s.try_one(dict(acc)) or _wider_tp(s, inf, acc) is None:
            return
    if wider and (est := s.run(wider)) is not None:
        why = _(
            "more GPUs alone will not help: even the widest tensor-parallel group leaves too much on each GPU"
        )
        s.wont_help(wider, est, why)


def _precision_changes(inf: InferenceSpec, transformer: bool) -> list[Updates]:
    """Lower-precision weights, and KV cache where the model has one (a transformer)."""
    out: list[Updates] = []
    for p in ("fp8", "int4"):
        if _BYTES[p] < _BYTES[inf.weights_precision]:
            out.append({"inference.weights_precision": p})
    if transformer and _BYTES["fp8"] < _BYTES[inf.kv_dtype]:
        out.append({"inference.kv_precision": "fp8"})
    return out


def _tp_updates(s: Search, tp: int, acc: Updates) -> Updates:
    """`acc` with tensor parallelism `tp`, on as many of the current GPUs as hold whole groups (≥ tp)."""
    count = max(tp, s.count // tp * tp)
    updates: Updates = {**acc, "inference.tensor_parallel": tp}
    if count != s.count:
        updates["count"] = count
    return updates


def _wider_tp(s: Search, inf: InferenceSpec, acc: Updates) -> Updates | None:
    """Keep the smallest wider tensor-parallel group that fits with `acc`; None when one does, else the
    widest group's updates (for "will not help")."""
    tps = [tp for tp in TENSOR_PARALLEL if tp > inf.tensor_parallel]
    if not tps:
        return {}
    found = bisect_values(tps, lambda tp: s.run(_tp_updates(s, tp, acc)), s.ok, largest=False)
    if found is None:
        return _tp_updates(s, tps[-1], acc)
    tp, est = found
    s.keep(_tp_updates(s, tp, acc), est)
    return None
