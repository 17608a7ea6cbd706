"""The CLI shell: exit codes, error paragraphs, --version, and cheap start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuwise.cli.entry import apply_language
from gpuwise.cli.main import main
from gpuwise.errors import ConfigError, GpuwiseError, NotFoundError, close_matches

REPO = Path(__file__).resolve().parent.parent


def test_version_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "gpuwise" in capsys.readouterr().out


def test_unknown_command_is_usage_error() -> None:
    assert main(["no-such-command"]) == 2


@pytest.mark.parametrize(
    ("lang", "expected"),
    [
        ("en", "Did you mean 'offers'? To fix: see `gpuwise catalog --help`"),
        ("zh", "没有这个命令 'offer'。你是不是想用 'offers'？解决方法："),
    ],
)
def test_a_mistyped_command_gets_its_suggestion_as_one_sentence(
    lang: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """typer appends "Did you mean …?" to click's sentence; the full stop before "To fix" followed the
    question mark ("'offers'?. To fix"), and in Chinese the suggestion stayed English after a "。."."""
    assert main(["--lang", lang, "catalog", "offer"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert expected in err
    assert "?." not in err and "。." not in err and "？。" not in err


def test_error_renders_what_why_fix() -> None:
    err = ConfigError("Workload file x.toml: unknown key 'epoch'", why="keys are checked", fix="rename it")
    assert err.render() == "Workload file x.toml: unknown key 'epoch'. Keys are checked. To fix: rename it."
    assert err.exit_code == 2
    assert GpuwiseError("a fault").exit_code == 1


def test_not_found_suggests_close_matches() -> None:
    err = NotFoundError("GPU", "H10O", ["H100", "H200", "A100"])
    assert err.matches[0] == "H100"
    assert "Did you mean 'H100'" in err.render()
    assert close_matches("zzzz", ["H100"]) == []


def test_help_does_not_import_heavy_modules() -> None:
    """`gpuwise --help` must stay fast: no NVML, prometheus, plotly, torch, psutil or pydantic at start-up."""
    code = (
        "import sys\n"
        "from gpuwise.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'pynvml', 'prometheus_client', 'plotly', 'numpy', 'fsspec', 'jax')"
        " if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "HEAVY:", out.stdout


def test_error_text_in_brackets_survives(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Error paragraphs are printed literally: '[idle]' in a message must not vanish as rich markup."""
    config = tmp_path / "config.toml"
    config.write_text("[idel]\nx = 1\n")
    recording = REPO / "tests" / "fixtures" / "monitor" / "8x-h100__training__constructed.csv"
    code = main(["monitor", "--once", "--config", str(config), "--replay", str(recording)])
    err = capsys.readouterr().err
    assert code == 2
    assert "[idel]" in err and "[idle]" in err, err


def test_python_dash_m_runs_the_cli() -> None:
    """`python -m gpuwise` failed with "No module named gpuwise.__main__"."""
    out = subprocess.run(
        [sys.executable, "-m", "gpuwise", "--version"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("gpuwise ")
    bad = subprocess.run(
        [sys.executable, "-m", "gpuwise", "no-such-command"], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr


def test_shell_completion_completes_commands_and_subcommands() -> None:
    """Completion is on (`--install-completion`); the shell asks through click's completion variable."""
    exe = Path(sys.executable).with_name("gpuwise")
    env = {"PATH": str(exe.parent), "_GPUWISE_COMPLETE": "complete_bash", "COMP_CWORD": "2"}
    out = subprocess.run(
        [str(exe)], env={**env, "COMP_WORDS": "gpuwise catalog "}, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert {"gpus", "offers", "import", "update"} <= set(out.stdout.split())
    env["COMP_CWORD"] = "1"
    out = subprocess.run(
        [str(exe)], env={**env, "COMP_WORDS": "gpuwise pl"}, capture_output=True, text=True, check=False
    )
    assert out.stdout.split() == ["plan"]


def test_license_file_matches_the_declared_licence() -> None:
    """The metadata said Apache-2.0 but no LICENSE file shipped."""
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text
    assert "Version 2.0, January 2004" in text
    assert 'license = "Apache-2.0"' in (REPO / "pyproject.toml").read_text()


@pytest.mark.parametrize(
    ("why", "shown"),
    [
        ("the file is empty", "The file is empty."),  # an ordinary word: a sentence starts with a capital
        ("instead, use --gpu", "Instead, use --gpu."),
        ("gpuwise reads such files whole", "gpuwise reads such files whole."),  # the product's name
        ("torch is an optional extra", "torch is an optional extra."),  # a library's name
        ("hf_config points at a config.json", "hf_config points at a config.json."),  # a workload key
        ("/data is read-only", "/data is read-only."),  # a path
        ("--spot needs a spot price", "--spot needs a spot price."),  # an option
        ("`pip install x` failed", "`pip install x` failed."),  # code
        ("nvidia-smi answered nothing", "nvidia-smi answered nothing."),  # a command
    ],
)
def test_why_is_capitalised_only_when_it_starts_with_an_ordinary_word(why: str, shown: str) -> None:
    """Before: every why had its first letter raised, so "gpuwise reads …" read "Gpuwise reads …"."""
    assert ConfigError("Bad input", why=why).render() == f"Bad input. {shown}"


def test_a_why_naming_gpuwise_keeps_its_spelling_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "en", "schema", "wrkload"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "gpuwise publishes schemas for: workload." in err
    assert "Gpuwise" not in err


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--lang", "zh", "schema", "wrkload"], "错误：未知的"),  # a GpuwiseError
        (["--lang", "zh", "catalog", "offer"], "错误：没有这个命令"),  # a parsing error
        (["--lang", "en", "schema", "wrkload"], "Error: Unknown schema"),
    ],
)
def test_no_space_follows_the_full_width_colon_of_error(
    args: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "错误： 未知的…", a full-width colon (which holds its own gap) and then a space."""
    assert main(args) == 2
    assert capsys.readouterr().err.startswith(start)


def test_a_bad_lang_in_a_chinese_locale_has_no_space_after_the_colon(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert apply_language(["--lang", "xx", "plan"]) == 2
    assert capsys.readouterr().err.startswith("错误：gpuwise 不支持")


def _interrupted(*_args: object) -> int:
    raise KeyboardInterrupt


@pytest.mark.parametrize("where", ["gpuwise.cli.entry.apply_language", "gpuwise.cli.main.main"])
def test_ctrl_c_before_the_command_starts_exits_130_without_a_traceback(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C in the first half second (Python importing typer, rich, the command's module) escaped
    main() and printed a KeyboardInterrupt traceback."""
    from gpuwise.cli import entry

    monkeypatch.setattr(where, _interrupted)
    monkeypatch.setattr(sys, "argv", ["gpuwise", "plan", "x.toml"])
    with pytest.raises(SystemExit) as done:
        entry.run()
    assert done.value.code == 130
    assert capsys.readouterr().err == ""


def test_chinese_help_has_no_space_after_the_usage_colon(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "用法： gpuwise plan …", the same double gap as "错误： "."""
    assert main(["--lang", "zh", "plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "用法：gpuwise plan" in out
    assert main(["--lang", "en", "plan", "--help"]) == 0
    assert "Usage: gpuwise plan" in capsys.readouterr().out
