"""plan and estimate in Simplified Chinese: headings, verdicts, the "nothing qualifies" answer and --help
in Chinese, JSON keys unchanged, and every translatable string of the plan/estimate room in the catalog.

Each command runs in its own process (`python -m gpuwise`): the language is chosen once per process,
before the command's module is imported, exactly as a user meets it.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwise.locale.build import PO_DIR
from gpuwise.locale.catalog import read_po_files

ROOT = Path(__file__).resolve().parents[2]
LORA = str(ROOT / "examples" / "llama3-8b-lora.toml")
PRETRAIN = str(ROOT / "examples" / "llama3-8b-pretrain.toml")
SRC = ROOT / "src" / "gpuwise"
# The files whose strings this room's catalog (plan.po) translates.
ROOM_FILES = sorted(
    [
        *(SRC / "plan").glob("*.py"),
        *(SRC / "estimate").glob("*.py"),
        *(
            SRC / "cli" / name
            for name in ("plan.py", "plan_table.py", "estimate.py", "presets.py", "schema.py")
        ),
    ]
)


def gpuwise(*args: str, lang: str | None = "zh", env: dict[str, str] | None = None) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "gpuwise", *(["--lang", lang] if lang else []), *args]
    done = subprocess.run(
        argv,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100", **(env or {})},
    )
    return done.returncode, done.stdout, done.stderr


def test_plan_prints_chinese_headings_from_the_locale_variables() -> None:
    # LANG alone (no --lang) chooses Chinese; LANGUAGE and LC_ALL would outrank it, so they are cleared
    code, out, _err = gpuwise(
        "plan", LORA, "--top", "3", lang=None, env={"LANG": "zh_CN.UTF-8", "LANGUAGE": "", "LC_ALL": ""}
    )
    assert code == 0
    assert "个选项符合条件" in out  # "N options qualify"
    assert "最便宜" in out and "最快" in out  # the picks
    for heading in ("报价", "计价", "小时", "总计"):  # the table's columns
        assert heading in out
    assert "位于帕累托前沿" in out  # the legend
    assert "共考察" in out and "价格日期" in out  # the footer
    for english in ("options qualify", "choices by", "Considered ", "Prices as of", "on the Pareto front"):
        assert english not in out


def test_plan_json_keys_and_ids_do_not_change_with_the_language() -> None:
    code_en, out_en, _ = gpuwise("plan", LORA, "--top", "3", "--json", lang="en")
    code_zh, out_zh, _ = gpuwise("plan", LORA, "--top", "3", "--json")
    assert code_en == code_zh == 0
    en, zh = json.loads(out_en), json.loads(out_zh)
    assert en.keys() == zh.keys()
    assert [o.keys() for o in en["options"]] == [o.keys() for o in zh["options"]]
    ids = ("provider", "instance_type", "region", "pricing", "bottleneck", "cost_usd")
    assert [[o[k] for k in ids] for o in en["options"]] == [[o[k] for k in ids] for o in zh["options"]]
    assert en["picks"] == zh["picks"] and en["rejected"] == zh["rejected"]


def test_plan_pick_and_currency_lines_in_chinese() -> None:
    code, out, _err = gpuwise("plan", LORA, "--currency", "CNY", "--top", "2")
    assert code == 0
    assert "金额以 CNY（¥）显示" in out  # the rate line
    code, out, _err = gpuwise("plan", LORA, "--currency", "CNY", "--pick", "1")
    assert code == 0
    assert "  价格：" in out and "  假设：" in out and "¥" in out  # --pick's figures


def test_nothing_qualifies_is_answered_in_chinese() -> None:
    code, _out, err = gpuwise("plan", PRETRAIN, "--gpu", "T4:1")
    assert code == 1
    assert "没有符合条件的报价" in err
    assert "工作负载在其显存中放不下" in err  # what removed the T4 configurations
    assert "去掉 gpus 约束可得到" in err  # the relaxation


def test_estimate_verdict_and_remedies_in_chinese_json_unchanged() -> None:
    code, out, _err = gpuwise("estimate", LORA, "--gpu", "L4")
    assert code == 0
    assert "每张 GPU 的显存" in out and "放不下" in out
    assert "怎样能放得下" in out and "相比现在" in out  # the remedies table
    assert "速度和时间" in out and "假设" in out
    assert "does not fit" not in out and "What would fit" not in out
    _, out_en, _ = gpuwise("estimate", LORA, "--gpu", "L4", "--json", lang="en")
    _, out_zh, _ = gpuwise("estimate", LORA, "--gpu", "L4", "--json")
    en, zh = json.loads(out_en), json.loads(out_zh)
    assert en.keys() == zh.keys() and zh["fits"] is False and zh["fit_verdict"] == en["fit_verdict"]
    assert [r["set"] for r in en["remedies"]] == [r["set"] for r in zh["remedies"]]


@pytest.mark.parametrize(
    ("command", "words"),
    [("plan", "排序依据"), ("estimate", "GPU 名称"), ("presets", "输出 JSON"), ("schema", "要哪种文件的")],
)
def test_options_help_is_chinese(command: str, words: str) -> None:
    code, out, _err = gpuwise(command, "--help")
    assert code == 0
    assert words in out


def test_command_docstrings_are_in_the_catalog() -> None:
    """typer shows a command's docstring as inspect.cleandoc gives it: that exact text has a translation."""
    from gpuwise.cli.estimate import estimate
    from gpuwise.cli.plan import plan
    from gpuwise.cli.presets import presets
    from gpuwise.cli.schema import schema

    translated = {e.msgid for e in read_po_files(PO_DIR.glob("*.po")) if any(e.msgstr) and not e.fuzzy}
    for command in (plan, estimate, presets, schema):
        assert inspect.cleandoc(command.__doc__ or "") in translated, command.__name__


def _room_messages() -> list[tuple[str, str]]:
    """(msgid, where) for every _() / N_() / ngettext() literal in the room's files."""
    found: list[tuple[str, str]] = []
    for path in ROOM_FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"_", "N_", "ngettext"}
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append((node.args[0].value, f"{path.relative_to(ROOT)}:{node.lineno}"))
    return found


def test_every_translatable_string_of_the_room_is_translated() -> None:
    translated = {e.msgid for e in read_po_files(PO_DIR.glob("*.po")) if any(e.msgstr) and not e.fuzzy}
    messages = _room_messages()
    assert len(messages) > 200  # the walk found the room's strings
    missing = [f"{where}: {msgid!r}" for msgid, where in messages if msgid not in translated]
    assert not missing, "\n".join(missing)
