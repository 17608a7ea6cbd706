"""What a GPU configuration offers the estimator: dense peak FLOP/s per dtype, memory bandwidth, the
links to the other GPUs of its node and to other nodes, and the sustained share of peak it reaches.

Pure: reads the GPU's datasheet figures (`GpuSpec`), the constants tables and an optional calibration;
every figure it uses or falls back on is named in the notes.
"""

from __future__ import annotations

from gpuwise.catalog.models import GpuSpec
from gpuwise.estimate import constants as K  # noqa: N812 - K is the constants table, read everywhere
from gpuwise.estimate import interconnect_constants as NET  # noqa: N812 - the links table
from gpuwise.estimate.calibration import Calibration
from gpuwise.estimate.notes import Notes
from gpuwise.locale import _


def peak_flops(gpu: GpuSpec, dtype: str, notes: Notes) -> tuple[float | None, str]:
    """Dense tensor peak FLOP/s for the compute dtype, with honest fallbacks. Returns (peak, dtype used)."""
    order = {
        "bf16": ["bf16", "fp16"],
        "fp16": ["fp16", "bf16"],
        "fp8": ["fp8"],
        "int8": ["int8", "fp8"],
        "tf32": ["tf32", "fp32"],
        "fp32": ["fp32"],
        "int4": ["fp16", "bf16"],  # weight-only int4: the GEMMs run in 16-bit
    }[dtype]
    for i, d in enumerate(order):
        value = gpu.peak_tflops(d)
        if value:
            if i > 0:
                notes.add(
                    _("{gpu} publishes no dense {dtype} peak: using its {other} peak").format(
                        gpu=gpu.name, dtype=dtype.upper(), other=d.upper()
                    )
                )
            else:
                src = gpu.tflops[d].source
                notes.add(
                    _("{gpu} dense {dtype} peak {value} TFLOPS ({source})").format(
                        gpu=gpu.name, dtype=d.upper(), value=f"{value:g}", source=src
                    )
                )
            return value * 1e12, d
    return None, dtype


def bandwidth(gpu: GpuSpec, notes: Notes) -> float | None:
    """Datasheet memory bandwidth in bytes/s, or None where the GPU publishes none."""
    value = gpu.memory_bandwidth_gbs.value
    if value:
        notes.add(
            _("{gpu} memory bandwidth {value} GB/s ({source})").format(
                gpu=gpu.name, value=f"{value:g}", source=gpu.memory_bandwidth_gbs.source
            )
        )
        return value * 1e9
    return None


def intra_node_bytes_per_s(gpu: GpuSpec, notes: Notes) -> float:
    """Per-GPU, per-direction bandwidth to the other GPUs of its node."""
    eff = notes.const(NET.LINK_EFFICIENCY)
    nvlink = gpu.nvlink_bidir_gbs.value
    if nvlink and gpu.form_factor.upper().startswith(("SXM", "OAM", "HGX")):
        link = "NVLink" if gpu.vendor == "NVIDIA" else "Infinity Fabric"  # AMD's GPU-to-GPU links (OAM)
        notes.add(
            _("intra-node: {link} {value} GB/s per direction per GPU ({source})").format(
                link=link, value=f"{nvlink / 2:g}", source=gpu.nvlink_bidir_gbs.source
            )
        )
        return nvlink / 2 * 1e9 * eff
    gen = gpu.pcie_gen or 4
    notes.const(NET.PCIE_SOURCE)
    pcie = NET.PCIE_GBS_PER_DIRECTION.get(gen, 32.0)
    notes.add(
        _("intra-node: PCIe gen {gen} x16, {value} GB/s per direction (no NVLink switch assumed)").format(
            gen=gen, value=f"{pcie:g}"
        )
    )
    return pcie * 1e9 * eff


def inter_node_bytes_per_s(
    gpu: GpuSpec, gpus_per_node: int, notes: Notes, network_gbps: float | None = None
) -> float:
    """Network bandwidth of one node (all NICs together), per direction."""
    eff = NET.LINK_EFFICIENCY.value
    if network_gbps is not None:
        notes.add(
            _("inter-node: {value} Gb/s per node (given: --network-gbps or the instance's network)").format(
                value=f"{network_gbps:g}"
            )
        )
        return network_gbps / 8 * 1e9 * eff
    per_gpu = NET.INTERNODE_GBPS_PER_GPU.get(gpu.name)
    notes.const(NET.INTERNODE_SOURCE)
    if per_gpu is not None:
        notes.add(
            _("inter-node: {count}×{value} Gb/s InfiniBand/EFA per node assumed for {gpu}").format(
                count=gpus_per_node, value=f"{per_gpu:g}", gpu=gpu.name
            )
        )
        return gpus_per_node * per_gpu / 8 * 1e9 * eff
    default = notes.const(NET.INTERNODE_CONSERVATIVE_GBPS)
    notes.add(
        _("inter-node: {value} Gb/s Ethernet per node assumed for {gpu} (network unknown)").format(
            value=f"{default:g}", gpu=gpu.name
        )
    )
    return default / 8 * 1e9 * eff


def arch_efficiency(gpu: GpuSpec, dtype: str, calibration: Calibration | None, notes: Notes) -> float:
    """Sustained share of dense peak for large-GEMM training: a calibration measured on this GPU (or on
    another GPU of its generation, as a ratio to that GPU's default), a public measurement of a power-capped
    card, or the architecture's default, in that order."""
    if calibration is not None and calibration.applies_to(gpu.name):
        measured = _calibrated_efficiency(calibration, dtype, notes)
        if measured is not None:
            eff, what = measured
            notes.add(
                _("calibration {source}: {what} replaces the default").format(
                    source=calibration.source, what=what
                )
            )
            return eff
    if calibration is not None and calibration.same_generation(gpu):
        ref = calibration.reference
        measured = _calibrated_efficiency(calibration, dtype, notes)
        if ref is not None and measured is not None:
            ratio = measured[0] / default_efficiency(ref, dtype, Notes())
            notes.add(
                _(
                    "calibration {source}: measured on {ref}, another {arch} GPU ({what}); {ratio}× its "
                    "default applied to {gpu}'s default (same generation)"
                ).format(
                    source=calibration.source,
                    ref=ref.name,
                    arch=ref.architecture,
                    what=measured[1],
                    ratio=f"{ratio:.2f}",
                    gpu=gpu.name,
                )
            )
            return default_efficiency(gpu, dtype, notes) * ratio
    if calibration is not None and calibration.kind == "bench" and not calibration.applies_to(gpu.name):
        why = (
            _("nothing measured for training")
            if calibration.same_generation(gpu)
            else _("another generation")
            if calibration.reference is not None
            else _("its generation is unknown")
        )
        notes.add(
            _("calibration {source} is for {other}, not {gpu}: not used ({why})").format(
                source=calibration.source, other=calibration.gpu, gpu=gpu.name, why=why
            )
        )
    return default_efficiency(gpu, dtype, notes)


def _calibrated_efficiency(calibration: Calibration, dtype: str, notes: Notes) -> tuple[float, str] | None:
    """(training efficiency, what was measured) from a bench calibration: the GEMM fraction of peak for
    the dtype (or bf16), else the measured training-step MFU; None when it holds neither."""
    frac = calibration.gemm_fraction.get(dtype) or calibration.gemm_fraction.get("bf16")
    if frac:
        ratio = notes.const(K.TRAIN_EFF_PER_GEMM_FRACTION)
        return frac * ratio, f"measured GEMM {frac:.0%} of peak"
    if calibration.train_mfu:
        return calibration.train_mfu, (
            f"measured training-step MFU {calibration.train_mfu:.0%} (a small model's step: pessimistic "
            "for a larger one)"
        )
    return None


def default_efficiency(gpu: GpuSpec, dtype: str, notes: Notes) -> float:
    """The uncalibrated share of dense peak: a public GEMM measurement of this card (power-capped L4/T4,
    GeForce cards above their spec clock), else its architecture's figure."""
    measured = K.MEASURED_GEMM_FRACTION.get(gpu.name)
    if measured is not None and dtype in ("bf16", "fp16"):
        ratio = notes.const(K.TRAIN_EFF_PER_GEMM_FRACTION)
        frac = notes.const(measured)
        notes.add(
            _(
                "{gpu}: sustained large-GEMM {share} of the datasheet peak (a public measurement of "
                "this card) replaces the architecture default"
            ).format(gpu=gpu.name, share=f"{frac:.0%}")
        )
        return frac * ratio
    notes.const(K.ARCH_EFFICIENCY_SOURCE)
    arch = gpu.architecture.lower()
    if arch in K.ARCH_EFFICIENCY:
        if arch != "ampere":  # the line above states Ampere's figure: say which one this GPU gets
            notes.add(
                _("{gpu} is {arch}: max_training_efficiency = {value} of dense peak").format(
                    gpu=gpu.name, arch=gpu.architecture, value=f"{K.ARCH_EFFICIENCY[arch]:g}"
                )
            )
        return K.ARCH_EFFICIENCY[arch]
    notes.add(
        _("no efficiency figure for architecture {arch}: using {value}").format(
            arch=repr(gpu.architecture), value=K.ARCH_EFFICIENCY_DEFAULT
        )
    )
    return K.ARCH_EFFICIENCY_DEFAULT
