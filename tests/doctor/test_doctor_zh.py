"""`gpuwise --lang zh doctor`: Chinese headings, findings and fixes; JSON that does not change with the
language; every fixed text of the rules translated with its placeholders kept."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.doctor.rules.finding import tr
from gpuwise.doctor.rules.fixes import ERROR_TEXT, FIX, GPU_STATE_TEXT, NO_GPU_HARDWARE, USER_SPACE_MISSING
from gpuwise.locale import use_language

RECORDINGS = Path(__file__).resolve().parent.parent / "fixtures" / "recordings" / "nvidia-smi"
NPU = Path(__file__).resolve().parent.parent / "fixtures" / "npu-smi"


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    yield
    use_language("en")


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    return code, capsys.readouterr().out


def test_report_speaks_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    """A recording with an error, warnings, a note and passed checks: every heading, the verdict and the
    findings' words are Chinese; the ids stay as they are."""
    code, out = _run(["--lang", "zh", "doctor", "--replay", str(RECORDINGS / "query-text"), "--all"], capsys)
    assert code == 1
    for heading in ("错误 (", "警告 (", "说明 (", "已通过 (", "诊断结果与证据", "解决方法", "结论：有问题："):
        assert heading in out
    assert "显存修复正在等待 GPU 重置" in out  # gpu.remap_pending's title
    assert "gpu.remap_pending" in out
    for english in ("Verdict:", "Errors (", "Passed (", "finding and evidence", "reading(s) checked"):
        assert english not in out


def test_json_is_the_same_in_every_language(capsys: pytest.CaptureFixture[str]) -> None:
    """JSON is for programs: `--lang zh doctor --json` prints exactly what the English run prints."""
    args = ["doctor", "--replay", str(RECORDINGS / "query-text"), "--all", "--json"]
    _, english = _run(args, capsys)
    _, chinese = _run(["--lang", "zh", *args], capsys)
    assert json.loads(chinese) == json.loads(english)
    assert not re.search("[\u4e00-\u9fff]", chinese)


def test_fingerprint_compare_in_chinese(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path, recording in ((a, "table/8x-h100__idle__550.90.07.txt"), (b, "query-text")):
        main(["doctor", "--fingerprint", "--replay", str(RECORDINGS / recording)])
        path.write_text(capsys.readouterr().out, encoding="utf-8")
    code, out = _run(["--lang", "zh", "doctor", "--compare", str(a), str(b)], capsys)
    assert code == 1
    assert "指纹差异" in out and "多节点任务要求一致" in out


def test_bad_input_in_chinese(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["--lang", "zh", "doctor", "--path", str(tmp_path / "missing")])
    err = capsys.readouterr().err
    assert code == 2
    assert "不存在" in err and "请给出你的任务所用的数据集或检查点目录" in err


@pytest.mark.parametrize(
    "recording",
    [
        RECORDINGS / "query-text",
        RECORDINGS / "table" / "8x-h100__idle__550.90.07.txt",
        RECORDINGS / "xml" / "2x-rtx-a5000__idle__590.44.01.xml",
        NPU / "910b4-x2-npu-smi-24.1.1.txt",
    ],
    ids=lambda p: p.name,
)
def test_every_recording_exits_as_in_english(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    english, _ = _run(["doctor", "--replay", str(recording), "--all"], capsys)
    chinese, out = _run(["--lang", "zh", "doctor", "--replay", str(recording), "--all"], capsys)
    assert chinese == english
    assert "结论：" in out


def _fixed_texts() -> list[str]:
    texts = [*NO_GPU_HARDWARE, *USER_SPACE_MISSING, *FIX.values()]
    for text in ERROR_TEXT.values():
        texts += list(text)
    for gpu_text in GPU_STATE_TEXT.values():
        texts += list(gpu_text)
    return texts


@pytest.mark.parametrize("text", _fixed_texts(), ids=lambda t: t[:40])
def test_every_fixed_text_is_translated_with_its_placeholders(text: str) -> None:
    use_language("zh")
    chinese = tr(text)
    assert chinese != text
    assert re.search("[\u4e00-\u9fff]", chinese)
    for placeholder in re.findall(r"<index>|<bus id>|<branch>|<id>|\{\w+\}", text):
        assert placeholder in chinese
