"""Communication time per optimizer step: tensor-parallel activation all-reduces (never hidden) and
data-parallel gradient traffic (plus FSDP/ZeRO-3 weight all-gathers), over NVLink/PCIe within a node and
the network between nodes.

Pure; link figures come from hardware.py and are named in the notes.
"""

from __future__ import annotations

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.hardware import inter_node_bytes_per_s, intra_node_bytes_per_s
from gpuwise.estimate.model_math import lora_params
from gpuwise.estimate.notes import Notes
from gpuwise.locale import _
from gpuwise.workload.spec import TrainSpec, Workload


def tensor_parallel_seconds(
    w: Workload,
    t: TrainSpec,
    gpu: GpuSpec,
    *,
    seq: float,
    accum: int,
    gpn: int,
    notes: Notes,
    network_gbps: float | None,
) -> float:
    """Tensor-parallel activation all-reduces: 4 per layer per micro batch (fwd 2, bwd 2), not overlapped."""
    m = w.arch
    tp, pp = t.tensor_parallel, t.pipeline_parallel
    if not (tp > 1 and m.kind == "transformer"):
        return 0.0
    link = (
        intra_node_bytes_per_s(gpu, notes)
        if tp <= gpn
        else inter_node_bytes_per_s(gpu, gpn, notes, network_gbps) / gpn
    )
    act_bytes = t.micro_batch * seq * (m.hidden or 0) * 2
    tp_s = 4 * (m.layers or 0) / pp * accum * 2 * (tp - 1) / tp * act_bytes / link
    if tp > gpn:
        notes.add(_("tensor parallelism spans nodes: activations all-reduced over the network"))
    return tp_s


def data_parallel_seconds(
    w: Workload,
    t: TrainSpec,
    gpu: GpuSpec,
    *,
    dp: int,
    nodes: int,
    gpn: int,
    accum: int,
    notes: Notes,
    network_gbps: float | None,
) -> float:
    """Data-parallel gradient (and FSDP weight) traffic per step, before any overlap with compute."""
    if dp <= 1:
        return 0.0
    m = w.arch
    tp, pp = t.tensor_parallel, t.pipeline_parallel
    trainable = m.n_params if t.method == "full" else lora_params(m, t.lora_rank, t.lora_targets)
    grad_b = 4.0 if t.precision in ("fp32", "tf32") else 2.0
    volume = trainable / (tp * pp) * grad_b
    dp_bytes = 2 * (dp - 1) / dp * volume  # ring all-reduce of the gradients
    if t.zero_stage >= 3:
        # Sharded weights (frozen ones too) are all-gathered for the forward and the backward of every
        # micro batch; gradients are reduce-scattered once per step.
        weight_b = MEM.BASE_BYTES_PER_PARAM[t.base_dtype] if t.quantized_base else min(grad_b, 2.0)
        if t.precision in ("fp32", "tf32"):
            weight_b = 4.0
        gathered = m.n_params / (tp * pp) * weight_b * 2 * accum
        dp_bytes = (dp - 1) / dp * (gathered + volume)
        notes.add(
            _(
                "FSDP/ZeRO-3: all weights (frozen ones too) all-gathered for forward and backward of each "
                "micro batch, gradients reduce-scattered once per step"
            )
        )
    bw = intra_node_bytes_per_s(gpu, notes)
    if nodes > 1:
        bw = min(bw, inter_node_bytes_per_s(gpu, gpn, notes, network_gbps))
    return dp_bytes / bw
