"""Can this GPU run the workload as written, and can these instances form a multi-node cluster?

**Number formats by GPU generation** (NVIDIA compute capability, from the CUDA C++ Programming Guide's
feature tables and NVIDIA's architecture whitepapers): bf16 tensor cores arrived with Ampere (8.0); fp8 with
Ada (8.9) and Hopper (9.0); FlashAttention-2 supports Ampere, Ada and Hopper only (github.com/Dao-AILab/
flash-attention README, "FlashAttention-2 currently supports: Ampere, Ada, or Hopper GPUs"). For GPUs
without a compute capability (AMD, Intel), the spec table's published dense peak for the dtype decides.

**The rule** (stated on every option it touches):

* bf16 *mixed-precision training* (fp32 master weights, ``pure_low_precision = false``) on a GPU without
  bf16 is costed as **fp16 mixed precision with dynamic loss scaling** — the standard pre-Ampere recipe
  (Micikevicius et al. 2018, "Mixed Precision Training"; torch.cuda.amp.GradScaler) — with that fallback
  stated. Pure bf16 training (no fp32 master copy) has no such fallback (fp16's range is too narrow to
  keep weights and optimizer states in it) and is rejected.
* bf16 *inference* weights on such a GPU are served as fp16 (vLLM casts bf16 checkpoints to fp16 on
  pre-Ampere GPUs), stated. Models trained in bf16 can overflow fp16 activations; the note says so.
* fp8 compute (training) or fp8 weights/KV (inference) on a GPU without fp8 are rejected: the fp8 recipes
  (Transformer Engine) need Ada or Hopper, and a 16-bit fallback is a different, slower workload.
* FlashAttention-2 is "asked for" when the workload file sets ``[train] attention = "flash"`` explicitly;
  then a pre-Ampere GPU is rejected. Left at its default, ``flash`` means any fused attention that keeps
  no s² matrix — PyTorch's scaled_dot_product_attention uses its memory-efficient kernel on older GPUs.

**Multi-node fabric.** A multi-node option is only built where the provider sells instances that share a
low-latency fabric (``FABRICS``); marketplace VMs rented one by one are single-node. Each multi-node option
names its interconnect.

Pure; standard library and gpuwise's catalog models only.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from gpuwise.locale import N_, _


@dataclass(frozen=True)
class DtypeNeeds:
    """What the workload asks of the GPU's number formats."""

    dtype: str  # compute dtype (training) or weights dtype (inference)
    kv_dtype: str | None = None  # inference only
    training: bool = True
    pure_low_precision: bool = False
    flash_attention_2: bool = False  # asked for explicitly


@dataclass(frozen=True)
class GpuFormats:
    """What a GPU supports; None where the spec table cannot tell."""

    name: str
    architecture: str
    compute_capability: float | None
    bf16: bool | None
    fp8: bool | None


@dataclass(frozen=True)
class Verdict:
    runs: bool
    fallback: str | None = None  # e.g. "fp16": the dtype the option is costed in instead
    note: str | None = None  # why rejected, or the stated fallback


OK = Verdict(runs=True)
_FA2_ASKED = N_('FlashAttention-2 (asked for by attention = "flash")')

_MP_PAPER = N_("fp16 mixed precision with dynamic loss scaling (Micikevicius et al. 2018)")


def gpu_formats(
    name: str,
    architecture: str,
    compute_capability: str | None,
    bf16_peak: float | None,
    fp8_peak: float | None,
) -> GpuFormats:
    cc: float | None
    try:
        cc = float(compute_capability) if compute_capability else None
    except ValueError:
        cc = None
    if cc is not None:
        return GpuFormats(name, architecture, cc, bf16=cc >= 8.0, fp8=cc >= 8.9)
    return GpuFormats(
        name,
        architecture,
        None,
        bf16=None if bf16_peak is None else True,
        fp8=None if fp8_peak is None else True,
    )


def verdict(needs: DtypeNeeds, gpu: GpuFormats | None) -> Verdict:
    """Whether `gpu` runs the workload's dtype, with a stated fp16 fallback where the rule allows one."""
    if gpu is None:
        return OK  # unknown GPU: the estimator reports it (no_estimate)
    where = (
        _("{gpu} ({arch}, compute capability {cc})").format(
            gpu=gpu.name, arch=gpu.architecture, cc=f"{gpu.compute_capability:g}"
        )
        if gpu.compute_capability is not None
        else f"{gpu.name} ({gpu.architecture})"
    )
    if needs.flash_attention_2 and gpu.compute_capability is not None and gpu.compute_capability < 8.0:
        return Verdict(
            False,
            note=_("{what} needs Ampere or newer; {where} is older").format(what=_(_FA2_ASKED), where=where),
        )
    dtypes = {needs.dtype} | ({needs.kv_dtype} if needs.kv_dtype else set())
    if "fp8" in dtypes and gpu.fp8 is False:
        return Verdict(
            False,
            note=_("fp8 needs Ada or Hopper (compute capability 8.9+); {where} has no fp8").format(
                where=where
            ),
        )
    if "bf16" in dtypes and gpu.bf16 is False:
        if needs.training and needs.pure_low_precision:
            return Verdict(
                False,
                note=_(
                    "pure bf16 training (no fp32 master weights) needs bf16, which {where} lacks; "
                    "fp16 cannot hold the weights and optimizer states safely"
                ).format(where=where),
            )
        if needs.training:
            return Verdict(
                True,
                fallback="fp16",
                note=_("{where} has no bf16: costed as {how} instead of bf16, at fp16 speed").format(
                    where=where, how=_(_MP_PAPER)
                ),
            )
        return Verdict(
            True,
            fallback="fp16",
            note=_(
                "{where} has no bf16: weights served as fp16 (as vLLM does on pre-Ampere GPUs); "
                "a model trained in bf16 can overflow fp16 activations"
            ).format(where=where),
        )
    return OK


# --------------------------------------------------------------------------- multi-node fabrics


@dataclass(frozen=True)
class Fabric:
    """A provider's cluster offering: which instance types share a fabric, and what it is."""

    provider: str
    instance_patterns: tuple[str, ...]  # shell-style, matched case-blind; empty: none
    interconnect: str
    source: str


# Providers whose catalog instances can be clustered over a shared fabric. Everyone else (marketplaces such
# as vast, primeintellect, shadeform, hyperbolic, and clouds whose cluster products are not the catalog's
# on-demand instances) is single-node: `NO_FABRIC_WHY`.
FABRICS: dict[str, Fabric] = {
    "aws": Fabric(
        "aws",
        ("p4d.*", "p4de.*", "p5.*", "p5e.*", "p5en.*", "p6-*", "p6e-*", "p3dn.*"),
        N_("EFA in a cluster placement group (400 Gbps on p4d, 3,200 Gbps on p5)"),
        "aws.amazon.com/hpc/efa; docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html (supported types)",
    ),
    "gcp": Fabric(
        "gcp",
        ("a2-*", "a3-*", "a4-*"),
        N_("compact placement; GPUDirect-TCPX/TCPXO (A3) or RDMA (A3 Ultra, A4), 100 Gbps Ethernet on A2"),
        "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth",
    ),
    "azure": Fabric(
        "azure",
        # an "r" in the size name marks RDMA (InfiniBand) capability in Azure's VM naming convention
        ("standard_nd[0-9]*r*",),
        N_("InfiniBand (200 Gb/s per GPU on ND A100 v4, 400 Gb/s per GPU on ND H100 v5)"),
        "learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated (ND-series pages); "
        "learn.microsoft.com/azure/virtual-machines/vm-naming-conventions",
    ),
    "nebius": Fabric(
        "nebius",
        ("*8gpu*",),
        N_("InfiniBand GPU cluster (8-GPU hosts)"),
        "docs.nebius.com/compute/clusters/gpu",
    ),
}
NO_FABRIC_WHY = {
    "lambda": (
        "Lambda's on-demand instances are single VMs; its multi-node product (1-Click Clusters, "
        "InfiniBand) is sold separately and is not in the catalog (lambda.ai/1-click-clusters)"
    ),
    "vast": "a marketplace of single hosts rented one by one: no shared fabric between them",
    "primeintellect": "a marketplace reselling single VMs of other clouds: no shared fabric between them",
    "shadeform": "a marketplace reselling single VMs of other clouds: no shared fabric between them",
    "hyperbolic": "a marketplace of single hosts: no shared fabric between them",
}
NO_FABRIC_DEFAULT = "no cluster (shared-fabric) offering of these instances is known to gpuwise"


def fabric_for(provider: str, instance_type: str) -> Fabric | None:
    """The fabric these instances share when rented as a cluster, or None (single-node only)."""
    found = FABRICS.get(provider)
    if found is None:
        return None
    name = instance_type.lower()
    return found if any(fnmatchcase(name, p) for p in found.instance_patterns) else None


def no_fabric_why(provider: str) -> str:
    return NO_FABRIC_WHY.get(provider, NO_FABRIC_DEFAULT)
