"""`gpuwise bench compare`: results side by side with money per unit of work, prices from --price, the run
or the catalog; anything that is not a results file is bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuwise.bench.compare import catalog_price
from gpuwise.cli.main import main


def _suite(tokens_per_s: float, images_per_s: float, **machine: Any) -> dict[str, Any]:
    base = {"gpu": "H100", "gpus": 1, "provider": None, "instance_type": None, "price_usd_per_hour": None}
    return {
        "machine": {**base, **machine},
        "results": [
            {"task": "gemm_bf16", "value": 700.0, "unit": "TFLOPS", "peak": 989.4, "fraction_of_peak": 0.707},
            {"task": "train_step_transformer", "value": tokens_per_s, "unit": "tokens/s"},
            {"task": "train_step_cnn", "value": images_per_s, "unit": "images/s"},
            {"task": "h2d_bandwidth", "value": None, "unit": "GB/s", "reason": "no GPU"},
        ],
        "started_at": "2026-12-01T20:00:00Z",
        "gpuwise_version": "0.1.0",
    }


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_money_per_unit_of_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.json", _suite(100_000, 2_000, price_usd_per_hour=3.6))
    b = _write(tmp_path / "b.json", _suite(50_000, 1_000))
    task = _write(
        tmp_path / "t.json",
        {
            "machine": {"gpu": "L40S", "gpus": 1},
            "task": {"unit": "frames", "seconds_per_unit": 2.0, "units": 10},
        },
    )
    assert (
        main(
            [
                "bench",
                "compare",
                str(a),
                str(b),
                str(task),
                "--price",
                "3.6",
                "--price",
                "1.8",
                "--price",
                "0.9",
                "--json",
            ]
        )
        == 0
    )
    cols = json.loads(capsys.readouterr().out)["columns"]
    # $3.6/h at 100k tokens/s = 360M tokens/h → $0.01 per 1M tokens; $1.8/h at half the speed: the same
    assert cols[0]["usd_per_1m_training_tokens"] == pytest.approx(0.01)
    assert cols[1]["usd_per_1m_training_tokens"] == pytest.approx(0.01)
    assert cols[0]["usd_per_1k_images"] == pytest.approx(3.6 / (2000 * 3600) * 1000)
    assert cols[2]["usd_per_unit"] == pytest.approx(0.9 / 1800)  # 1800 frames per hour
    assert cols[0]["values"]["h2d_bandwidth"]["value"] is None
    assert main(["bench", "compare", str(a), str(b), str(task)]) == 0
    table = capsys.readouterr().out
    words = " ".join(table.replace("│", " ").split())
    assert "$0.01" in words and "s/frames" in words and "gemm_bf16" in words and "$ per unit" in words
    # money per unit says its unit: tasks in other units (frames, steps) share the row
    assert main(["bench", "compare", str(task), "--price", "0.9"]) == 0
    assert "$0.0005/frames" in capsys.readouterr().out


def test_price_recorded_then_catalog_then_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recorded = _write(
        tmp_path / "r.json", _suite(1, 1, price_usd_per_hour=2.5, provider="aws", instance_type="p5.48xlarge")
    )
    catalog = _write(tmp_path / "c.json", _suite(1, 1, provider="aws", instance_type="p5.48xlarge"))
    unknown = _write(tmp_path / "u.json", _suite(1, 1))
    assert main(["bench", "compare", str(recorded), str(catalog), str(unknown), "--json"]) == 0
    cols = json.loads(capsys.readouterr().out)["columns"]
    assert cols[0]["price_usd_per_hour"] == 2.5 and cols[0]["price_source"] == "recorded with the run"
    expected = catalog_price("aws", "p5.48xlarge")
    assert expected is not None and cols[1]["price_usd_per_hour"] == expected[0]
    assert cols[1]["price_source"].startswith("catalog")
    assert cols[2]["price_usd_per_hour"] is None and cols[2]["usd_per_1m_training_tokens"] is None


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[1, 2, 3]", "is not a gpuwise bench result"),
        ('{"machine": {}, "results": [{"value": 1}]}', "is not a gpuwise bench result"),
        ('{"results": []}', "no 'machine' object"),
        ("not json", "Results file"),
    ],
)
def test_not_a_results_file_is_bad_input(
    content: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.json"
    path.write_text(content, encoding="utf-8")
    assert main(["bench", "compare", str(path)]) == 2
    captured = capsys.readouterr()
    assert words in captured.err and "To fix:" in captured.err and captured.out == ""


def test_price_count_must_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(_write(tmp_path / f"{i}.json", _suite(1, 1))) for i in range(3)]
    assert main(["bench", "compare", *files, "--price", "1", "--price", "2"]) == 2
    assert "2 --price values for 3 files" in capsys.readouterr().err
    assert main(["bench", "compare", str(tmp_path / "missing.json")]) == 2


def test_a_price_under_a_dollar_shows_its_cents(capsys: pytest.CaptureFixture[str]) -> None:
    """--price 0.5 showed as "$0.5" beside "$2.50": an hourly price under $1 has cents; a per-unit cost
    keeps its significant digits."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "bench"
    files = [str(fixtures / "task-h100-compute.json"), str(fixtures / "task-cpu.json")]
    assert main(["bench", "compare", *files, "--price", "2.5", "--price", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "$0.50 (--price)" in out and "$0.5 (" not in out
    assert "$0.0003472/frames" in out and "$0.0006944/frames" in out
