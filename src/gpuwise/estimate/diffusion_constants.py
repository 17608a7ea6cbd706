"""The figures of the diffusion training model (estimate/diffusion.py), each with its source and, for the
fitted ones, the public measurements they were fitted on (tests/estimate/test_diffusion_measured.py compares
the estimate with those and with measurements that were not used for fitting).

Pure data: must not import anything but the standard library and the `Constant` type.
"""

from __future__ import annotations

from gpuwise.estimate.constants import Constant
from gpuwise.locale import N_

# Share of the architecture's large-GEMM efficiency (constants.ARCH_EFFICIENCY) a diffusion training step
# reaches: UNets spend much of their time in convolutions, group norms and small attention levels; DiT
# blocks are large GEMMs like an LLM layer.
FAMILY_SHARE = {
    "unet": Constant(
        "unet_training_share",
        0.65,
        N_("of the GEMM efficiency"),
        N_(
            "fitted: SDXL LoRA at 1024 px, batch 8, gradient checkpointing, cached latents on an RTX 4090 "
            "runs at 3 s/it (github.com/bmaltais/kohya_ss/issues/1288)"
        ),
        calibrated_on=("kohya_ss#1288 SDXL LoRA RTX 4090",),
    ),
    "dit": Constant(
        "dit_training_share",
        0.95,
        N_("of the GEMM efficiency"),
        N_(
            "fitted: FLUX.1-dev QLoRA (NF4 base) at 512×768, batch 1, gradient checkpointing, cached "
            "latents and text embeddings: 700 steps × 4 accumulated images in ~41 min on an RTX 4090 "
            "(huggingface.co/blog/flux-qlora)"
        ),
        calibrated_on=("HF blog flux-qlora RTX 4090",),
    ),
}
LAYER_OVERHEAD_S = Constant(
    "diffusion_layer_overhead_s",
    0.0005,
    N_("s per block per micro batch"),
    N_(
        "kernel launches and Python of an eager PyTorch loop, as gpuwise assumes for Lightning "
        "(estimate/stacks.py): what keeps small models at small batches from reaching the GEMM rate"
    ),
)
FP8_BASE_BYTES = Constant(
    "fp8_base_bytes_per_param",
    1.0,
    N_("B/param"),
    N_(
        "kohya sd-scripts --fp8_base (float8_e4m3fn weights, cast to BF16 per layer; Flux.1-dev's FP8 "
        "file is 11.9 GB for 11.9B parameters)"
    ),
)
OPTIMIZER_BYTES_PER_PARAM = Constant(
    "optimizer_step_bytes_per_param",
    32.0,
    N_("B/param moved"),
    N_("AdamW reads and writes FP32 weights, gradient and two moments once per step: 2 × 16 B"),
)
ACTIVATIONS_SOURCE = Constant(
    "diffusion_activation_accounting",
    17.0,
    N_("16-bit values per token per DiT block"),
    N_(
        "Korthikanti et al. 2022 (34·s·b·h bytes per transformer layer with flash/SDPA attention); UNet "
        "transformer layers 25·C (GEGLU 8C), resnets 7·C per latent position; checkpointing keeps block "
        "inputs"
    ),
)
