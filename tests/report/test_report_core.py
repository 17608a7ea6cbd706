"""The report's pure parts: sampling intervals, unknown utilization, run windows and --since."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpuwise.cli.report import parse_since
from gpuwise.errors import ConfigError
from gpuwise.report.figures import sample_intervals, utilization
from gpuwise.report.reader import merge_windows
from gpuwise.report.rows import SampleBucket

NOW = 1_795_000_000.0


def _bucket(  # noqa: PLR0917 - a bucket written as a row of numbers
    gpu: int, bucket: int, samples: int, known: int, util_sum: float, interval: float
) -> SampleBucket:
    first = bucket * 3600.0
    return SampleBucket(
        gpu, bucket, samples, known, util_sum, 0, first, first + (samples - 1) * interval, None
    )


def test_a_gpu_with_no_reading_has_unknown_utilization_not_zero() -> None:
    """Every sample lost: the GPU-hours are known (the samples were taken), their utilization is not."""
    u = utilization([_bucket(0, 10, 360, 0, 0.0, 10.0)], None)
    assert u["gpu_hours"] == 1.0 and u["unknown_util_gpu_hours"] == 1.0
    assert u["util_mean_pct"] is None and u["by_gpu"][0]["util_mean_pct"] is None
    assert u["machine_cost_usd"] is None  # no price: no money, not $0


def test_each_gpu_keeps_its_own_interval_and_an_hour_holds_at_most_an_hour() -> None:
    buckets = [_bucket(0, 1, 360, 360, 360 * 50.0, 10.0), _bucket(1, 1, 60, 60, 60 * 100.0, 60.0)]
    assert sample_intervals(buckets) == {0: 10.0, 1: 60.0}
    u = utilization(buckets, 2.0)
    assert u["gpu_hours"] == 2.0 and u["util_mean_pct"] == 75.0  # 1 h at 50 % and 1 h at 100 %
    assert u["machine_hours"] == 1.0 and u["machine_cost_usd"] == 2.0
    # a GPU sampled once per hour has no interval to go by: its time is said to be unknown
    lone = utilization([_bucket(2, 1, 1, 1, 50.0, 10.0)], None)
    assert lone["gpu_hours"] == 0.0 and "not known" in lone["missing"][0]


def test_overlapping_run_windows_are_merged() -> None:
    assert merge_windows([(5, 9), (0, 3), (2, 4), (9, 9), (8, 12)]) == [(0, 4), (5, 12)]


def test_since_takes_durations_and_dates() -> None:
    assert parse_since("30d", NOW) == NOW - 30 * 86400
    assert parse_since("12h", NOW) == NOW - 12 * 3600
    assert parse_since("2", NOW) == NOW - 2 * 86400  # a bare number is days
    assert parse_since("2026-11-01", NOW) == datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    assert parse_since("2026-11-01T02:00:00+02:00", NOW) == datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    with pytest.raises(ConfigError, match="in the future"):
        parse_since(datetime.fromtimestamp(NOW + 86400, UTC).isoformat(), NOW)
    for empty in ("0", "0d", "0h"):  # an empty window said "nothing recorded yet" over months of history
        with pytest.raises(ConfigError, match="no time at all"):
            parse_since(empty, NOW)
