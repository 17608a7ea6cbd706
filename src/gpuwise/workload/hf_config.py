"""A Hugging Face `config.json` read into `[model]` fields, with its parameters counted from the architecture.

`[model] hf_config = "path/to/config.json"` (relative to the workload file; never downloaded) names a local
file. `read_hf_config` reads it through gpuwise.safe_read (size and nesting bounds), finds the family from
`model_type` / `architectures`, takes the fields the estimator needs and counts the parameters the way the
model's PyTorch modules hold them: embeddings (and the output head unless tied), attention projections
(grouped-query, multi-query and DeepSeek's multi-head latent attention), the MLP (gated or not, with biases
where the family has them), mixture-of-experts layers (routed and shared experts, the router), norms and
learned position tables. Encoder-decoder models (T5, Whisper) count both stacks and the decoder's
cross-attention. Each count is checked in tests against the model card's figure (tests/fixtures/hf_configs).

Pure: no printing; bad input is a ConfigError (exit 2). Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.locale import _


def _fix() -> str:
    # a repo id ("meta-llama/Llama-3.1-8B") is what newcomers write first: say where the file comes from
    return _(
        "point hf_config at a local copy of the model's config.json, relative to the workload file; gpuwise "
        "never downloads: fetch it first from https://huggingface.co/ORG/MODEL/resolve/main/config.json"
    )


_DECODER_FAMILIES = {
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma": "llama",
    "gemma2": "llama",
    "phi3": "llama",
    "phi": "phi",
    "gpt2": "gpt2",
    "gpt_neox": "gpt_neox",
    "falcon": "falcon",
    "starcoder2": "starcoder2",
    "mixtral": "mixtral",
    "deepseek_v2": "deepseek",
    "deepseek_v3": "deepseek",
    "t5": "t5",
    "whisper": "whisper",
}
# architectures[0] -> model_type, for files that lack model_type
_ARCH_TYPES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Phi3ForCausalLM": "phi3",
    "PhiForCausalLM": "phi",
    "GPT2LMHeadModel": "gpt2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "FalconForCausalLM": "falcon",
    "Starcoder2ForCausalLM": "starcoder2",
    "MixtralForCausalLM": "mixtral",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "T5ForConditionalGeneration": "t5",
    "WhisperForConditionalGeneration": "whisper",
}
# families whose tie_word_embeddings defaults to true in transformers' config classes
_TIED_DEFAULT = {"gemma", "gemma2", "gpt2", "falcon", "starcoder2", "t5", "whisper"}


@dataclass(frozen=True)
class HfArch:
    """The architecture read from a config.json, and its parameter counts."""

    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_hidden: int
    vocab: int
    gated_mlp: bool
    tied_embeddings: bool
    experts: int
    experts_per_token: int
    shared_experts: int
    params: float
    active_params: float
    encoder_decoder: bool
    used: tuple[str, ...]
    # encoder-decoder models: encoder_layers and, for speech, the audio keys (gpuwise.workload.speech)
    encdec_fields: tuple[tuple[str, float], ...] = ()

    def model_fields(self) -> dict[str, Any]:
        """The `[model]` keys this architecture fills (the workload's own keys are laid over them)."""
        return {
            "params": self.params,
            "active_params": self.active_params,
            "layers": self.layers,
            "hidden": self.hidden,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "ffn_hidden": self.ffn_hidden,
            "vocab": self.vocab,
            "gated_mlp": self.gated_mlp,
            "tied_embeddings": self.tied_embeddings,
            "experts": self.experts,
            "experts_per_token": self.experts_per_token,
            **dict(self.encdec_fields),
        }


class _Reader:
    """Reads fields of one config, remembering which ones it used (for the assumptions)."""

    def __init__(self, data: dict[str, Any], source: str, model_type: str) -> None:
        self.data = data
        self.source = source
        self.model_type = model_type
        self.used: list[str] = []

    def int(self, *names: str, default: int | None = None) -> int:
        for name in names:
            value = self.data.get(name)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ConfigError(
                        _(
                            "config.json {source}: field '{name}' must be a whole number ≥ 0, got {got}"
                        ).format(source=self.source, name=name, got=repr(value)),
                        fix=_fix(),
                    )
                self.used.append(name)
                return value
        if default is not None:
            return default
        raise ConfigError(
            _("config.json {source}: a {model_type} config needs '{name}', which is missing").format(
                source=self.source, model_type=self.model_type, name=names[0]
            ),
            why=_("gpuwise counts the parameters from the architecture; without this field it cannot"),
            fix=_(
                "use the complete config.json, or give the value in [model] (the file has no {name})"
            ).format(name=repr(names[0])),
        )

    def flag(self, name: str, default: bool) -> bool:
        value = self.data.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(
                _("config.json {source}: field '{name}' must be true or false, got {got}").format(
                    source=self.source, name=name, got=repr(value)
                ),
                fix=_fix(),
            )
        self.used.append(name)
        return value


def load_hf_config(path: Path) -> dict[str, Any]:
    """Read a config.json (bounded: gpuwise.safe_read); a file that is not a JSON object is a ConfigError."""
    from gpuwise.safe_read import load_json

    data = load_json(path, what="config.json", fix=_fix())
    if not isinstance(data, dict):
        raise ConfigError(
            _("config.json {path}: expected a JSON object of architecture fields, got {type}").format(
                path=path, type=type(data).__name__
            ),
            fix=_fix(),
        )
    return data


def model_type_of(data: dict[str, Any], source: str) -> str:
    """The config's family, from `model_type` or `architectures`."""
    model_type = data.get("model_type")
    if not isinstance(model_type, str):
        archs = data.get("architectures")
        first = archs[0] if isinstance(archs, list) and archs else None
        model_type = _ARCH_TYPES.get(first, "") if isinstance(first, str) else ""
    if model_type not in _DECODER_FAMILIES:
        known = ", ".join(sorted(_DECODER_FAMILIES))
        raise ConfigError(
            _("config.json {source}: model_type {model_type} is not a family gpuwise can read").format(
                source=source, model_type=repr(data.get("model_type"))
            ),
            why=_("gpuwise reads: {known}").format(known=known),
            fix=_("describe the model with params, layers, hidden and heads in [model] instead of hf_config"),
        )
    return model_type


def read_hf_config(data: dict[str, Any], source: str) -> HfArch:
    """The architecture and parameter counts of a parsed config.json (`source` names it in messages)."""
    model_type = model_type_of(data, source)
    family = _DECODER_FAMILIES[model_type]
    r = _Reader(data, source, model_type)
    if family == "t5":
        from gpuwise.workload.hf_encdec import count_t5

        return count_t5(r)
    if family == "whisper":
        from gpuwise.workload.hf_encdec import count_whisper

        return count_whisper(r)
    from gpuwise.workload.hf_decoder import count_decoder

    return count_decoder(r, family, tied_default=model_type in _TIED_DEFAULT)
