"""The built catalog, cached on disk as plain JSON so `plan` and `catalog offers` skip normalising.

Why a cache at all: building the catalog from ~20 source files costs ~90-140 ms of CPU per command; this
cache loads in ~35 ms (measured numbers in the commit that introduced it). Why JSON: the cache sits in
the user data directory, and the pickle it replaces ran any code written there on every `plan`. JSON
only ever yields data, and every value is checked against the type the catalog expects before it is
used: anything unexpected (a damaged, partial, foreign or outdated file) just means "rebuild".

The key covers the gpuwise version, the code that builds the catalog, every bundled file and the user
catalog's manifest, so any change rebuilds. Reading and writing never raise: the cache is only a speed-up.
Must not import the CLI or anything outside the standard library and gpuwise.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Any

from gpuwise.catalog.models import Catalog, CatalogStats, Offer, SourceInfo

FORMAT = 1
_MAX_BYTES = 64 << 20  # the bundled catalog's cache is ~1.2 MB; anything far larger is not ours
_OFFER_FIELDS = tuple(f.name for f in dataclasses.fields(Offer))
_STATS_FIELDS = ("rows_read", "offers_by_provider", "skipped_rows", "dropped_prices", "adjusted")


class _InvalidError(Exception):
    """The cache file does not hold what this code wrote: rebuild."""


def cache_key(parts: str, files: Iterable[Path]) -> str | None:
    """A short digest of ``parts`` and each file's path, size and mtime; None when one cannot be read."""
    digest = hashlib.sha256(parts.encode())
    try:
        for path in files:
            st = path.stat()
            digest.update(f"|{path}|{st.st_size}|{st.st_mtime_ns}".encode())
    except OSError:
        return None
    return digest.hexdigest()[:20]


def cache_path(data_dir: Path, key: str) -> Path:
    return data_dir / "cache" / f"catalog-{key}.json"


# ---------------------------------------------------------------- writing


def _jsonable(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


def dumps(catalog: Catalog, key: str) -> str:
    """The cache document for ``catalog``."""
    doc = {
        "format": FORMAT,
        "key": key,
        "location": catalog.location,
        "sources": {p: d.isoformat() for p, d in catalog.sources.items()},
        "source_files": [
            [i.file, i.provider, i.price_as_of.isoformat(), i.date_exact, i.origin]
            for i in catalog.source_files
        ],
        "stats": {name: getattr(catalog.stats, name) for name in _STATS_FIELDS},
        "offer_fields": list(_OFFER_FIELDS),
        # column by column: each column is checked in one pass on load, then map(Offer, *columns)
        "offer_columns": [[_jsonable(getattr(o, name)) for o in catalog.offers] for name in _OFFER_FIELDS],
    }
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def write(data_dir: Path, key: str, catalog: Catalog) -> None:
    """Replace any older cache with this one; a read-only or full disk only loses the speed-up."""
    from gpuwise.errors import UsageError
    from gpuwise.files import write_atomic

    target = cache_path(data_dir, key)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for old in [*target.parent.glob("catalog-*.json"), *target.parent.glob("catalog-*.pickle")]:
            old.unlink(missing_ok=True)  # *.pickle: the code-running cache of earlier versions
        write_atomic(target, dumps(catalog, key), private=True)
    except (OSError, UsageError, ValueError):
        return


# ---------------------------------------------------------------- reading


def _str(v: Any) -> str:
    if type(v) is not str:
        raise _InvalidError
    return v


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise _InvalidError
    return v


def _date(v: Any) -> date:
    try:
        return date.fromisoformat(_str(v))
    except ValueError:
        raise _InvalidError from None


def _counts(v: Any) -> dict[str, int]:
    if type(v) is not dict or not all(type(k) is str and type(n) is int for k, n in v.items()):
        raise _InvalidError
    return dict(v)


def _column(values: Any, n: int, kind: str) -> list[Any]:
    """One offer column, checked whole: every value of the type ``kind`` names, converted where needed."""
    if type(values) is not list or len(values) != n:
        raise _InvalidError
    if kind == "str":
        if not all(type(v) is str for v in values):
            raise _InvalidError
        return values
    if kind == "str?":
        if not all(v is None or type(v) is str for v in values):
            raise _InvalidError
        return values
    if kind == "bool":
        if not all(type(v) is bool for v in values):
            raise _InvalidError
        return values
    if kind in ("num", "num?"):
        present = [v for v in values if v is not None] if kind == "num?" else values
        # json.dumps writes every float with a point, so json.loads gives floats back: one pass each
        if not all(type(v) is float for v in present) or not all(map(math.isfinite, present)):
            raise _InvalidError
        return values
    if kind in ("date", "date?"):
        seen: dict[Any, date | None] = {None: None} if kind == "date?" else {}
        out = []
        for v in values:
            d = seen.get(v, _MISSING)
            if d is _MISSING:
                d = seen[v] = _date(v)
            out.append(d)
        return out
    # "notes": lists of strings
    if not all(type(v) is list and all(type(x) is str for x in v) for v in values):
        raise _InvalidError
    return [tuple(v) for v in values]


_MISSING: Any = object()
# The type of each Offer field, in field order (checked against the dataclass at import below).
_OFFER_KINDS = {
    "provider": "str",
    "instance_type": "str",
    "region": "str",
    "zone": "str?",
    "gpu": "str",
    "gpus": "num",
    "gpu_memory_gib": "num?",
    "vcpus": "num?",
    "memory_gib": "num?",
    "price_usd_per_hour": "num?",
    "spot_price_usd_per_hour": "num?",
    "currency": "str",
    "price_as_of": "date",
    "price_date_exact": "bool",
    "source": "str",
    "spot_price_as_of": "date?",
    "notes": "notes",
    "gpu_only_price": "bool",
}
assert tuple(_OFFER_KINDS) == _OFFER_FIELDS, "cache.py must know every Offer field"


def _offers(columns: Any) -> tuple[Offer, ...]:
    if type(columns) is not list or len(columns) != len(_OFFER_FIELDS) or type(columns[0]) is not list:
        raise _InvalidError
    n = len(columns[0])
    checked = [_column(col, n, kind) for col, kind in zip(columns, _OFFER_KINDS.values(), strict=True)]
    return tuple(map(Offer, *checked))


def loads(text: str | bytes, key: str) -> Catalog | None:
    """The Catalog a cache document holds, or None when it is not exactly what :func:`dumps` writes."""
    try:
        doc = json.loads(text)
        if type(doc) is not dict or doc.get("format") != FORMAT or doc.get("key") != key:
            return None
        if doc.get("offer_fields") != list(_OFFER_FIELDS):
            return None
        stats = doc["stats"]
        sources = doc["sources"]
        if type(stats) is not dict or type(sources) is not dict:
            return None
        infos = []
        for item in doc["source_files"]:
            if type(item) is not list or len(item) != 5:
                return None
            file, provider, as_of, exact, origin = item
            infos.append(SourceInfo(_str(file), _str(provider), _date(as_of), _bool(exact), _str(origin)))
        return Catalog(
            offers=_offers(doc["offer_columns"]),
            stats=CatalogStats(**{name: _counts(stats[name]) for name in _STATS_FIELDS}),
            sources={_str(p): _date(d) for p, d in sources.items()},
            source_files=tuple(infos),
            location=_str(doc["location"]),
        )
    except (_InvalidError, ValueError, KeyError, TypeError, RecursionError):
        return None


def read(data_dir: Path, key: str) -> Catalog | None:
    """The cached Catalog for ``key``, or None (missing, damaged, too large, not a regular file)."""
    from gpuwise.errors import UsageError
    from gpuwise.files import read_regular

    try:
        text = read_regular(cache_path(data_dir, key), limit=_MAX_BYTES)
    except (OSError, UsageError):
        return None
    return loads(text, key)
