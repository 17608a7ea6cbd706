"""The offer catalog, loaded: the bundled provider files with the user's catalog merged over them.

Sources are the bundled provider files (``catalog/data/offers``; provenance in that folder's README.md and
sources.csv) and, when present, the user's catalog (written by ``gpuwise catalog import`` / ``update``),
whose providers replace the bundled providers of the same id. ``build.py`` normalises them; the result is
cached in memory per directory and manifest, and on disk (``cache.py``). Queries live in ``query.py``.

Loading does file I/O (package data and the user catalog). Must not import the CLI, pydantic or anything
heavy.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

from gpuwise.catalog import cache
from gpuwise.catalog.build import build_catalog
from gpuwise.catalog.models import Catalog, SourceFile, SourceInfo
from gpuwise.errors import CatalogError
from gpuwise.locale import _

MANIFEST = "manifest.json"


def _bundled_dir() -> Any:
    return resources.files("gpuwise.catalog").joinpath("data", "offers")


def bundled_source_infos() -> list[SourceInfo]:
    """The bundled files and their dates (data/offers/sources.csv)."""
    text = _bundled_dir().joinpath("sources.csv").read_text(encoding="utf-8")
    return [
        SourceInfo(
            file=r["file"],
            provider=r["provider"],
            price_as_of=date.fromisoformat(r["price_as_of"]),
            date_exact=r["date_exact"].strip().lower() == "true",
            origin=r["origin"],
        )
        for r in csv.DictReader(io.StringIO(text, newline=""))
    ]


def _user_source_files(catalog_dir: Path) -> list[SourceFile]:
    """The user catalog's files, per its manifest. An unreadable manifest is a CatalogError.

    Every file is read bounded and only if regular (a FIFO or a link to /dev/zero must not hang a
    `plan`), and the manifest may name only files inside the catalog folder."""
    from gpuwise.errors import UsageError
    from gpuwise.files import read_regular

    manifest_path = catalog_dir / MANIFEST
    try:
        manifest = json.loads(read_regular(manifest_path, limit=_MAX_USER_FILE_BYTES))
        files: list[SourceFile] = []
        for provider, entry in sorted(manifest["providers"].items()):
            info = SourceInfo(
                file=str(entry["file"]),
                provider=provider,
                price_as_of=date.fromisoformat(entry["price_as_of"]),
                date_exact=bool(entry.get("date_exact", False)),
                origin=str(entry.get("origin", "user catalog")),
            )
            if Path(info.file).name != info.file or info.file in ("", ".", ".."):
                raise ValueError(f"{MANIFEST} names {info.file!r}, not a file in the catalog folder")
            data = read_regular(catalog_dir / info.file, limit=_MAX_USER_FILE_BYTES)
            files.append(SourceFile(info, data.decode("utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, UsageError) as exc:
        raise CatalogError(
            _("The user catalog in {dir} cannot be read: {error}").format(dir=catalog_dir, error=exc),
            why=_("its manifest.json or one of its files is missing or damaged"),
            fix=_("run `gpuwise catalog import` or `gpuwise catalog update` again, or remove {dir}").format(
                dir=catalog_dir
            ),
        ) from exc
    return files


_MAX_USER_FILE_BYTES = 64 << 20  # as catalog import's own bound (store.MAX_FILE_BYTES)
_CACHE: dict[tuple[str, str], Catalog] = {}


def _manifest_stamp(manifest: Path) -> str | None:
    """What changes whenever an import commits (a new inode per atomic rename; timestamps alone can
    repeat within one clock tick). None when there is no manifest."""
    try:
        st = manifest.stat()
    except OSError:
        return None
    return f"{st.st_mtime_ns}-{st.st_ino}-{st.st_size}"


def load_catalog(catalog_dir: Path | None = None) -> Catalog:
    """The bundled catalog, with the user catalog in ``catalog_dir`` (default: the user data dir) merged
    over it provider by provider. Cached per directory and manifest."""
    if catalog_dir is None:
        from gpuwise import paths

        catalog_dir = paths.user_catalog_dir()
    stamp = _manifest_stamp(catalog_dir / MANIFEST)
    key = (str(catalog_dir) if stamp else "", stamp or "")
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    disk_key = _disk_cache_key(catalog_dir, stamp or "")
    catalog = cache.read(_data_dir(), disk_key) if disk_key else None
    if catalog is None:
        try:
            user_files = _user_source_files(catalog_dir) if stamp else []
        except CatalogError:
            if _manifest_stamp(catalog_dir / MANIFEST) == stamp:
                raise
            # an import committed while we read: its old files are gone, so read the new catalog
            return load_catalog(catalog_dir)
        replaced = {f.info.provider for f in user_files}
        bundled = _bundled_dir()
        files = [
            SourceFile(info, bundled.joinpath(info.file).read_text(encoding="utf-8"))
            for info in bundled_source_infos()
            if info.provider not in replaced
        ]
        location = f"bundled + user catalog {catalog_dir}" if user_files else "bundled"
        catalog = build_catalog([*files, *user_files], location=location)
        if disk_key:
            cache.write(_data_dir(), disk_key, catalog)
    _CACHE[key] = catalog
    return catalog


# The built catalog is cached on disk as plain JSON (catalog/cache.py says why and what it costs).


def _data_dir() -> Path:
    from gpuwise import paths

    return paths.data_dir()


def _disk_cache_key(catalog_dir: Path, manifest_stamp: str) -> str | None:
    from gpuwise import __version__
    from gpuwise.catalog import aws, build, csvrows, models, normalise, skypilot, specs

    bundled = _bundled_dir()
    if not isinstance(bundled, Path):  # installed in a zip: no cheap stat, no cache
        return None
    # every module whose code shapes the built catalog: a change to any of them must rebuild it
    built_by = (build, normalise, skypilot, aws, csvrows, models, specs, cache)
    code = [Path(__file__), *(Path(m.__file__) for m in built_by if m.__file__)]
    # and the user catalog's own files: one damaged or removed by hand must not be served from the cache
    # (a fresh build reports it, as `catalog stats` does), though no import changed the manifest
    user = sorted(catalog_dir.glob("*")) if manifest_stamp else []
    return cache.cache_key(
        f"{__version__}|{catalog_dir}|{manifest_stamp}", [*code, *sorted(bundled.rglob("*")), *user]
    )
