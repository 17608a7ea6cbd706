"""The built catalog is cached on disk so commands start fast; a damaged cache only means a rebuild."""

from __future__ import annotations

from pathlib import Path

from gpuwise import paths
from gpuwise.catalog import offers


def _fresh_load(tmp_path: Path) -> offers.Catalog:
    offers._CACHE.clear()  # what a new process starts with
    return offers.load_catalog(tmp_path / "no-user-catalog")


def test_second_process_reads_the_cache_and_gets_the_same_catalog(tmp_path: Path) -> None:
    first = _fresh_load(tmp_path)
    cached = list((paths.data_dir() / "cache").glob("catalog-*.pickle"))
    assert len(cached) == 1
    second = _fresh_load(tmp_path)
    assert second is not first
    assert second.offers == first.offers
    assert second.stats == first.stats


def test_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    first = _fresh_load(tmp_path)
    (cache,) = (paths.data_dir() / "cache").glob("catalog-*.pickle")
    cache.write_bytes(b"not a pickle")
    again = _fresh_load(tmp_path)
    assert again.offers == first.offers
    assert cache.read_bytes() != b"not a pickle"  # rewritten whole
