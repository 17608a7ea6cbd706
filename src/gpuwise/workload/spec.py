"""The workload file's schema (docs/workload.md): one pydantic model per section, and the workload itself.

A workload describes the work, not the hardware. The models validate types, bounds and how the keys of a
section fit together; `gpuwise.workload.loading` reads a file into them and turns their complaints into
one clear message. `gpuwise.workload.reference` renders docs/workload.md and `gpuwise schema workload`
from these models.

Optional keys beyond docs/workload.md (defaults keep the contract's meaning): `[model]` `head_dim`,
`gated_mlp`, `tied_embeddings`; `[train]` `attention = "flash" | "eager"`, `lora_targets = "all" |
"attention"` (which linear layers carry adapters), `pipeline_schedule = "interleaved" | "1f1b"`, and the
keys that describe a real user's job: `framework` (the training stack: "hf", "axolotl", "llama-factory",
"unsloth", "accelerate-fsdp", "deepspeed", "lightning", "torchtitan", "megatron" (or "nemo"), "nanogpt",
"tuned"; absent = the common stack for the task and method, see `default_framework`), `avg_tokens` (mean
tokens per sample), `packing`, `group_by_length`, `base_precision` (the frozen base of a LoRA fine-tune:
"bf16" | "fp16" | "int8" | "nf4" | "gptq-4bit" | "awq-4bit"; `method = "qlora"` is "lora" with "nf4") and
`low_cpu_mem_usage` (meta-device / rank-0 loading: no full-model peak per GPU before sharding), `offload`
("none" | "optimizer" | "optimizer+params": DeepSpeed ZeRO-Offload / FSDP CPU offload) and `fused_kernels`
(Liger/Unsloth-style chunked cross-entropy and fused SwiGLU/RMSNorm).

Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuwise.locale import _
from gpuwise.workload.diffusion import DiffusionSpec
from gpuwise.workload.measured import MeasuredSpec
from gpuwise.workload.speech import check_inference, check_model, check_training

Task = Literal["train", "finetune", "inference", "measured"]
Kind = Literal["transformer", "cnn", "diffusion", "generic"]
Method = Literal["full", "lora", "qlora"]
Precision = Literal["fp32", "tf32", "fp16", "bf16", "fp8"]
WeightsPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
Optimizer = Literal["adamw", "adamw8bit", "adamw-8bit", "paged-adamw-8bit", "sgd", "adafactor"]
Checkpointing = Literal["none", "selective", "full"]
Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp"]
Attention = Literal["flash", "eager"]
LoraTargets = Literal["all", "attention"]
# "generic" is the old name of "tuned" (kept so existing files still load); "nemo" is Megatron's stack.
Framework = Literal[
    "tuned",
    "generic",
    "hf",
    "accelerate-fsdp",
    "deepspeed",
    "axolotl",
    "llama-factory",
    "unsloth",
    "lightning",
    "torchtitan",
    "megatron",
    "nemo",
    "nanogpt",
]
BasePrecision = Literal["bf16", "fp16", "fp32", "int8", "nf4", "gptq-4bit", "awq-4bit"]
Offload = Literal["none", "optimizer", "optimizer+params"]
PipelineSchedule = Literal["interleaved", "1f1b"]
Batching = Literal["continuous", "static"]

# strict: TOML already types its values, so "4" for a number is a mistake worth reporting, not coercing.
_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True, validate_default=True)


def _finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError(_("must be a finite number (not inf or nan)"))
    return value


class ModelSpec(BaseModel):
    """The model, resolved: a preset's architecture with the user's fields laid over it."""

    model_config = _STRICT

    preset: str | None = None
    # extension: a Hugging Face config.json (relative to the workload file) whose architecture fills the
    # keys below (gpuwise.workload.hf_config); keys given beside it override what it read
    hf_config: str | None = None
    kind: Kind = "transformer"
    params: float | None = Field(default=None, gt=0)
    layers: int | None = Field(default=None, ge=1)
    hidden: int | None = Field(default=None, ge=1)
    heads: int | None = Field(default=None, ge=1)
    kv_heads: int | None = Field(default=None, ge=1)
    head_dim: int | None = Field(default=None, ge=1)  # extension: Gemma 2's head_dim is not hidden/heads
    vocab: int | None = Field(default=None, ge=1)
    ffn_hidden: int | None = Field(default=None, ge=1)
    gated_mlp: bool = True  # extension: SwiGLU/GeGLU MLPs have three matrices (Llama, Mistral, Qwen, Gemma)
    tied_embeddings: bool = False  # extension: input embedding shared with the output head
    experts: int = Field(default=1, ge=1)
    experts_per_token: int = Field(default=1, ge=1)
    active_params: float | None = Field(default=None, gt=0)
    flops_per_sample: float | None = Field(default=None, gt=0)
    sample_unit: str = "sample"
    source: str = ""  # extension: where a preset's (or hf_config's) numbers come from
    # extension: encoder-decoder and speech models (T5, Whisper; gpuwise.workload.speech checks them)
    encoder_layers: int | None = Field(default=None, ge=1)  # of `layers`, the encoder's
    encoder_tokens: int | None = Field(default=None, ge=1)  # encoder positions per input (Whisper: 1500)
    audio_window_s: float | None = Field(default=None, gt=0)  # audio per encoder input (Whisper: 30 s)
    mel_bins: int | None = Field(default=None, ge=1)  # the convolutional front end's input channels
    decoder_max_tokens: int | None = Field(default=None, ge=1)  # decoder positions (Whisper: 448)

    _fin = field_validator("params", "active_params", "flops_per_sample")(_finite)

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        # Spell out derived defaults so the dumped workload shows what the estimator used.
        if isinstance(data, dict) and data.get("kv_heads") is None and data.get("heads") is not None:
            data = {**data, "kv_heads": data["heads"]}
        return data

    @model_validator(mode="after")
    def _complete(self) -> ModelSpec:
        if self.kind == "transformer":
            missing = [k for k in ("params", "layers", "hidden", "heads") if getattr(self, k) is None]
            if missing:
                raise ValueError(
                    _(
                        "a transformer needs params, layers, hidden and heads (or a preset); missing: {keys}"
                    ).format(keys=", ".join(missing))
                )
        else:
            missing = [k for k in ("params", "flops_per_sample") if getattr(self, k) is None]
            if missing:
                raise ValueError(
                    _('kind = "{kind}" needs params and flops_per_sample; missing: {keys}').format(
                        kind=self.kind, keys=", ".join(missing)
                    )
                )
        if self.experts_per_token > self.experts:
            raise ValueError(
                _("experts_per_token ({per_token}) cannot exceed experts ({experts})").format(
                    per_token=self.experts_per_token, experts=self.experts
                )
            )
        if self.active_params is not None and self.params is not None and self.active_params > self.params:
            raise ValueError(_("active_params cannot exceed params"))
        if self.heads is not None and self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(
                _("heads ({heads}) must be a multiple of kv_heads ({kv_heads})").format(
                    heads=self.heads, kv_heads=self.kv_heads
                )
            )
        check_model(self)
        return self

    # Resolved architecture, for the estimator (all defaults spelt out in one place).
    @property
    def n_params(self) -> float:
        assert self.params is not None
        return self.params

    @property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads or 1

    @property
    def n_head_dim(self) -> int:
        if self.head_dim:
            return self.head_dim
        return (self.hidden or 1) // (self.heads or 1)

    @property
    def n_ffn(self) -> int:
        """MLP width; without a figure, 4·hidden (the original Transformer/GPT ratio)."""
        return self.ffn_hidden or 4 * (self.hidden or 0)

    @property
    def n_active_params(self) -> float:
        """Parameters a token passes through. For a MoE without a figure: total minus the idle experts'
        MLPs (3 matrices each for a gated MLP, 2 otherwise)."""
        if self.active_params is not None:
            return self.active_params
        if self.experts > 1 and self.layers and self.hidden:
            per_expert = (3 if self.gated_mlp else 2) * self.hidden * self.n_ffn
            idle = self.layers * (self.experts - self.experts_per_token) * per_expert
            return max(self.n_params - idle, self.n_params / self.experts)
        return self.n_params

    @property
    def embedding_params(self) -> float:
        """Parameters in the input embedding (and output head, when untied): not matmul FLOPs on input."""
        if self.vocab and self.hidden:
            return float(self.vocab * self.hidden)
        return 0.0


class TrainSpec(BaseModel):
    model_config = _STRICT

    method: Method
    precision: Precision
    pure_low_precision: bool = False
    optimizer: Optimizer = "adamw"
    tokens: float | None = Field(default=None, gt=0)
    samples: float | None = Field(default=None, gt=0)
    epochs: float = Field(default=1, gt=0)
    seq_len: int | None = Field(default=None, ge=1)
    micro_batch: int = Field(ge=1)
    global_batch: int | None = Field(default=None, ge=1)
    activation_checkpointing: Checkpointing = "none"
    sharding: Sharding = "none"
    tensor_parallel: int = Field(default=1, ge=1)
    pipeline_parallel: int = Field(default=1, ge=1)
    lora_rank: int = Field(default=16, ge=1)
    attention: Attention = "flash"  # extension: "eager" keeps the s² attention matrix (Korthikanti 2022)
    # extension: which linear layers carry LoRA adapters. "all" = q, k, v, o and the MLP (the QLoRA paper's
    # recommendation, PEFT's "all-linear"); "attention" = q, k, v, o only (the original LoRA paper, LitGPT's
    # and many PEFT examples' default). Changes the trainable parameters, their optimizer states and
    # gradients.
    lora_targets: LoraTargets = "all"
    # extension: the training stack (estimate/stacks.py STACKS: its efficiencies and what it stores).
    # None = the common stack for the task and method (`default_framework`), named in the assumptions.
    framework: Framework | None = None
    # extension: mean tokens per sample (with `samples`); None = every sample fills seq_len.
    avg_tokens: float | None = Field(default=None, gt=0)
    # extension: samples concatenated into full seq_len rows (true) or padded per batch (false, HF's default).
    packing: bool = False
    # extension: HF Trainer's group_by_length: batches of similar length, so little padding.
    group_by_length: bool = False
    # extension: the frozen base of a LoRA fine-tune; None = the compute precision ("nf4" for qlora).
    base_precision: BasePrecision | None = None
    # extension: the model is built on the meta device / loaded on one rank (HF low_cpu_mem_usage,
    # Accelerate's cpu_ram_efficient_loading, torchtitan's meta init); None = the stack's default.
    low_cpu_mem_usage: bool | None = None
    # extension: with pipeline_parallel > 1, "interleaved" (default: Megatron-LM's virtual stages, as in the
    # Llama 3 herd and NeMo recipes) or plain "1f1b", whose bubble is v times larger (Narayanan et al. 2021).
    pipeline_schedule: PipelineSchedule = "interleaved"
    # extension: CPU offload. "optimizer" = DeepSpeed ZeRO-Offload (offload_optimizer: fp32 master weights
    # and optimizer states in host RAM, the optimizer step on the CPU); "optimizer+params" = also the
    # parameters and gradients (DeepSpeed ZeRO-3 offload_param, FSDP CPUOffload(offload_params=True)).
    offload: Offload = "none"
    # extension: fused training kernels (Liger Kernel, Unsloth, flash-attn's fused ops): a chunked
    # cross-entropy that never holds the full logits and a SwiGLU/RMSNorm that keep only their inputs.
    # None = off for every stack (the unsloth stack's memory figures were set on its rows without it).
    fused_kernels: bool | None = None

    _fin = field_validator("tokens", "samples", "epochs", "avg_tokens")(_finite)

    @model_validator(mode="after")
    def _one_amount(self) -> TrainSpec:
        if (self.tokens is None) == (self.samples is None):
            raise ValueError(_("give exactly one of tokens or samples"))
        if self.avg_tokens is not None and self.seq_len is not None and self.avg_tokens > self.seq_len:
            raise ValueError(
                _(
                    "avg_tokens ({avg_tokens}) cannot exceed seq_len ({seq_len}): samples are "
                    "truncated to seq_len; give the mean length after truncation, or raise seq_len"
                ).format(avg_tokens=f"{self.avg_tokens:g}", seq_len=self.seq_len)
            )
        if self.base_precision is not None and self.method == "full":
            raise ValueError(
                _('base_precision is for LoRA (method = "lora"); full fine-tuning trains every weight')
            )
        if self.offload == "optimizer+params" and self.sharding not in ("zero3", "fsdp"):
            raise ValueError(
                _(
                    'offload = "optimizer+params" offloads sharded parameters: it needs sharding = '
                    '"zero3" or "fsdp" (DeepSpeed offload_param and FSDP cpu_offload shard first); '
                    'for ZeRO-1/2 write offload = "optimizer"'
                )
            )
        if self.offload == "optimizer" and self.sharding == "none":
            raise ValueError(
                _(
                    'offload = "optimizer" is DeepSpeed ZeRO-Offload: it needs sharding = "zero1", '
                    '"zero2" or "zero3" (also on one GPU)'
                )
            )
        if self.method == "qlora" and self.base_precision not in (None, "nf4"):
            raise ValueError(
                _(
                    'method = "qlora" means a NF4 base; for a {precision} base write '
                    'method = "lora" with base_precision = "{precision}"'
                ).format(precision=self.base_precision)
            )
        return self

    @property
    def base_dtype(self) -> str:
        """The frozen base's storage: the key, else "nf4" for qlora, else the compute precision."""
        if self.base_precision is not None:
            return self.base_precision
        if self.method == "qlora":
            return "nf4"
        return {"fp8": "bf16", "tf32": "fp32"}.get(self.precision, self.precision)

    @property
    def quantized_base(self) -> bool:
        return self.method != "full" and self.base_dtype in ("int8", "nf4", "gptq-4bit", "awq-4bit")

    @property
    def optimizer_kind(self) -> str:
        """The optimizer as the state table names it ("adamw-8bit" and "paged-adamw-8bit" are adamw8bit)."""
        return {"adamw-8bit": "adamw8bit", "paged-adamw-8bit": "adamw8bit"}.get(
            self.optimizer, self.optimizer
        )

    @property
    def zero_stage(self) -> int:
        return {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}[self.sharding]


def default_framework(task: str, train: TrainSpec, kind: str = "transformer") -> str:
    """The stack most people use for this kind of job, when the workload names none.

    LoRA/QLoRA and full fine-tunes: Hugging Face Trainer (+ PEFT; Accelerate FSDP or DeepSpeed when sharded);
    pre-training a transformer: plain PyTorch DDP/FSDP in the nanoGPT style; other models: the tuned figures
    (no user-stack measurements for CNNs or diffusion yet).
    """
    if train.framework is not None:
        return {"generic": "tuned", "nemo": "megatron"}.get(train.framework, train.framework)
    if kind != "transformer":
        return "tuned"
    if task == "finetune" or train.method != "full":
        if train.sharding in ("fsdp", "zero3") and train.method == "full":
            return "accelerate-fsdp"
        if train.sharding in ("zero1", "zero2"):
            return "deepspeed"
        return "hf"
    return "nanogpt"


class InferenceSpec(BaseModel):
    model_config = _STRICT

    weights_precision: WeightsPrecision = "bf16"
    kv_precision: WeightsPrecision | None = None
    prompt_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=1)
    concurrency: int = Field(ge=1)
    requests: float | None = Field(default=None, gt=0)
    target_output_tokens_per_s: float | None = Field(default=None, gt=0)
    duration_hours: float | None = Field(default=None, gt=0)
    tensor_parallel: int = Field(default=1, ge=1)
    # extension: speech models (gpuwise.workload.speech): hours of audio instead of requests, the audio
    # per window (default: the model's) and the seconds each window shares with the next
    audio_hours: float | None = Field(default=None, gt=0)
    window_s: float | None = Field(default=None, gt=0)
    overlap_s: float = Field(default=0, ge=0)
    # extension: how encoder-decoder decoding is launched: "eager" PyTorch (HF transformers, openai-whisper;
    # the default there) or "compiled" (CUDA graphs, TensorRT, FasterTransformer/NeMo, CTranslate2)
    engine: Literal["eager", "compiled"] | None = None
    # extension: beam search width of an encoder-decoder model's decoder (openai-whisper's and
    # faster-whisper's transcribe default to 5; Hugging Face's pipeline to 1, greedy)
    beams: int = Field(default=1, ge=1)

    # extension: how the server batches requests (estimate/serving.py): "continuous" (vLLM, TGI,
    # TensorRT-LLM in-flight batching) or "static" (one padded batch prefilled and decoded together)
    batching: Batching = "continuous"

    _fin = field_validator("requests", "target_output_tokens_per_s", "duration_hours", "audio_hours")(_finite)

    @model_validator(mode="before")
    @classmethod
    def _kv_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("kv_precision") is None:
            data = {**data, "kv_precision": data.get("weights_precision", "bf16")}
        return data

    @model_validator(mode="after")
    def _one_amount(self) -> InferenceSpec:
        rate = self.target_output_tokens_per_s is not None or self.duration_hours is not None
        if self.audio_hours is not None:
            if self.requests is not None or rate:
                raise ValueError(_("give audio_hours alone: not with requests or a target rate"))
            return self
        if self.requests is not None and rate:
            raise ValueError(
                _("give either requests or target_output_tokens_per_s with duration_hours, not both")
            )
        if self.requests is None and (self.target_output_tokens_per_s is None or self.duration_hours is None):
            raise ValueError(
                _("give exactly one of requests or (target_output_tokens_per_s with duration_hours)")
            )
        return self

    @property
    def kv_dtype(self) -> str:
        return self.kv_precision or self.weights_precision


class DataSpec(BaseModel):
    model_config = _STRICT

    dataset_gb: float = Field(default=0, ge=0)
    checkpoint_every_hours: float = Field(default=1.0, gt=0)
    egress_gb: float = Field(default=0, ge=0)

    _fin = field_validator("dataset_gb", "checkpoint_every_hours", "egress_gb")(_finite)


class Constraints(BaseModel):
    model_config = _STRICT

    deadline_hours: float | None = Field(default=None, gt=0)
    budget_usd: float | None = Field(default=None, gt=0)
    interruptible: bool = True
    providers: list[str] | None = None
    regions: list[str] | None = None
    gpus: list[str] | None = None
    max_gpus: int | None = Field(default=None, ge=1)
    max_nodes: int = Field(default=1, ge=1)
    # extension: months the machine would be reserved for; `plan` then also shows reserved prices, costed
    # as the whole commitment (absent: no reservations shown)
    commitment_months: float | None = Field(default=None, gt=0)
    # extension: serving latency targets (`plan` rejects slower configurations): the end-to-end time of
    # one request and its time to first token, at the workload's concurrency, in seconds
    max_latency_s: float | None = Field(default=None, gt=0)
    max_ttft_s: float | None = Field(default=None, gt=0)

    _fin = field_validator(
        "deadline_hours", "budget_usd", "commitment_months", "max_latency_s", "max_ttft_s"
    )(_finite)


def _no_latency_targets(c: Constraints, what: str, fix: str) -> None:
    """Latency targets are about serving a token-generating model; anywhere else they would silently
    constrain nothing."""
    keys = [k for k in ("max_latency_s", "max_ttft_s") if getattr(c, k) is not None]
    if keys:
        message = (
            _('[constraints] {keys} is for serving a transformer (task = "inference"), not {what}; {fix}')
            if len(keys) == 1
            else _(
                '[constraints] {keys} are for serving a transformer (task = "inference"), not {what}; {fix}'
            )
        )
        raise ValueError(message.format(keys=_(" and ").join(keys), what=what, fix=fix))


class Workload(BaseModel):
    """One parsed workload file, defaults filled. `model_dump(mode="json")` is what `plan --json` prints."""

    model_config = _STRICT

    name: str = ""
    task: Task
    # None only for task = "measured" (the measurement stands in for the model); `arch` reads it otherwise.
    model: ModelSpec | None = None
    train: TrainSpec | None = None
    inference: InferenceSpec | None = None
    measured: MeasuredSpec | None = None
    # extension: a diffusion model's resolution and caching (gpuwise.workload.diffusion)
    diffusion: DiffusionSpec | None = None
    data: DataSpec = DataSpec()
    constraints: Constraints = Constraints()

    @model_validator(mode="after")
    def _sections(self) -> Workload:
        if self.task == "measured":
            if self.measured is None:
                raise ValueError(_('task = "measured" needs a [measured] section (result, units)'))
            extra = [s for s in ("model", "train", "inference") if getattr(self, s) is not None]
            if extra:
                raise ValueError(
                    _(
                        'task = "measured" takes [measured], not {sections}: '
                        "the measurement stands in for the model"
                    ).format(sections=", ".join(f"[{s}]" for s in extra))
                )
            _no_latency_targets(
                self.constraints, 'task = "measured"', _("remove it, or bound the run with deadline_hours")
            )
            return self
        if self.measured is not None:
            raise ValueError(_('[measured] is for task = "measured", not "{task}"').format(task=self.task))
        if self.model is None:
            raise ValueError(_('task = "{task}" needs a [model] section').format(task=self.task))
        if self.task in ("train", "finetune"):
            if self.train is None:
                raise ValueError(_('task = "{task}" needs a [train] section').format(task=self.task))
            if self.inference is not None:
                raise ValueError(_('task = "{task}" takes [train], not [inference]').format(task=self.task))
            if self.model.kind == "transformer" and self.train.seq_len is None:
                raise ValueError(_("[train] seq_len is required for a transformer"))
            check_training(self.model, self.train)
            if self.model.kind != "transformer" and self.train.method != "full" and self.diffusion is None:
                raise ValueError(
                    _('method = "{method}" is for transformers; use "full"').format(method=self.train.method)
                )
            _no_latency_targets(
                self.constraints,
                _('task = "{task}": a training job has no per-request latency').format(task=self.task),
                _("remove it, or bound the run with deadline_hours"),
            )
        else:
            if self.inference is None:
                raise ValueError(_('task = "inference" needs an [inference] section'))
            if self.train is not None:
                raise ValueError(_('task = "inference" takes [inference], not [train]'))
            check_inference(self.model, self.inference)
            if self.model.kind != "transformer":
                _no_latency_targets(
                    self.constraints,
                    _('kind = "{kind}": gpuwise models per-request latency only for token generation').format(
                        kind=self.model.kind
                    ),
                    _("remove it, or bound the run with deadline_hours"),
                )
        return self

    @property
    def is_training(self) -> bool:
        return self.train is not None

    def model_summary(self) -> dict[str, Any] | None:
        """`estimate --json`'s `model`: the parameter counts used and where the architecture came from
        (a preset, an `hf_config` file, or the workload file's own keys); None for a measured task."""
        if self.model is None:
            return None
        m = self.model
        if m.preset:
            where = f"preset {m.preset}: {m.source}"
        elif m.hf_config:
            where = m.source
        else:
            where = "the workload file's [model] keys"
        return {"params": m.params, "active_params": m.n_active_params, "source": where}

    @property
    def arch(self) -> ModelSpec:
        """The [model] section of a train, finetune or inference workload (each has one; validated)."""
        if self.model is None:
            raise ValueError(f'task = "{self.task}" has no [model] section')
        return self.model
