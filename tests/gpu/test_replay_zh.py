"""A recording refused as bad input says so in the user's language (the readers' own error texts, which the
doctor classifies by their words, stay as the driver and NVML wrote them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwise.errors import ReplayError
from gpuwise.gpu.replay import load_recording
from gpuwise.gpu.smi_csv import parse_query_csv
from gpuwise.locale import use_language


@pytest.fixture(autouse=True)
def _chinese() -> Iterator[None]:
    use_language("zh")
    yield
    use_language("en")


def test_missing_recording_in_chinese(tmp_path: Path) -> None:
    with pytest.raises(ReplayError) as caught:
        load_recording(tmp_path / "gpu.xml")
    assert "不存在" in caught.value.message
    assert "请给出一份记录的路径" in caught.value.fix


def test_csv_without_utilization_in_chinese() -> None:
    with pytest.raises(ReplayError) as caught:
        parse_query_csv("timestamp, index\n2024/01/01 00:00:00.000, 0\n", source="trace.csv")
    assert "表头" in caught.value.message or "表头" in caught.value.why
    assert "nvidia-smi --query-gpu" in caught.value.fix


def test_parse_problems_in_chinese() -> None:
    """What the doctor shows as a recording's unparsed part: the parser's words, translated."""
    recordings = Path(__file__).resolve().parent.parent / "fixtures" / "recordings" / "nvidia-smi"
    problems = [p.message for p in load_recording(recordings / "query-text").problems]
    assert any("输出被截断或已损坏" in p for p in problems)
    assert any("无法识别的频率事件原因" in p for p in problems)
