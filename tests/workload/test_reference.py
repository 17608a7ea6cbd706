"""The workload reference (docs/workload.md) and `gpuwise schema workload` come from the models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.workload.reference import DESCRIPTIONS, field_paths, json_schema, render_markdown

REPO = Path(__file__).resolve().parent.parent.parent


def test_every_key_has_a_description_and_every_description_a_key() -> None:
    paths = set(field_paths())
    assert sorted(paths - DESCRIPTIONS.keys()) == [], "describe the new keys in workload/reference.py"
    assert sorted(DESCRIPTIONS.keys() - paths) == [], "these described keys no longer exist"


def test_shipped_reference_is_the_generated_one() -> None:
    """docs/workload.md drifts the moment a key changes without `python -m gpuwise.workload.reference`."""
    shipped = (REPO / "docs" / "workload.md").read_text(encoding="utf-8")
    assert shipped == render_markdown(), "run: python -m gpuwise.workload.reference"


def test_reference_lists_defaults_bounds_and_choices() -> None:
    text = render_markdown()
    assert "| `micro_batch` | integer | required | ≥ 1 |" in text
    assert "| `epochs` | number | `1` | > 0 |" in text
    assert '`"zero1"`' in text
    assert "CONTRACTS" not in text


def test_schema_command_prints_a_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "workload"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == json.loads(json.dumps(json_schema()))
    train = schema["$defs"]["TrainSpec"]
    assert train["additionalProperties"] is False
    assert "micro_batch" in train["required"]
    assert train["properties"]["lora_rank"]["description"].startswith("LoRA rank")


def test_schema_of_something_unknown_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "workloads"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Did you mean 'workload'" in captured.err
    assert "To fix:" in captured.err
