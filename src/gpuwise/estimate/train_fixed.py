"""Time per optimizer step that does not scale with the tokens of a step: the optimizer update itself
(bandwidth-bound on the GPU) and, with CPU offload, the PCIe copies and the update on the CPU.

Pure; every constant is cited in constants.py or interconnect_constants.py and named in the notes.
"""

from __future__ import annotations

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate import interconnect_constants as NET  # noqa: N812 - the links table
from gpuwise.estimate.model_math import lora_params
from gpuwise.estimate.notes import Notes
from gpuwise.estimate.stacks import Stack
from gpuwise.locale import _
from gpuwise.workload.spec import TrainSpec, Workload


def optimizer_step_seconds(
    w: Workload, t: TrainSpec, gpu: GpuSpec, stack: Stack, *, dp: int, notes: Notes
) -> float:
    """The optimizer step on the GPU: bandwidth-bound over the local trainable parameters and their states.

    Zero for the tuned stacks, whose measured efficiencies already include it, and for a GPU without a
    published bandwidth.
    """
    m = w.arch
    bw_mem = gpu.memory_bandwidth_gbs.value
    if not (bw_mem and stack.counts_optimizer_step):
        return 0.0
    trainable_local = (m.n_params if t.method == "full" else lora_params(m, t.lora_rank, t.lora_targets)) / (
        t.tensor_parallel * t.pipeline_parallel
    )
    if t.zero_stage >= 1:
        trainable_local /= dp
    per_param = notes.const(K.OPTIMIZER_STEP_BYTES) * (
        0.5 if t.optimizer_kind in ("adamw8bit", "adafactor", "sgd") else 1.0
    )
    return trainable_local * per_param / (bw_mem * 1e9 * 0.8)


def offload_seconds(
    w: Workload, t: TrainSpec, stack: Stack, *, dp: int, accum: int, gpn: int, notes: Notes
) -> float:
    """Seconds per optimizer step that CPU offload adds: PCIe copies and the optimizer step on the CPU.

    "optimizer" (ZeRO-Offload): 16-bit gradients down every micro batch, updated 16-bit weights up once per
    step. "optimizer+params": also the weight shard up for the forward and the backward (and the recompute)
    of every micro batch. The CPU step streams ~32 B per offloaded parameter through host memory, whose
    bandwidth the node's ranks share; PyTorch's CPU AdamW (FSDP) is several times slower than DeepSpeed's.
    """
    m = w.arch
    shard = t.tensor_parallel * t.pipeline_parallel
    trainable = m.n_params if t.method == "full" else lora_params(m, t.lora_rank, t.lora_targets)
    local_trainable = trainable / shard / dp
    b = 2.0 if t.precision not in ("fp32", "tf32") else 4.0
    pcie = notes.const(NET.PCIE_HOST_GBS) * 1e9
    moved = local_trainable * b * (accum + 1)
    if t.offload == "optimizer+params":
        passes = 3 if t.activation_checkpointing == "full" else 2
        moved += m.n_params / shard / dp * b * passes * accum
    host = notes.const(NET.HOST_MEMORY_GBS) * 1e9 / max(gpn, 1)
    cpu_s = local_trainable * K.OPTIMIZER_STEP_BYTES.value / host
    if stack.name != "deepspeed":
        cpu_s *= notes.const(NET.TORCH_CPU_ADAM_SLOWDOWN)
    notes.add(
        _(
            "CPU offload: {gb} GB over PCIe per GPU per step ({pcie_s} s) and the optimizer step on the CPU "
            "({cpu_s} s, {adam}), not overlapped"
        ).format(
            gb=f"{moved / 1e9:.1f}",
            pcie_s=f"{moved / pcie:.1f}",
            cpu_s=f"{cpu_s:.1f}",
            adam=_("PyTorch's CPU AdamW") if stack.name != "deepspeed" else "DeepSpeedCPUAdam",
        )
    )
    return moved / pcie + cpu_s
