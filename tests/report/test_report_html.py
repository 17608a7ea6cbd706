"""`gpuwise report --html`: self-contained, well under the plan report's 5 MB, the same figures as --json,
and in headless Chromium at 1280 px its charts draw and nothing scrolls sideways."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuwise.cli.main import main

# Run after the page's own script: once the charts are drawn (or failed), record the page's width.
_MEASURE = """<script>
(function wait() {
  if (!document.body.dataset.charts) { setTimeout(wait, 50); return; }
  document.body.dataset.scrollWidth = String(document.documentElement.scrollWidth);
})();
</script></body>"""


@pytest.fixture
def page(history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    out = tmp_path / "report.html"
    assert main(["report", "--since", "10d", "--json", "--html", str(out)]) == 0
    return out.read_text(encoding="utf-8"), json.loads(capsys.readouterr().out)


def test_self_contained_small_and_the_same_figures(page: tuple[str, dict]) -> None:
    text, data = page
    assert len(text.encode("utf-8")) < 2.5 * 1024 * 1024  # plotly.js gzip-packed: ~2 MB, not 5 MB
    assert not re.search(r"""(src|href)=["']?https?://""", text)
    assert "<script src=" not in text
    assert "$30.00 over 4 run(s)" in text  # spend total, as --json
    assert data["spend"]["totals"]["cost_usd"] == 30.0
    assert "runs of project llm used 42 % of their GPU-hours" in text
    assert "4.0 GPU-h sampled, busy 48 % of those with a reading" in text
    assert "2.00×" in text and "1.25×" in text  # each run's actual/planned hours


def test_charts_draw_without_horizontal_scroll_at_1280px(
    page: tuple[str, dict], tmp_path: Path, need_program: Callable[[str], str]
) -> None:
    """Guards a page that ships but never draws (plotly.js not unpacked, a script error) or that needs a
    sideways scroll at 1280 px (a table too wide)."""
    chromium = need_program("chromium")
    path = tmp_path / "measured.html"
    path.write_text(page[0].replace("</body>", _MEASURE), encoding="utf-8")
    cmd = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,900", "--hide-scrollbars",
        "--virtual-time-budget=20000", "--dump-dom", path.as_uri(),
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    dom = out.stdout
    assert out.returncode == 0, out.stderr[-2000:]
    charts = re.search(r'data-charts="([^"]*)"', dom)
    assert charts is not None and charts.group(1) == "4", charts and charts.group(1)
    assert dom.count('class="main-svg"') >= 4, "plotly did not create its SVGs"
    assert len(re.findall(r'class="point"', dom)) >= 2  # the bars and the planned-vs-actual markers
    width = re.search(r'data-scroll-width="(\d+)"', dom)
    assert width is not None and int(width.group(1)) <= 1280
