"""How fast bytes move between GPUs, nodes and the host, each figure with its source: link efficiency,
PCIe, the per-GPU network table, and the CPU-offload path (host memory, CPU Adam).

An estimate lists `Constant.describe()` of every constant it used in its `assumptions`.
Pure data: must not import anything but the standard library and `constants.Constant`.
"""

from __future__ import annotations

from gpuwise.estimate.constants import Constant
from gpuwise.locale import N_

# --- communication -----------------------------------------------------------------------------
LINK_EFFICIENCY = Constant(
    "link_efficiency",
    0.75,
    N_("of link peak"),
    N_("nccl-tests all-reduce bus bandwidth: ~350-370 GB/s of 450 GB/s NVLink 4; ~75% on PCIe and RoCE/IB"),
)
COMM_OVERLAP = Constant(
    "comm_overlap",
    0.7,
    N_("of gradient communication hidden behind backward"),
    N_("PyTorch DDP/FSDP bucketed overlap; Megatron overlap_grad_reduce (partial: last buckets are exposed)"),
)
PCIE_GBS_PER_DIRECTION = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}
PCIE_SOURCE = Constant(
    "pcie_x16_gbs", 32, N_("GB/s per direction (gen 4)"), N_("PCI-SIG: x16 gen3 16, gen4 32, gen5 64 GB/s")
)
# Inter-node network per GPU: HPC-class GPUs in cloud clusters come with one 400 Gb/s (H100/H200/B200/MI300X)
# or 200 Gb/s (A100) InfiniBand/EFA link per GPU; everything else gets INTERNODE_CONSERVATIVE_GBPS per node.
INTERNODE_GBPS_PER_GPU = {
    "H100": 400.0,
    "H200": 400.0,
    "B200": 400.0,
    "GH200": 400.0,
    "A100-80GB": 200.0,
    "A100": 200.0,
    "MI300X": 400.0,  # Azure ND MI300X v5: InfiniBand "8x400 Gigabit NDR" (azure-docs nd-mi300x-v5-series)
}
INTERNODE_SOURCE = Constant(
    "internode_network",
    400,
    N_("Gb/s per GPU (H100/H200/B200/MI300X; A100 200)"),
    N_(
        "AWS p5/p4d EFA, Azure ND H100 v5 and ND MI300X v5, GCP A3 Mega: 8×400 Gb/s (H100, MI300X) and "
        "8×200 Gb/s (A100) per node; other GPUs: the conservative default below"
    ),
)
GPUS_PER_NODE = 8

# --- inter-node network ---------------------------------------------------------------------------------
INTERNODE_CONSERVATIVE_GBPS = Constant(
    "internode_default_gbps",
    25,
    N_("Gb/s per node"),
    N_(
        "conservative default where the instance's network is unknown: AWS g5/g4dn/g6 and most GPU VMs "
        "outside HPC families list 25 Gigabit (vantage instance table); pass --network-gbps for yours"
    ),
)

# --- CPU offload ([train] offload) ---------------------------------------------------------------------
# Host↔GPU copies over PCIe, not overlapped with compute (FSDP CPU offload copies synchronously; DeepSpeed
# overlaps part of it, which the range covers). PCIe 3.0 ×16 is 15.75 GB/s and 4.0 ×16 31.5 GB/s per
# direction in theory; pinned copies reach ~12 and ~24 GB/s (CUDA bandwidthTest figures users post). The
# conservative figure is used for every card: cards share the host's root complex and memory.
PCIE_HOST_GBS = Constant(
    "pcie_host_gbs",
    12,
    N_("GB/s per GPU, each direction"),
    N_(
        "PCIe 3.0 ×16 pinned host↔device copies (~12 of 15.75 GB/s theoretical; PCIe 4.0 reaches ~24): "
        "the conservative figure, as cards share the host"
    ),
)
# The optimizer step on the CPU streams every offloaded parameter's fp32 master, gradient and Adam states
# through host memory (~32 B per parameter, as OPTIMIZER_STEP_BYTES on the GPU): host memory bandwidth per
# node, shared by its ranks.
HOST_MEMORY_GBS = Constant(
    "host_memory_gbs",
    100,
    N_("GB/s per node"),
    N_(
        "sustained host DRAM bandwidth of a 2-socket GPU server (8 DDR4-3200 channels per socket = 205 GB/s "
        "peak per socket; ~100 GB/s reached by a vectorised streaming kernel over both): an assumption, not "
        "measured here"
    ),
)
# DeepSpeed tutorial 'ZeRO-Offload': "DeepSpeedCPUAdam is 5X–7X faster than the standard PyTorch
# implementation". FSDP's CPU offload runs torch.optim.AdamW on the CPU: 6× the DeepSpeedCPUAdam time.
TORCH_CPU_ADAM_SLOWDOWN = Constant(
    "torch_cpu_adam_slowdown",
    6,
    N_("× DeepSpeedCPUAdam time"),
    N_(
        "deepspeed.ai/tutorials/zero-offload: DeepSpeedCPUAdam is 5-7× faster than PyTorch's CPU Adam "
        "(ZeRO-Offload, Ren et al. 2021, §5); FSDP CPU offload uses PyTorch's"
    ),
)
