"""How big a workload's checkpoint is: the one home for it (plan stores and uploads it, `run` will sync it).

Pure; it reads the same tables the memory estimate uses (estimate/constants.py, memory_constants.py and
model_math.py), so the optimizer states, LoRA targets and dtypes of a checkpoint can never disagree with
those of the GPU memory breakdown. Must not import the CLI or the planner.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwise.estimate import constants as K  # noqa: N812 - the constants table, as in the estimator
from gpuwise.estimate import memory_constants as MEM  # noqa: N812 - the memory constants table
from gpuwise.estimate.model_math import lora_params
from gpuwise.locale import _
from gpuwise.workload.spec import Workload

ADAPTER_BYTES_PER_PARAM = 4.0 + 8.0  # fp32 adapter weights + AdamW's two fp32 moments, as PEFT saves them


@dataclass(frozen=True)
class CheckpointSize:
    bytes: float
    kept: int  # checkpoints a run keeps at once (the newest complete one and the one being written)
    description: str  # the assumption line, with the figures


def checkpoint_size(workload: Workload) -> CheckpointSize:
    """Bytes of one checkpoint: the served weights for inference; the adapters and their optimizer states
    for LoRA; weights, fp32 master copy and optimizer states for full training."""
    if workload.measured is not None:
        return CheckpointSize(0.0, 0, _("checkpoints of a measured task: not known, not costed"))
    m, t = workload.arch, workload.train
    params = m.n_params
    if t is None:
        assert workload.inference is not None
        precision = workload.inference.weights_precision
        per = MEM.INT4_BYTES_PER_PARAM.value if precision == "int4" else K.BYTES[precision]
        size = params * per
        return CheckpointSize(
            size, 1, _("storage holds the model weights once ({gb} GB)").format(gb=f"{size / 1e9:,.1f}")
        )
    if t.method in ("lora", "qlora") and m.hidden:
        adapters = lora_params(m, t.lora_rank, t.lora_targets)
        size = adapters * ADAPTER_BYTES_PER_PARAM
        return CheckpointSize(
            size,
            2,
            _(
                "checkpoint = LoRA adapters on {targets} linear layers, rank {rank} "
                "({params} M params × {bytes} bytes = {gb} GB); 2 kept"
            ).format(
                targets=t.lora_targets,
                rank=t.lora_rank,
                params=f"{adapters / 1e6:,.0f}",
                bytes=f"{ADAPTER_BYTES_PER_PARAM:g}",
                gb=f"{size / 1e9:,.2f}",
            ),
        )
    w = K.BYTES[t.precision]
    opt = MEM.OPTIMIZER_STATE_BYTES[t.optimizer_kind]
    if t.pure_low_precision:  # no master copy; optimizer states in the compute dtype
        per_param = w + opt * w / 4.0
    else:
        per_param = w + (0.0 if w >= MEM.MASTER_WEIGHT_BYTES else MEM.MASTER_WEIGHT_BYTES) + opt
    size = params * per_param
    return CheckpointSize(
        size,
        2,
        _(
            "checkpoint = weights + master copy + {optimizer} states ≈ {per_param} bytes/param "
            "= {gb} GB; 2 kept"
        ).format(optimizer=t.optimizer, per_param=f"{per_param:g}", gb=f"{size / 1e9:,.1f}"),
    )
