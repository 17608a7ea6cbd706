"""gpuwise.safe_read: the bounded reader behind every user TOML and JSON file (workloads, config.toml,
doctor fingerprints). Red-team findings: 500 levels of nesting raised RecursionError (a traceback), and a
key of thousands of dotted parts kept tomllib busy for seconds."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest

from gpuwise import safe_read
from gpuwise.config import load_config
from gpuwise.errors import ConfigError
from gpuwise.workload import load_workload

DEEP_TOML = {
    "arrays": "a = " + "[" * 500 + "]" * 500 + "\n",
    "inline tables": "a = " + "{b = " * 500 + "1" + "}" * 500 + "\n",
    "tables 40 deep": "[" + ".".join(["t"] * 40) + "]\nx = 1\n",
    "arrays 40 deep": "a = " + "[" * 40 + "]" * 40 + "\n",
}


@pytest.mark.parametrize("text", list(DEEP_TOML.values()), ids=list(DEEP_TOML))
def test_deep_toml_is_bad_input_for_workloads_and_config(text: str, tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"levels deep|dotted parts"):
        load_workload(path)
    with pytest.raises(ConfigError, match=r"levels deep|dotted parts"):
        load_config(path)


def test_a_key_of_thousands_of_dotted_parts_is_refused_at_once(tmp_path: Path) -> None:
    """20,000 parts took tomllib about 6 s (quadratic): refused before parsing."""
    path = tmp_path / "dots.toml"
    path.write_text("a" + ".b" * 20_000 + " = 1\n")
    started = time.monotonic()
    with pytest.raises(ConfigError, match="dotted parts"):
        load_workload(path)
    assert time.monotonic() - started < 1


def test_brackets_and_dots_inside_strings_and_comments_are_not_structure(tmp_path: Path) -> None:
    text = (
        'a = "' + "[" * 100 + "." * 100 + '"\n'
        "b = '" + "{" * 100 + "'\n"
        "# " + "[" * 100 + "\n"
        'c = """\n' + "[." * 100 + '\n"""\n'
        "d = [1.5, 2.5, {x = 3.25}]\n"
        '"e.f".g = 1\n'
    )
    data = safe_read.parse_toml(text, "test", fix="-")
    assert data["d"] == [1.5, 2.5, {"x": 3.25}]


def test_deep_json_is_bad_input(tmp_path: Path) -> None:
    for depth in (40, 500, 100_000):
        path = tmp_path / f"deep{depth}.json"
        path.write_text("[" * depth + "]" * depth)
        with pytest.raises(ConfigError, match="levels deep"):
            safe_read.load_json(path, what="Fingerprint", fix="-")


def test_json_nan_and_infinity_are_not_json(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text('{"x": NaN}')
    with pytest.raises(ConfigError, match="not JSON"):
        safe_read.load_json(path, what="Fingerprint", fix="-")


def test_size_is_capped(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_text("# x\n" * 1000)
    assert safe_read.read_text(path, what="Workload file", fix="-", max_bytes=4000) == "# x\n" * 1000
    with pytest.raises(ConfigError, match="larger than 3 KiB"):
        safe_read.read_text(path, what="Workload file", fix="-", max_bytes=3 << 10)


def test_pipes_and_devices_are_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(ConfigError, match="named pipe"):
        safe_read.read_bytes(fifo, what="Config file", fix="-")
    with pytest.raises(ConfigError, match="not a regular file"):
        safe_read.read_bytes(Path("/dev/zero"), what="Config file", fix="-")
    with pytest.raises(ConfigError, match="directory"):
        safe_read.read_bytes(tmp_path, what="Config file", fix="-")
    with pytest.raises(ConfigError, match="does not exist"):
        safe_read.read_bytes(tmp_path / "nope", what="Config file", fix="-")
    assert time.monotonic() - started < 5


def test_our_own_stream_is_read(tmp_path: Path) -> None:
    """`--config <(…)`: a pipe with a writer attached, named /dev/fd/N, is read (under the cap)."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"[monitor]\ninterval_s = 2\n")
    os.close(write_end)
    try:
        assert safe_read.read_text(Path(f"/dev/fd/{read_end}"), what="Config file", fix="-").startswith(
            "[monitor]"
        )
    finally:
        os.close(read_end)


def test_binary_names_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "bin.toml"
    path.write_bytes(b"a = 1\n\xff")
    with pytest.raises(ConfigError, match="byte 6 is not UTF-8"):
        safe_read.read_text(path, what="Workload file", fix="-")


@pytest.mark.parametrize(
    "shape",
    [
        lambda n: "a = [" + "1," * (n // 2 - 8) + "]\n",
        lambda n: "".join(f"k{i}" + ".b" * 30 + " = 1\n" for i in range(n // 70)),
    ],
    ids=["long array", "long dotted keys"],
)
def test_the_slowest_toml_shapes_at_the_size_cap_parse_in_bounded_time(shape: object) -> None:
    """At 4 MiB these took tomllib 10-35 s on a busy machine; at the cap they must stay far under 10 s."""
    assert callable(shape)
    text = shape(safe_read.MAX_TOML_BYTES)[: safe_read.MAX_TOML_BYTES]
    started = time.monotonic()
    with contextlib.suppress(ConfigError):  # refused is as good as parsed: what matters is the time
        safe_read.parse_toml(text, "test", fix="-")
    assert time.monotonic() - started < 10


def test_an_integer_longer_than_pythons_limit_is_bad_input() -> None:
    """tomllib raises a plain ValueError for an integer of over 4,300 digits (found by the fuzz suite)."""
    from gpuwise.errors import ConfigError
    from gpuwise.safe_read import parse_toml

    with pytest.raises(ConfigError, match="cannot read"):
        parse_toml('name = "x"\nbig = ' + "9" * 5000 + "\n", "Workload file b.toml", fix="shorten it")
