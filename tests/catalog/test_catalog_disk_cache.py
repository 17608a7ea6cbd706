"""The built catalog is cached on disk as plain JSON so commands start fast; a damaged, foreign or hostile
cache only means a rebuild, and nothing in the cache directory can run code."""

from __future__ import annotations

import json
import os
import pickle
from datetime import date
from pathlib import Path

import pytest

from gpuwise import paths
from gpuwise.catalog import cache, offers


def _fresh_load(tmp_path: Path) -> offers.Catalog:
    offers._CACHE.clear()  # what a new process starts with
    return offers.load_catalog(tmp_path / "no-user-catalog")


def _cache_file() -> Path:
    (found,) = (paths.data_dir() / "cache").glob("catalog-*")
    return found


def test_second_process_reads_the_cache_and_gets_the_same_catalog(tmp_path: Path) -> None:
    first = _fresh_load(tmp_path)
    assert _cache_file().suffix == ".json"
    key = offers._disk_cache_key(tmp_path / "no-user-catalog", "")
    assert key is not None
    assert cache.read(paths.data_dir(), key) == first  # the cache is valid, so it is really used
    second = _fresh_load(tmp_path)
    assert second is not first
    assert second == first  # every offer, stat, date and source, exactly


@pytest.mark.parametrize(
    "damage",
    [
        b"not json",
        b"",
        b'{"format": 1}',
        b"[" * 100_000,  # deep nesting: RecursionError inside json, still just a rebuild
    ],
)
def test_damaged_cache_is_rebuilt(tmp_path: Path, damage: bytes) -> None:
    first = _fresh_load(tmp_path)
    cache_file = _cache_file()
    cache_file.write_bytes(damage)
    again = _fresh_load(tmp_path)
    assert again == first
    assert _cache_file().read_bytes() != damage  # rewritten whole


def test_a_cache_with_wrong_types_is_not_trusted(tmp_path: Path) -> None:
    first = _fresh_load(tmp_path)
    cache_file = _cache_file()
    doc = json.loads(cache_file.read_text())
    doc["offer_columns"][9][0] = "1.0"  # a price as a string
    cache_file.write_text(json.dumps(doc))
    assert _fresh_load(tmp_path) == first
    doc["offer_columns"][9][0] = float("nan")
    cache_file.write_text(json.dumps(doc))
    assert _fresh_load(tmp_path) == first


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch PWNED",))


def test_a_pickle_planted_in_the_cache_dir_is_never_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    key = offers._disk_cache_key(tmp_path / "no-user-catalog", "")
    assert key is not None
    planted = paths.data_dir() / "cache" / f"catalog-{key}.pickle"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(pickle.dumps(_Boom()))
    # the JSON path is taken too: a pickle under the name the cache reads is just "not JSON"
    cache.cache_path(paths.data_dir(), key).write_bytes(pickle.dumps(_Boom()))
    _fresh_load(tmp_path)
    assert not (tmp_path / "PWNED").exists()
    assert not planted.exists()  # the old format's file is removed when the cache is written


def test_a_fifo_at_the_cache_path_does_not_hang(tmp_path: Path) -> None:
    key = offers._disk_cache_key(tmp_path / "no-user-catalog", "")
    assert key is not None
    path = cache.cache_path(paths.data_dir(), key)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    assert cache.read(paths.data_dir(), key) is None
    assert _fresh_load(tmp_path).offers  # built instead


def _catalog_modules_imported_by(module: str, seen: set[str]) -> set[str]:
    """Every gpuwise.catalog module ``module`` imports, transitively (read from the source, not run)."""
    import ast

    folder = Path(offers.__file__).parent
    seen.add(module)
    for node in ast.walk(ast.parse((folder / f"{module}.py").read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if node.module == "gpuwise.catalog":
            children = [a.name for a in node.names]
        else:
            children = [node.module.removeprefix("gpuwise.catalog.")]
        for child in children:
            if child not in seen and (folder / f"{child}.py").is_file():
                _catalog_modules_imported_by(child, seen)
    return seen


def test_the_cache_key_covers_every_module_that_builds_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module left out of the key could change how offers are built while old caches stay "valid".
    files: list[Path] = []

    def recording_key(parts: str, paths: list[Path]) -> str | None:
        files.extend(paths)
        return "k"

    monkeypatch.setattr(cache, "cache_key", recording_key)
    assert offers._disk_cache_key(tmp_path / "no-user-catalog", "") == "k"
    keyed = {p.stem for p in files if p.suffix == ".py"}
    needed = _catalog_modules_imported_by("offers", set())
    assert {"build", "skypilot", "aws", "normalise"} <= needed  # the walk really follows the imports
    assert needed - keyed == set()


def test_a_user_catalog_file_changed_by_hand_is_not_served_from_the_cache(tmp_path: Path) -> None:
    # the cache was keyed by the manifest alone: with a file removed by hand, `catalog stats` said the user
    # catalog was damaged while `catalog offers` and `plan` went on serving its old offers from the cache
    from gpuwise.catalog.store import install_user_catalog, read_import_files
    from gpuwise.errors import CatalogError

    src = tmp_path / "mine.csv"
    src.write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"
        "box-1,H100,1,16,128,1.23,,moon-1\n"
        "box-2,H100,2,32,256,2.46,,moon-1\n"
    )
    target = tmp_path / "catalog"
    today = date(2026, 12, 2)
    install_user_catalog(target, read_import_files([("mine", src)], today=today), today=today)
    offers._CACHE.clear()
    assert offers.load_catalog(target).offers_by_provider()["mine"] == 2
    (target / "mine.csv").write_text(src.read_text().splitlines()[0] + "\nbox-1,H100,1,16,128,1.23,,moon-1\n")
    offers._CACHE.clear()  # a new process, same manifest
    assert offers.load_catalog(target).offers_by_provider()["mine"] == 1
    (target / "mine.csv").unlink()
    offers._CACHE.clear()
    with pytest.raises(CatalogError, match="cannot be read"):
        offers.load_catalog(target)
