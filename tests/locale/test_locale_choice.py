"""Choosing the language (--lang beats the locale variables), what stays the same in every language (JSON
keys, the environment of processes started for the user), and the shared formatters in both languages."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from locale_support import gpuwise, zh_environment

from gpuwise.cli.entry import apply_language, requested_language
from gpuwise.errors import ConfigError, NotFoundError
from gpuwise.locale import child_environment, language, language_from_environment, use_language
from gpuwise.locale.formats import currency_symbol, format_date, format_money, format_number

EXAMPLE = "examples/llama3-8b-lora.toml"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW.UTF-8"}, "zh"),
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANGUAGE": "en_GB:zh_CN", "LANG": "zh_CN.UTF-8"}, "en"),  # LANGUAGE first, as gettext reads it
        ({"LANG": "C"}, "en"),
        ({"LANG": "POSIX"}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({}, "en"),
    ],
)
def test_the_locale_variables_choose(environ: dict[str, str], expected: str) -> None:
    assert language_from_environment(environ) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--lang", "en", "plan", "x"], "en"),
        (["--lang=en", "plan"], "en"),
        (["--lang", "ZH", "plan"], "zh"),
        (["--debug", "--lang", "zh", "plan"], "zh"),
    ],
)
def test_lang_beats_the_locale(args: list[str], expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8" if expected == "en" else "en_US.UTF-8")
    assert requested_language(args) == expected


def test_a_command_s_own_lang_is_not_the_root_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGUAGE", "en_US")
    assert requested_language(["plan", "--lang", "zh"]) == "en"


def test_bad_lang_is_bad_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGUAGE", "en_US")
    assert apply_language(["--lang", "fr", "plan"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: --lang 'fr' is not a language gpuwise speaks.")
    assert "To fix: use --lang zh" in err


def test_bad_lang_is_said_in_the_user_s_locale() -> None:
    done = gpuwise("--lang", "fr", "plan", EXAMPLE)
    assert done.returncode == 2
    assert "解决方法：" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_the_user_s_language_goes_back_to_their_processes() -> None:
    environ = {"LANGUAGE": "de_DE", "LANG": "zh_CN.UTF-8"}
    use_language("zh", environ)
    assert environ["LANGUAGE"] == "zh_CN"  # for typer's own words, through the standard library's gettext
    assert child_environment(environ)["LANGUAGE"] == "de_DE"
    use_language("en", environ)
    assert environ["LANGUAGE"] == "de_DE"

    unset = {"LANG": "zh_CN.UTF-8"}
    use_language("zh", unset)
    assert "LANGUAGE" not in child_environment(unset)
    use_language("en", unset)
    assert "LANGUAGE" not in unset


def test_gpuwise_run_s_child_gets_the_user_s_language(tmp_path: Path) -> None:
    """The job `gpuwise run` starts sees the user's own LANGUAGE, not the zh_CN gpuwise set for itself."""
    out = f"{tmp_path}/env.txt"
    script = f"import os; open({out!r}, 'w').write(os.environ.get('LANGUAGE', '<unset>'))"
    done = gpuwise(
        "--lang", "zh", "run", "--checkpoint-dir", str(tmp_path), "--", "python3", "-c", script,
        env=zh_environment(LANGUAGE="fr_FR"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Path(out).read_text(encoding="utf-8") == "fr_FR"


def _keys(value: object, prefix: str = "") -> set[str]:
    if isinstance(value, dict):
        return {f"{prefix}/{k}" for k in value} | {
            x for k, v in value.items() for x in _keys(v, f"{prefix}/{k}")
        }
    if isinstance(value, list):
        return {x for v in value[:3] for x in _keys(v, prefix + "[]")}
    return set()


@pytest.mark.parametrize(
    "command",
    [["estimate", EXAMPLE, "--gpu", "A100-80GB", "--json"], ["plan", EXAMPLE, "--json", "--top", "3"]],
)
def test_json_keys_do_not_change_with_the_language(command: list[str]) -> None:
    zh = gpuwise("--lang", "zh", *command)
    en = gpuwise("--lang", "en", *command)
    assert zh.returncode == en.returncode == 0, zh.stderr + en.stderr
    zh_doc, en_doc = json.loads(zh.stdout), json.loads(en.stdout)
    assert _keys(zh_doc) == _keys(en_doc)
    assert zh_doc.get("schema_version") == en_doc.get("schema_version")


# --- the shared formatters --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "amount", [0.0, 0.00001234, 0.0123, 0.5, 9.999, 12.345, 999.5, 1234.5, 123456.7, -5.5]
)
def test_english_money_is_the_units_formatters_byte_for_byte(amount: float) -> None:
    from gpuwise.units import format_money as units_money
    from gpuwise.units import format_usd

    assert language() == "en"
    assert format_money(amount, "USD", "significant") == format_usd(amount)
    assert format_money(amount, "USD", "rounded") == units_money(amount)


@pytest.mark.parametrize("amount", [0.0123, 12.345, 1234.5, 123456.7])
def test_chinese_money_has_the_english_digits_and_the_locale_s_sign(amount: float) -> None:
    from gpuwise.units import format_usd

    english = format_usd(amount)
    use_language("zh")
    chinese = format_usd(amount)
    assert chinese == "US" + english  # CLDR zh_CN writes dollars US$; the digits are the same
    assert format_money(amount, "CNY", "significant") == english.replace("$", "¥")
    assert currency_symbol("CNY") == "¥"


def test_chinese_dates_and_numbers() -> None:
    assert format_date(date(2025, 2, 28)) == "2025-02-28"
    assert format_number(1234567.891, 2) == "1,234,567.89"
    use_language("zh")
    assert format_date(date(2025, 2, 28)) == "2025年2月28日"
    assert format_number(1234567.891, 2) == "1,234,567.89"  # zh_CN groups and points as English does


def test_english_start_up_does_not_import_babel() -> None:
    import subprocess
    import sys

    code = "import sys; from gpuwise.units import format_usd; format_usd(1.5); print('babel' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# --- errors -------------------------------------------------------------------------------------------


def test_an_error_in_chinese_ends_its_sentences_with_full_stops() -> None:
    use_language("zh")
    error = ConfigError("文件不存在", why="路径拼错了", fix="检查路径")
    assert error.render() == "文件不存在。路径拼错了。解决方法：检查路径。"
    mixed = ConfigError("文件不存在", fix="run `gpuwise catalog gpus`")  # a fix not translated yet
    assert mixed.render() == "文件不存在。解决方法：run `gpuwise catalog gpus`。"


def test_an_error_in_english_is_unchanged() -> None:
    error = NotFoundError("GPU", "H10", ["H100", "H200"], why="not in the table", fix="see the list.")
    assert error.render() == "Unknown GPU 'H10'. Did you mean 'H100'? Not in the table. To fix: see the list."


def test_unknown_name_in_chinese() -> None:
    use_language("zh")
    error = NotFoundError("GPU", "H10", ["H100"])
    assert error.render() == "未知的GPU 'H10'。你是不是想用 'H100'？"


def test_a_parsing_error_in_chinese() -> None:
    done = gpuwise("plan", EXAMPLE, "--top", "x")
    assert done.returncode == 2
    assert done.stderr.startswith("错误：'--top' 的值无效：应为整数")  # no space after a full-width colon
    assert "解决方法：运行 `gpuwise plan --help` 查看可用选项。" in done.stderr


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "No such option: --bogus (Possible options: --gpu, --out)",
            "没有这个选项：--bogus（可用的选项：--gpu, --out）",
        ),
        ("Missing argument 'WORKLOAD'.", "缺少参数 'WORKLOAD'。"),
        ("Got unexpected extra argument(s) (a b)", "多出了无法识别的参数（a b）"),
        ("Option '--top' requires an argument.", "选项 '--top' 需要一个值。"),
        ("No such command 'nope'.", "没有这个命令 'nope'。"),  # typer's own gettext msgid
        ("Something click may say one day", "Something click may say one day"),
    ],
)
def test_click_s_messages_are_matched_by_shape(message: str, expected: str) -> None:
    from gpuwise.cli.localize import translate_usage_message

    use_language("zh")
    if message.startswith("No such command"):
        from gpuwise.locale import _

        message = _("No such command {name!r}.").format(name="nope")
    assert translate_usage_message(message) == expected


@pytest.mark.parametrize("args", [["--lang", "zh"], ["--lang=zh", "--debug"]])
def test_settings_alone_are_gpuwise_alone_in_that_language(args: list[str]) -> None:
    """`gpuwise --lang zh` is what a Chinese user types first: the help, as for `gpuwise` alone (exit 2 like
    it), not an error about a missing command."""
    done = gpuwise(*args, env={**child_environment(), "LANG": "C", "LANGUAGE": ""})
    assert (done.returncode, done.stderr) == (2, "")
    assert "用法：" in done.stdout and "缺少命令" not in done.stdout
