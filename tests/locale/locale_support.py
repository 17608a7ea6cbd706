"""Shared by tests/locale: the third-party msgids, running gpuwise in Chinese, and the untranslated-text
heuristic."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent

# The words typer prints through the standard library's gettext (typer/core.py, typer/rich_utils.py), and
# the ones gpuwise writes on typer's behalf (cli/localize.py marks those with N_ too). Not in gpuwise's own
# `_()` calls, so the extractor cannot see them: listed here so the catalog is checked for them.
THIRD_PARTY_MSGIDS = (
    "Usage:",
    "Options",
    "Commands",
    "Arguments",
    "Error",
    "Show this message and exit.",
    "[default: {}]",
    "[env var: {}]",
    "[required]",
    "(deprecated) ",
    "default: {default}",
    "env var: {var}",
    "required",
    "(dynamic)",
    "Aborted!",
    "Aborted.",
    "Missing command.",
    "No such command {name!r}.",
    "Try [blue]'{command_path} {help_option}'[/] for help.",
    "Install completion for the current shell.",
    "Show completion for the current shell, to copy it or customize the installation.",
    "No such option: {option}",
    "Missing option {name}.",
    "Missing argument {name}.",
    "Invalid value for {param}: {reason}",
    "Got unexpected extra argument(s) ({args})",
)


def zh_environment(**extra: str) -> dict[str, str]:
    """The environment of a Chinese-speaking user: LANG=zh_CN.UTF-8, nothing else choosing a language."""
    env = {k: v for k, v in os.environ.items() if k not in {"LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"}}
    env.update({"LANG": "zh_CN.UTF-8", "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})
    env.update(extra)
    return env


def gpuwise(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m gpuwise ARGS` in a fresh process (the language is chosen before any module is imported)."""
    return subprocess.run(
        [sys.executable, "-m", "gpuwise", *args],
        capture_output=True,
        text=True,
        env=zh_environment() if env is None else env,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


def display_width(text: str) -> int:
    """Terminal cells `text` takes: 2 for East Asian wide and full-width characters, else 1."""
    return sum(2 if unicodedata.east_asian_width(c) in {"W", "F"} else 1 for c in text)


# --- the untranslated-text heuristic ------------------------------------------------------------------

# Words that are the same in a Chinese sentence as in an English one: names of products, GPUs, clouds,
# formats and tools, units, and the option/command vocabulary the user types. Reviewed: each is a name or
# a symbol, never an English sentence word. (The bundled catalog's provider ids are listed, except `do`,
# DigitalOcean's id, which is also an English word: alone between commas it never makes a run.)
_ALLOWED = """
    gpuwise nvidia amd intel pytorch torch cuda cudnn nccl nvml dcgm smi nvidia-smi npu-smi ascend
    hugging face huggingface transformers deepspeed fsdp zero vllm sglang tensorrt llm
    skypilot kubernetes jobset docker dockerfile torchrun slurm prometheus grafana tmux
    aws gcp azure lambda runpod vast verda datacrunch primeintellect oci coreweave paperspace fluidstack
    aliyun alibaba tencent huawei baidu autodl cloud
    cudo hyperbolic hyperstack ibm jarvislabs nebius seeweb shadeform yotta
    json yaml toml csv html xml url http https s3 oss cos gcs sqlite sdk api cli ssh
    gpu gpus cpu ram vram hbm pcie nvlink sxm mig tf32 fp32 fp16 bf16 fp8 int8 int4 nf4 tflops
    lora qlora dora sft dpo rlhf llama mistral mixtral qwen gemma phi gpt resnet sdxl flux whisper bert
    a100 a10 a10g h100 h200 h800 h20 l4 l20 l40 l40s t4 v100 a800 b200 rtx
    gib gb mib mb tib tb kb ms min s h w mhz
    id ids utc iso usd cny
    linux ubuntu debian
"""
ALLOWED_WORDS = frozenset(_ALLOWED.split())

_BACKTICKS = re.compile(r"`[^`]*`")
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(=\S*)?")
_PATHLIKE = re.compile(r"\S*[/\\_.=:<>\[\]{}$@#]\S*")  # paths, file names, ids, metric names, keys
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def english_runs(text: str, *, words: int = 3, quoted: tuple[str, ...] = ()) -> list[str]:
    """Runs of `words`+ plain English words left once code, options, names and allowed terms are removed:
    what a Chinese screen should not contain. A run that is part of one of the `quoted` strings (bundled
    data shown as it is, see DATA_KEYS) is not counted."""
    exempt = [run for q in quoted for run in _runs(q, 1)]
    return [run for run in _runs(text, words) if not any(run in e for e in exempt)]


def _runs(text: str, words: int) -> list[str]:
    found: list[str] = []
    for line in text.splitlines():
        bare_line = _OPTION.sub(" | ", _BACKTICKS.sub(" | ", line))
        tokens = _PATHLIKE.sub(" | ", bare_line).split()
        run: list[str] = []
        for token in [*tokens, "|"]:
            bare = token.strip(",.;:!?()\"'“”‘’（）：，。；")
            plain = bool(_WORD.fullmatch(bare)) and not bare.isupper() and bare.lower() not in ALLOWED_WORDS
            if plain and not any(c.isdigit() for c in bare):
                run.append(bare)
                continue
            if len(run) >= words:
                found.append(" ".join(run))
            run = []
    return found


# Bundled reference data shown as it is, in the language it was published in: the titles of the datasheets
# and papers a figure cites, and the spec table's notes on them. Exempt from the heuristic on the screens
# that show them (the strings come from the same command's --json).
DATA_KEYS = frozenset({"source", "notes"})


def data_strings(value: object) -> list[str]:
    """Every string under a DATA_KEYS key of a JSON document."""
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k in DATA_KEYS and isinstance(v, str)]
        return found + [s for v in value.values() for s in data_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in data_strings(v)]
    return []
