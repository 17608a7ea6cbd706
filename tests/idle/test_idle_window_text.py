"""Windows the user set are said as set: rounding said "window 2 min reached" for `--window-min 1.5` (so the
stop looked half a minute early) and "1 s" for 0.02 min."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.idle.policy import fmt_min, fmt_window

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "idle"


SAID = [(0.02, "1.2 s"), (0.5, "30 s"), (1.5, "1.5 min"), (2.25, "2.25 min"), (62.5, "62.5 min")]


@pytest.mark.parametrize(("window_min", "said"), SAID)
def test_a_window_is_said_as_set(window_min: float, said: str) -> None:
    assert fmt_window(window_min * 60) == said


def test_measured_durations_keep_whole_units() -> None:
    assert (fmt_min(95), fmt_min(1.2), fmt_min(3600)) == ("2 min", "1 s", "60 min")


def test_a_replay_stop_names_the_window_given(capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(FIXTURES / "desktop_noise_tail_3h_5s.csv")
    argv = ["idle", "replay", trace, "--json", "--window-min", "1.5", "--held-window-min", "2.5"]
    assert main([*argv, "--warn-min", "0.5"]) == 0
    reason = json.loads(capsys.readouterr().out)["reason"]
    assert reason.endswith("window 1.5 min reached"), reason
