"""`[model] hf_config`: real published config.json files, counted against their model cards, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuwise.cli.main import main
from gpuwise.errors import ConfigError
from gpuwise.workload import get_preset, load_workload
from gpuwise.workload.hf_config import load_hf_config, read_hf_config

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hf_configs"

# file -> (model card total, model card active or None); sources in tests/fixtures/hf_configs/PROVENANCE.md
CARDS: dict[str, tuple[float, float | None]] = {
    "llama-2-7b": (6.74e9, None),
    "llama-3-8b": (8.03e9, None),
    "mistral-7b-v0.1": (7.3e9, None),
    "mixtral-8x7b-v0.1": (46.7e9, 12.9e9),
    "qwen2.5-7b": (7.61e9, None),
    "qwen3-8b": (8.2e9, None),
    "gemma-7b": (8.54e9, None),
    "phi-3-mini-4k": (3.8e9, None),
    "gpt2": (124e6, None),
    "pythia-1.4b": (1_414_647_808, None),
    "falcon-7b": (7e9, None),
    "starcoder2-3b": (3e9, None),
    "deepseek-v2-lite": (15.7e9, None),
    "deepseek-v3": (671e9, 37e9),
    "t5-base": (220e6, None),
    "whisper-large-v3": (1550e6, None),
}
# preset -> fixture of the same architecture
PRESET_FIXTURES = {
    "llama-2-7b": "llama-2-7b",
    "llama-3-8b": "llama-3-8b",
    "mistral-7b": "mistral-7b-v0.1",
    "mixtral-8x7b": "mixtral-8x7b-v0.1",
    "qwen2.5-7b": "qwen2.5-7b",
    "phi-3-mini": "phi-3-mini-4k",
    "gpt2": "gpt2",
    "qwen3-8b": "qwen3-8b",
    "gemma-7b": "gemma-7b",
    "starcoder2-3b": "starcoder2-3b",
    "falcon-7b": "falcon-7b",
    "pythia-1.4b": "pythia-1.4b",
}


def _arch(name: str) -> Any:
    path = FIXTURES / f"{name}.json"
    return read_hf_config(load_hf_config(path), str(path))


def test_at_least_twelve_architectures_are_covered() -> None:
    files = {p.stem for p in FIXTURES.glob("*.json")}
    assert files == set(CARDS)
    families = {json.loads((FIXTURES / f"{n}.json").read_text())["model_type"] for n in files}
    assert len(families) >= 12


@pytest.mark.parametrize("name", sorted(CARDS))
def test_count_matches_the_model_card_within_2_percent(name: str) -> None:
    card, card_active = CARDS[name]
    arch = _arch(name)
    assert arch.params == pytest.approx(card, rel=0.02)
    if card_active is not None:
        assert arch.active_params == pytest.approx(card_active, rel=0.02)
    else:
        assert arch.active_params <= arch.params


def test_exact_counts_where_the_card_is_exact() -> None:
    # Pythia's card gives the count to the parameter; GPT-2's is 124,439,808 in PyTorch.
    assert _arch("pythia-1.4b").params == 1_414_647_808
    assert _arch("gpt2").params == 124_439_808


@pytest.mark.parametrize("preset", sorted(PRESET_FIXTURES))
def test_bundled_presets_agree_with_the_counter(preset: str) -> None:
    arch = _arch(PRESET_FIXTURES[preset])
    row = get_preset(preset)
    assert row["params"] == pytest.approx(arch.params, rel=0.02)
    assert row.get("active_params", row["params"]) == pytest.approx(arch.active_params, rel=0.02)
    for key in (
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "vocab",
        "ffn_hidden",
        "gated_mlp",
        "tied_embeddings",
    ):
        default = {"gated_mlp": True, "tied_embeddings": False, "kv_heads": row["heads"]}.get(key)
        assert row.get(key, default) == getattr(arch, key), key


def _workload(tmp_path: Path, config: Any, model: str = "") -> Path:
    text = config if isinstance(config, str) else json.dumps(config)
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    path = tmp_path / "w.toml"
    path.write_text(
        f'task = "inference"\n[model]\nhf_config = "config.json"\n{model}\n'
        "[inference]\nprompt_tokens = 100\noutput_tokens = 100\nconcurrency = 8\nrequests = 1000\n",
        encoding="utf-8",
    )
    return path


def _fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def test_workload_reads_the_architecture_and_says_which_fields(tmp_path: Path) -> None:
    model = load_workload(_workload(tmp_path, _fixture("mixtral-8x7b-v0.1"))).arch
    assert (model.layers, model.hidden, model.kv_heads, model.experts, model.experts_per_token) == (
        32,
        4096,
        8,
        8,
        2,
    )
    assert model.params == pytest.approx(46.7e9, rel=0.01)
    assert model.n_active_params == pytest.approx(12.9e9, rel=0.01)
    assert model.hf_config == "config.json"
    assert "num_local_experts" in model.source and "num_key_value_heads" in model.source


def test_keys_written_in_model_override_the_file(tmp_path: Path) -> None:
    model = load_workload(_workload(tmp_path, _fixture("llama-3-8b"), "vocab = 32000\nparams = 7e9")).arch
    assert model.vocab == 32000 and model.params == 7e9
    assert model.layers == 32
    assert "overridden in [model]: params, vocab" in model.source


def test_encoder_decoder_is_said_in_the_source(tmp_path: Path) -> None:
    model = load_workload(_workload(tmp_path, _fixture("whisper-large-v3"))).arch
    assert model.layers == 64
    assert "encoder-decoder" in model.source


def test_the_note_reaches_the_estimate_assumptions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _workload(tmp_path, _fixture("qwen3-8b"))
    assert main(["estimate", str(path), "--gpu", "H100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("hf_config config.json (qwen3)" in a for a in out["assumptions"])
    assert out["model"]["params"] == pytest.approx(8.2e9, rel=0.02)
    assert out["model"]["source"].startswith("hf_config config.json (qwen3): read num_hidden_layers")


def test_estimate_json_names_a_preset_or_the_file_as_the_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _workload(tmp_path, "{}", "")
    text = path.read_text().replace('hf_config = "config.json"', 'preset = "mixtral-8x7b"')
    path.write_text(text)
    assert main(["estimate", str(path), "--gpu", "H100:2", "--json"]) == 0
    model = json.loads(capsys.readouterr().out)["model"]
    assert model == {"params": 46.7e9, "active_params": 12.9e9, "source": model["source"]}
    assert model["source"].startswith("preset mixtral-8x7b: ")
    path.write_text(
        text.replace('preset = "mixtral-8x7b"', "params = 1e9\nlayers = 16\nhidden = 2048\nheads = 16")
    )
    assert main(["estimate", str(path), "--gpu", "H100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["source"] == "the workload file's [model] keys"


@pytest.mark.parametrize(
    ("config", "model", "phrase"),
    [
        ("{not json", "", "config.json"),
        ("[1, 2]", "", "expected a JSON object"),
        ({"model_type": "bert"}, "", "not a family gpuwise can read"),
        ({"model_type": "llama", "hidden_size": 4096}, "", "needs 'num_hidden_layers'"),
        (
            {**_fixture("llama-2-7b"), "num_attention_heads": "32"},
            "",
            "'num_attention_heads' must be a whole",
        ),
        ({**_fixture("llama-2-7b"), "tie_word_embeddings": "no"}, "", "'tie_word_embeddings' must be true"),
        (_fixture("gpt2"), 'preset = "gpt2"', "both preset and hf_config"),
    ],
)
def test_bad_config_is_one_message_with_a_fix(
    tmp_path: Path, config: Any, model: str, phrase: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _workload(tmp_path, config, model)
    with pytest.raises(ConfigError, match=phrase) as info:
        load_workload(path)
    assert info.value.fix
    assert main(["estimate", str(path), "--gpu", "H100"]) == 2
    err = capsys.readouterr().err
    assert "To fix" in err and "Traceback" not in err


def test_missing_and_oversized_files_are_bad_input(tmp_path: Path) -> None:
    path = _workload(tmp_path, "{}")
    (tmp_path / "config.json").unlink()
    with pytest.raises(ConfigError, match=r"config\.json"):
        load_workload(path)
    (tmp_path / "config.json").write_text('{"pad": "' + "x" * (5 << 20) + '"}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"MiB|too big|larger"):
        load_workload(path)


def test_presets_command_lists_every_preset_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["presets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["presets"]
    assert {r["name"] for r in rows} >= {"llama-3-8b", "mixtral-8x7b", "resnet-50"}
    assert all(r["source"] and r["params"] for r in rows)
    mixtral = next(r for r in rows if r["name"] == "mixtral-8x7b")
    assert mixtral["active_params"] < mixtral["params"]
    assert main(["presets"]) == 0
    assert "llama-3-8b" in capsys.readouterr().out
