"""`gpuwise catalog fetch baidu` is not built: Baidu's documented price API does not say what time a
pay-as-you-go price covers (tests/fixtures/cn_clouds/PROVENANCE.md, "baidu"), so the command says why and
points at `catalog import` instead of writing prices whose unit would be a guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.cli.main import main


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_fetch_baidu_exits_2_saying_why_and_writes_nothing(
    lang: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--lang", lang, "catalog", "fetch", "baidu"]) == 2
    err = " ".join(capsys.readouterr().err.split())  # unwrapped: the console wraps long lines
    assert "Traceback" not in err
    if lang == "en":
        assert "does not say what time a pay-as-you-go price covers" in err
        assert "To fix:" in err and "gpuwise catalog import FILE --provider baidu" in err
    else:
        assert "按需（后付费）价格对应多长时间" in err and "--provider baidu" in err
    assert list(tmp_path.iterdir()) == []
