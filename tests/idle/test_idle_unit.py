"""The systemd unit `gpuwise idle install` writes, read back the way systemd reads it (issue 10: a space or
`%` in a path broke the unit). The reader below follows systemd.service(5) "Command lines" and
systemd.unit(5) "Specifiers" for what the unit uses: words split on whitespace unless quoted, C escapes in
quoted words, `%%` for a literal `%` (any other specifier would be expanded), and in ExecStart= `$$` for a
literal `$` (`$NAME` would be substituted). (`systemd-analyze verify` accepts the units too; it is not
installed everywhere, so the test does not rely on it.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.cli.main import main
from gpuwise.idle.unit import render_unit

_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", " ": " "}


class UnexpandedError(Exception):
    """The word would not reach the program as written: systemd would expand or reject part of it."""


def _words(value: str) -> list[str]:
    """Split a value into words as systemd does (extract_first_word with quotes and C escapes)."""
    words: list[str] = []
    i = 0
    while i < len(value):
        if value[i] in " \t":
            i += 1
            continue
        word: list[str] = []
        quote: str | None = None
        while i < len(value) and (quote is not None or value[i] not in " \t"):
            ch = value[i]
            if quote is None and ch in "\"'":
                quote = ch
            elif quote is not None and ch == quote:
                quote = None
            elif ch == "\\":
                nxt = value[i + 1]
                if nxt == "x":
                    word.append(chr(int(value[i + 2 : i + 4], 16)))
                    i += 2
                else:
                    word.append(_ESCAPES[nxt])
                i += 1
            else:
                word.append(ch)
            i += 1
        assert quote is None, f"unbalanced quote in {value!r}"
        words.append("".join(word))
    return words


def _specifiers(word: str) -> str:
    out, i = [], 0
    while i < len(word):
        if word[i] == "%":
            if word[i + 1 : i + 2] != "%":
                raise UnexpandedError(f"specifier %{word[i + 1 : i + 2]} in {word!r}")
            i += 1
        out.append(word[i])
        i += 1
    return "".join(out)


def _variables(word: str) -> str:
    out, i = [], 0
    while i < len(word):
        if word[i] == "$":
            if word[i + 1 : i + 2] != "$":
                raise UnexpandedError(f"variable ${word[i + 1 :]} in {word!r}")
            i += 1
        out.append(word[i])
        i += 1
    return "".join(out)


def read_unit(text: str) -> tuple[list[str], dict[str, str]]:
    """(ExecStart argv, Environment) as systemd would start the service."""
    argv: list[str] = []
    env: dict[str, str] = {}
    for line in text.split("\n"):  # systemd ends a line at \n only (not at U+0085 or U+2028)
        assert not line.endswith("\\"), "a trailing backslash would join the next line"
        key, _, value = line.partition("=")
        if key == "ExecStart":
            argv = [_variables(_specifiers(w)) for w in _words(value)]
        elif key == "Environment":
            for word in _words(value):
                name, eq, setting = _specifiers(word).partition("=")
                assert eq, f"invalid environment assignment {word!r}"
                env[name] = setting
    return argv, env


AWKWARD = ["/opt/my venv/bin/gpuwise", "/srv/100%/gpuwise", "/home/a$HOME/b", '/x/it\'s "q"\\', "/t/ä;b\tc"]


@pytest.mark.parametrize("path", AWKWARD)
def test_awkward_paths_reach_the_program_unchanged(path: str) -> None:
    argv = [path, "-c", "from gpuwise.cli.main import run; run()", "idle", "run", "--config", path + ".toml"]
    text = render_unit(argv, Path(path) / "config", Path(path) / "data")
    got_argv, env = read_unit(text)
    assert got_argv == argv
    assert env == {
        "GPUWISE_CONFIG_DIR": f"{path}/config",
        "GPUWISE_DATA_DIR": f"{path}/data",
        "PYTHONUNBUFFERED": "1",
    }


@settings(max_examples=200)
@given(
    st.lists(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=12))
)
def test_any_path_round_trips(parts: list[str]) -> None:
    path = "/" + "/".join(p.replace("/", "_") for p in parts)
    argv = [path, "idle", "run", "--config", path]
    got_argv, env = read_unit(render_unit(argv, Path(path), Path(path)))
    assert got_argv == argv
    assert env["GPUWISE_DATA_DIR"] == str(Path(path))


def test_install_with_a_space_and_percent_in_the_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "GPU box 100%"
    cfg = home / "my config.toml"
    home.mkdir()
    cfg.write_text("[idle]\nwindow_min = 90\n", encoding="utf-8")
    monkeypatch.setenv("GPUWISE_DATA_DIR", str(home / "data $x"))
    assert main(["idle", "install", "--dry-run", "--config", str(cfg), "--unit-dir", str(tmp_path)]) == 0
    argv, env = read_unit(capsys.readouterr().out)
    assert argv[-5:] == ["idle", "run", "--wait-for-other", "--config", str(cfg.resolve())]
    assert env["GPUWISE_DATA_DIR"] == str((home / "data $x").resolve())
    assert json.dumps(argv)  # plain strings
