"""Workload files as newcomers write them: the mistakes people make get an answer that says where to go."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.errors import ConfigError
from gpuwise.workload import load_workload

LORA = """task = "finetune"
[model]
preset = "llama-3-8b"
[train]
method = "lora"
precision = "bf16"
tokens = 1e6
seq_len = 2048
micro_batch = 1
"""


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_workload(path)
    return " ".join(info.value.render().split())


def test_a_file_saved_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    """Windows Notepad saves UTF-8 with a BOM; tomllib called that 'Invalid statement (at line 1, column
    1)', a message that points at nothing the user can see."""
    path = tmp_path / "notepad.toml"
    path.write_bytes(b"\xef\xbb\xbf" + LORA.encode())
    assert load_workload(path).train is not None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # typed above the first header: TOML makes it a top-level key
        ("deadline_hours = 24\n" + LORA, "key 'deadline_hours' belongs in [constraints], not the top level"),
        # typed under the last header, [train], instead of a new [data] one
        (LORA + "dataset_gb = 3\n", "key 'train.dataset_gb' belongs in [data], not [train]"),
        (LORA + "budget_usd = 100\n", "key 'train.budget_usd' belongs in [constraints], not [train]"),
    ],
)
def test_a_key_in_the_wrong_section_is_sent_to_its_section(tmp_path: Path, text: str, said: str) -> None:
    """These were 'unknown key' with no hint, though the key is a workload key one section away."""
    message = _error(tmp_path, text)
    assert said in message
    assert "To fix: move" in message and "header" in message


def test_a_rule_over_a_section_reads_as_a_sentence(tmp_path: Path) -> None:
    """It read "key 'train' give exactly one of tokens or samples"."""
    message = _error(tmp_path, LORA + "samples = 100\n")
    assert "job.toml: [train]: give exactly one of tokens or samples" in message


QWEN3_CONFIG = """{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128,
"hidden_size": 4096, "intermediate_size": 12288, "num_attention_heads": 32, "num_hidden_layers": 36,
"num_key_value_heads": 8, "tie_word_embeddings": false, "vocab_size": 151936}"""


def _hf_workload(hf_config: str) -> str:
    return LORA.replace('preset = "llama-3-8b"', f'hf_config = "{hf_config}"')


def test_a_repo_id_in_hf_config_says_where_to_download_the_file(tmp_path: Path) -> None:
    """'meta-llama/Llama-3.1-8B' (what a model page shows) was 'config.json …/meta-llama/Llama-3.1-8B does
    not exist', with no word that gpuwise never downloads or where the file comes from."""
    message = _error(tmp_path, _hf_workload("meta-llama/Llama-3.1-8B"))
    assert "looks like a Hugging Face repo id" in message
    assert "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json" in message


def test_the_folder_a_model_was_downloaded_to_stands_for_its_config(tmp_path: Path) -> None:
    """`huggingface-cli download` leaves a folder; pointing hf_config at it was 'is a directory'."""
    (tmp_path / "qwen3-8b").mkdir()
    (tmp_path / "qwen3-8b" / "config.json").write_text(QWEN3_CONFIG, encoding="utf-8")
    path = tmp_path / "job.toml"
    path.write_text(_hf_workload("qwen3-8b"), encoding="utf-8")
    work = load_workload(path)
    assert work.model is not None and work.model.layers == 36


@pytest.mark.parametrize(
    ("tokens", "write"),
    [('"8k"', "write 8000 without quotes"), ('"1e6"', "write 1e6 without"), ('"5B"', "5e9")],
)
def test_a_number_written_as_text_gets_the_number_to_write(tmp_path: Path, tokens: str, write: str) -> None:
    """'8k' and a quoted '1e6' were 'must be a number, got …' with nothing on what TOML wants instead."""
    message = _error(tmp_path, LORA.replace("tokens = 1e6", f"tokens = {tokens}"))
    assert "'train.tokens' must be a number" in message and write in message


def test_a_whole_number_key_does_not_guess_what_a_suffix_means(tmp_path: Path) -> None:
    """'2k' of context usually means 2048, not 2000: no figure is offered for it."""
    message = _error(tmp_path, LORA.replace("seq_len = 2048", 'seq_len = "2k"'))
    assert "'train.seq_len' must be a whole number, got '2k'" in message and "write 2000" not in message


def test_an_inference_job_with_a_train_section_is_told_so_first(tmp_path: Path) -> None:
    """[train] tensor_parallel = 2 on a serving job was answered 'train.method is required but missing;
    train.precision …', as if the fix were to fill in a training section."""
    serving = LORA.split("[train]", maxsplit=1)[0].replace("finetune", "inference")
    serving += "[inference]\nprompt_tokens = 500\noutput_tokens = 300\nconcurrency = 8\nrequests = 1000\n"
    message = _error(tmp_path, serving + "[train]\ntensor_parallel = 2\n")
    assert 'task = "inference" takes [inference], not [train]' in message
    assert "is required" not in message and "To fix: move the keys of [train] under [inference]" in message


@pytest.mark.parametrize(
    ("name", "preset"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("qwen2.5-7b-instruct", "qwen2.5-7b"),
        ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
    ],
)
def test_a_model_named_as_on_its_hugging_face_page_finds_its_preset(
    tmp_path: Path, name: str, preset: str
) -> None:
    """Fine-tuning an instruct model is the common case; 'llama-3.1-8b-instruct' or the repo id copied
    from the model page were 'unknown preset', though the architecture is the base model's."""
    path = tmp_path / "job.toml"
    path.write_text(LORA.replace('preset = "llama-3-8b"', f'preset = "{name}"'), encoding="utf-8")
    model = load_workload(path).model
    assert model is not None and model.preset == preset
    assert f"'{name}' read as preset {preset}" in model.source


def test_a_different_model_is_still_unknown(tmp_path: Path) -> None:
    message = _error(tmp_path, LORA.replace('preset = "llama-3-8b"', 'preset = "mistral-7b-v0.3"'))
    assert "unknown preset 'mistral-7b-v0.3'" in message
