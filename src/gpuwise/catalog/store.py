"""The user's catalog: import SkyPilot-schema files or download them, validate, and install atomically.

A user catalog is a directory (default ``paths.user_catalog_dir()``) holding one ``<provider>.csv`` per
provider (GPU rows only, plus GCP's host-VM rows) and ``manifest.json`` (each file's origin and collection
date). Its providers replace the bundled providers of the same id when the catalog loads; the bundled files
are never modified.

Installing is all or nothing: every row of every file is validated first (problems are reported as
``file:line: problem``, and nothing changes); the new catalog is written beside the old one and swapped in
with renames; the previous catalog is kept as ``<dir>.prev``.

Downloads live in ``catalog/download.py`` (HTTPS; plain HTTP only to a loopback address, for tests and
mirrors on the same host, all through ``gpuwise.httpclient``); import their names from there.
Must not import the CLI, pydantic or anything outside the standard library and gpuwise.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from gpuwise.catalog.build import build_catalog
from gpuwise.catalog.csvrows import RowProblem, price_date_column, read_vms_csv
from gpuwise.catalog.download import MAX_FILE_BYTES, MAX_TOTAL_BYTES, CatalogInput
from gpuwise.catalog.models import SourceFile, SourceInfo
from gpuwise.catalog.offers import MANIFEST
from gpuwise.errors import CatalogError, UsageError
from gpuwise.locale import _

__all__ = [
    "CatalogFileError",
    "InstallResult",
    "clean_stale",
    "find_import_files",
    "install_user_catalog",
    "read_import_files",
    "uses_file_dates",
]

# GCP host-VM families kept from a full gcp vms.csv (the rest are CPU-only machines).
_GCP_HOST_PREFIXES = ("a2-", "a3-", "a4-", "g2-", "n1-standard-", "n1-highmem-")
_PROVIDER_ID = re.compile(r"^[a-z][a-z0-9_\-]{0,39}$")
_MAX_LISTED_PROBLEMS = 25


class CatalogFileError(UsageError):
    """Catalog files with bad rows (exit 2); carries every problem as file:line."""

    def __init__(self, problems: list[RowProblem]) -> None:
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:_MAX_LISTED_PROBLEMS])
        more = len(problems) - _MAX_LISTED_PROBLEMS
        if more > 0:
            shown += "\n  " + _("… and {n} more").format(n=more)
        super().__init__(
            _("{n} problem(s) in the catalog files; nothing was changed:").format(n=len(problems))
            + f"\n{shown}\n",
            why=_(
                "every row must follow the SkyPilot vms.csv schema (numbers where numbers belong, "
                "a positive AcceleratorCount for every accelerator row)"
            ),
            fix=_("correct the rows named above and run the command again"),
        )


@dataclass(frozen=True)
class InstallResult:
    catalog_dir: Path
    previous_dir: Path | None
    providers: dict[str, int]  # provider -> offers after normalisation
    rows_kept: dict[str, int]
    collected: date
    rows_dropped: dict[str, dict[str, int]] = field(default_factory=dict)  # provider -> reason -> rows
    file_dates: dict[str, date] = field(default_factory=dict)  # provider -> collection date from file time
    price_dates: dict[str, date] = field(default_factory=dict)  # provider -> the file's own PriceDate


# ---------------------------------------------------------------- finding files to import


def _provider_id(name: str, where: Path | str) -> str:
    pid = name.strip().lower()
    if not _PROVIDER_ID.match(pid):
        raise UsageError(
            _("Cannot tell the provider of {where} (got {name})").format(where=where, name=repr(name)),
            fix=_("name it with --provider, e.g. --provider lambda"),
        )
    return pid


def _newest_version_dir(catalogs: Path) -> Path | None:
    versions = []
    for child in catalogs.iterdir():
        m = re.fullmatch(r"v(\d+)", child.name)
        if m and child.is_dir() and any(child.glob("*/vms.csv")):
            versions.append((int(m.group(1)), child))
    return max(versions)[1] if versions else None


def find_import_files(path: Path, provider: str | None = None) -> list[tuple[str, Path]]:
    """(provider, file) pairs for ``gpuwise catalog import PATH``.

    PATH may be a skypilot-catalog checkout (its newest ``catalogs/vN`` is used, one ``<cloud>/vms.csv`` per
    provider), a ``catalogs/vN`` folder, a ``<cloud>/`` folder or its ``vms.csv``, or the user's own CSV in
    that schema (its provider from ``--provider`` or the file name).
    """
    if not path.exists():
        raise UsageError(
            _("{path} does not exist").format(path=path),
            fix=_("give a skypilot-catalog checkout, a folder or a CSV file"),
        )
    if not path.is_dir():
        _check_regular(path)
    pairs = _find_import_files(path, provider)
    for _pid, file in pairs:
        _check_regular(file)
    return pairs


def _check_regular(file: Path) -> None:
    """Refuse, before anything is read, a file that would hang or never end (a FIFO, a link to
    /dev/zero), and a dangling link."""
    from gpuwise.files import UnreadableInputError, describe_mode

    try:
        mode = file.stat().st_mode
    except OSError as exc:
        raise UsageError(
            _("Cannot read {file}: {reason}").format(file=file, reason=exc.strerror or exc),
            fix=_("check the file (a dangling symlink?) and its permissions"),
        ) from exc
    kind = describe_mode(mode)
    if kind is not None:
        shown = (
            _("{file} (a link to {target})").format(file=file, target=file.resolve())
            if file.is_symlink()
            else str(file)
        )
        raise UnreadableInputError(
            _("{file} is {kind}, not a regular file").format(file=shown, kind=kind),
            why=_("reading it could wait for a writer forever or never end; nothing was changed"),
            fix=_("remove it from the folder, or copy the data into a regular file"),
        )


def _find_import_files(path: Path, provider: str | None) -> list[tuple[str, Path]]:
    if path.is_file():
        if provider:
            return [(_provider_id(provider, path), path)]
        name = path.parent.name if path.name == "vms.csv" else path.stem
        return [(_provider_id(name, path), path)]
    if provider and (path / "vms.csv").is_file():
        return [(_provider_id(provider, path), path / "vms.csv")]
    if (path / "vms.csv").is_file():
        return [(_provider_id(path.name, path), path / "vms.csv")]
    base = path
    if (path / "catalogs").is_dir():
        newest = _newest_version_dir(path / "catalogs")
        if newest is None:
            raise UsageError(
                _("{path} holds no vN/<cloud>/vms.csv files").format(path=path / "catalogs"),
                fix=_("check the checkout"),
            )
        base = newest
    elif (newest := _newest_version_dir(path)) is not None:
        base = newest  # a folder of vN/ folders: SkyPilot's own ~/.sky/catalogs, or a checkout's catalogs/
    elif re.fullmatch(r"v\d+", path.name) is None and not any(path.glob("*/vms.csv")):
        csvs = sorted(path.glob("*.csv"))
        if not csvs:
            raise UsageError(
                _("{path} holds no catalog files").format(path=path),
                fix=_(
                    "give a skypilot-catalog checkout, catalogs/vN folder, vms.csv or a CSV in that schema"
                ),
            )
        if provider and len(csvs) > 1:
            raise UsageError(_("--provider names one provider but the folder holds several CSV files"))
        return [(_provider_id(provider or c.stem, c), c) for c in csvs]
    found = [(_provider_id(d.parent.name, d), d) for d in sorted(base.glob("*/vms.csv"))]
    if not found:
        raise UsageError(
            _("{path} holds no <cloud>/vms.csv files").format(path=base), fix=_("check the path")
        )
    return found


def uses_file_dates(path: Path) -> bool:
    """Whether ``catalog import PATH`` dates each file by its modification time: PATH is SkyPilot's local
    catalog folder (``~/.sky/catalogs``: ``vN/<cloud>/vms.csv``, written whole each time SkyPilot pulls a
    file, so its time is when the prices were fetched), or one of its ``vN`` folders (SkyPilot keeps
    ``vN/.meta`` there). A checkout's file times are only when it was cloned: those get the import date."""
    if not path.is_dir() or (path / "catalogs").is_dir():
        return False
    return _newest_version_dir(path) is not None or (path / ".meta").is_dir()


def _file_date(file: Path, today: date) -> date:
    """The local date of the file's modification time, never after ``today``."""
    from datetime import datetime

    try:
        return min(today, datetime.fromtimestamp(file.stat().st_mtime).date())
    except (OSError, OverflowError, ValueError):
        return today


def read_import_files(
    pairs: list[tuple[str, Path]],
    *,
    today: date,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    file_dates: bool = False,
) -> list[CatalogInput]:
    """Each file's text, read whole but bounded: a file over ``max_file_bytes`` or files over
    ``max_total_bytes`` together are bad input (exit 2), and a FIFO or device is refused unread. With
    ``file_dates`` each file's collection date is its modification time (see :func:`uses_file_dates`)."""
    from gpuwise.catalog.csvrows import not_utf8
    from gpuwise.files import read_regular

    inputs = []
    total = 0
    for provider, file in pairs:
        try:
            data = read_regular(file, limit=max_file_bytes, label="Catalog file")
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise not_utf8(file, exc) from exc
        except OSError as exc:
            raise UsageError(
                _("Cannot read {file}: {reason}").format(file=file, reason=exc),
                fix=_("check the file and its permissions"),
            ) from exc
        total += len(data)
        if total > max_total_bytes:
            raise UsageError(
                _("The catalog files are larger than {mib} MiB together (reached at {file})").format(
                    mib=f"{max_total_bytes / (1 << 20):g}", file=file
                ),
                why=_("import reads every file whole before installing any; nothing was changed"),
                fix=_("import fewer providers at a time (name a single <cloud>/vms.csv or folder)"),
            )
        collected = _file_date(file, today) if file_dates else None
        origin = f"imported from {file} on {today.isoformat()}; the file carries no price date"
        if collected is not None:
            origin += f"; collected {collected.isoformat()} (the file's modification time)"
        fetched = price_date_column(text)  # a file `gpuwise catalog fetch` wrote dates its own prices
        if fetched is not None:
            _check_not_future(fetched, today, file)
            origin = f"imported from {file} on {today.isoformat()}; prices fetched {fetched.isoformat()}"
            collected = fetched
        inputs.append(
            CatalogInput(
                provider=provider,
                origin=origin,
                display_name=str(file),
                text=text,
                collected=collected,
                date_exact=fetched is not None,
            )
        )
    return inputs


def _check_not_future(fetched: date, today: date, file: Path) -> None:
    if fetched > today:
        raise UsageError(
            _("{file}: PriceDate {date} is after today ({today})").format(
                file=file, date=fetched.isoformat(), today=today.isoformat()
            ),
            why=_("a price cannot have been fetched in the future; the file or the clock is wrong"),
            fix=_("check the file's PriceDate column and the system date"),
        )


# ---------------------------------------------------------------- validating and installing


def _gpu_rows_only(provider: str, text: str, display_name: str) -> tuple[str, int, list[RowProblem]]:
    """Validate every row; return the CSV text reduced to accelerator rows (plus GCP host rows)."""
    rows, problems = read_vms_csv(text, display_name, strict=True)
    if problems:
        return "", 0, problems
    if not rows:
        return "", 0, [RowProblem(display_name, 1, "no rows")]
    header = list(rows[0].fields)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    kept = 0
    for row in rows:
        f = row.fields
        has_gpu = bool(f.get("AcceleratorName", "").strip())
        is_gcp_host = provider == "gcp" and f.get("InstanceType", "").strip().startswith(_GCP_HOST_PREFIXES)
        if has_gpu or is_gcp_host:
            writer.writerow([f.get(h, "") for h in header])
            kept += has_gpu
    if kept == 0:
        return "", 0, [RowProblem(display_name, 1, "no GPU rows (every AcceleratorName is empty)")]
    return out.getvalue(), kept, []


def _dropped_rows(item: CatalogInput, text: str, kept: int) -> tuple[dict[str, int], RowProblem | None]:
    """Why rows of one provider's file did not become offers; a problem when none did (a file whose
    every row is dropped must never be reported as imported)."""
    info = SourceInfo(
        file=f"{item.provider}.csv", provider=item.provider, price_as_of=date.min, date_exact=False, origin=""
    )
    built = build_catalog([SourceFile(info, text)], location="check")
    reasons = dict(built.stats.skipped_rows)
    if built.stats.offers_by_provider.get(item.provider, 0) == 0:
        said = ", ".join(f"{n} {reason}" for reason, n in reasons.items()) or "no priced GPU row"
        return reasons, RowProblem(
            item.display_name,
            1,
            f"none of its {kept} GPU row(s) gives an offer ({said})",
        )
    return reasons, None


def _read_manifest(catalog_dir: Path) -> dict[str, dict[str, object]]:
    from gpuwise.files import read_regular

    try:
        data = json.loads(read_regular(catalog_dir / MANIFEST, limit=_MAX_MANIFEST_BYTES))
        providers = data["providers"]
        return {str(k): dict(v) for k, v in providers.items()}
    except (OSError, UsageError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return {}


_MAX_MANIFEST_BYTES = 1 << 20
_STALE_DIR = re.compile(r"^\.(?P<name>.+)\.(new|prev-new)-[A-Za-z0-9_]+$")


def clean_stale(catalog_dir: Path) -> list[Path]:
    """Remove what a killed import left behind: ``.<name>.new-*`` / ``.<name>.prev-new-*`` folders beside
    the catalog, and, inside it, temporary files and data files its manifest does not name. Returns what
    was removed. Only names gpuwise itself writes are touched."""
    removed: list[Path] = []
    parent = catalog_dir.parent
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            m = _STALE_DIR.match(child.name)
            if m and m.group("name") == catalog_dir.name and child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child)
    if not catalog_dir.is_dir() or not (catalog_dir / MANIFEST).is_file():
        return removed
    named = {str(e.get("file", "")) for e in _read_manifest(catalog_dir).values()}
    if not named:
        return removed  # an unreadable manifest: leave the folder for the user to look at
    with contextlib.suppress(OSError):
        for child in catalog_dir.iterdir():
            ours = _DATA_FILE.match(child.name) or (
                child.name.startswith(".") and child.name.endswith(".tmp")
            )
            if ours and child.name not in named and child.is_file() and not child.is_symlink():
                child.unlink(missing_ok=True)
                removed.append(child)
    return removed


_DATA_FILE = re.compile(r"^[a-z][a-z0-9_\-]{0,39}(\.\d+)?\.csv$")


def _data_file_name(provider: str, taken: set[str]) -> str:
    """``<provider>.csv``, or ``<provider>.1.csv`` while the live manifest still names the former: the new
    file must never overwrite a file the current catalog is read from."""
    for name in (f"{provider}.csv", f"{provider}.1.csv"):
        if name not in taken:
            return name
    raise AssertionError("unreachable: the manifest names one file per provider")


def install_user_catalog(catalog_dir: Path, inputs: list[CatalogInput], *, today: date) -> InstallResult:
    """Validate ``inputs``, then switch the user catalog to them in one atomic step, keeping the old one as
    ``<dir>.prev``.

    Providers already in the user catalog and not in ``inputs`` are carried over. Raises CatalogFileError
    (nothing changed) when any row is bad or a file yields no offer at all.

    Kill safety: a new catalog folder is built beside and renamed into place; an existing one is changed
    in place, its data files written under names the live manifest does not use and the manifest replaced
    last with one rename (files.write_atomic), so a reader, or a process killed at any point, sees the old
    catalog or the new one, never none (which would silently mean the bundled prices). What a kill leaves
    behind is removed by the next run (:func:`clean_stale`).
    """
    problems: list[RowProblem] = []
    reduced: dict[str, tuple[CatalogInput, str, int]] = {}
    dropped: dict[str, dict[str, int]] = {}
    for item in inputs:
        text, kept, found = _gpu_rows_only(item.provider, item.text, item.display_name)
        if not found:
            reasons, empty = _dropped_rows(item, text, kept)
            if empty is not None:
                found = [empty]
            elif reasons:
                dropped[item.provider] = reasons
        problems.extend(found)
        if not found:
            reduced[item.provider] = (item, text, kept)
    if problems:
        raise CatalogFileError(problems)

    catalog_dir = catalog_dir.expanduser()
    try:
        catalog_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CatalogError(
            _("Cannot create the catalog directory next to {dir}: {reason}").format(
                dir=catalog_dir, reason=exc.strerror or exc
            ),
            fix=_("choose a writable --catalog-dir, or check the permissions of its parent directory"),
        ) from exc
    try:
        with _install_lock(catalog_dir):
            clean_stale(catalog_dir)
            if catalog_dir.is_dir():
                manifest, previous = _install_in_place(catalog_dir, reduced, today)
            else:
                manifest, previous = _install_new(catalog_dir, reduced, today), None
    except OSError as exc:
        raise CatalogError(
            _("Cannot install the new catalog at {dir}: {reason}").format(
                dir=catalog_dir, reason=exc.strerror or exc
            ),
            why=_("writing to the user data directory failed; the previous catalog is still in place"),
            fix=_("check the directory's permissions and free space"),
        ) from exc
    from gpuwise.catalog import offers

    offers._CACHE.clear()
    return InstallResult(
        catalog_dir=catalog_dir,
        previous_dir=previous,
        providers=manifest[1],
        rows_kept={p: kept for p, (_, _, kept) in reduced.items()},
        collected=today,
        rows_dropped=dropped,
        file_dates={
            p: item.collected
            for p, (item, _, _) in reduced.items()
            if item.collected is not None and not item.date_exact
        },
        price_dates={
            p: item.collected for p, (item, _, _) in reduced.items() if item.collected and item.date_exact
        },
    )


@contextlib.contextmanager
def _install_lock(catalog_dir: Path) -> Iterator[None]:
    """One import at a time per catalog (``.<name>.lock`` beside it, flock'd): a second import waits, so
    its clean-up can never remove the first one's uncommitted files. The kernel drops the lock when a
    holder is killed. Without fcntl (Windows) there is no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock = catalog_dir.with_name(f".{catalog_dir.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


_Manifest = tuple[dict[str, dict[str, object]], dict[str, int]]  # entries, offers per provider


def _entries(
    reduced: dict[str, tuple[CatalogInput, str, int]], names: dict[str, str], today: date
) -> dict[str, dict[str, object]]:
    return {
        provider: {
            "file": names[provider],
            "price_as_of": (item.collected or today).isoformat(),
            "date_exact": item.date_exact,
            "origin": item.origin,
            "gpu_rows": kept,
        }
        for provider, (item, _, kept) in reduced.items()
    }


def _check_and_dump(
    folder: Path, manifest: dict[str, dict[str, object]], catalog_dir: Path, today: date
) -> tuple[str, dict[str, int]]:
    """The manifest text, after building the catalog from ``folder`` once: a catalog that cannot load must
    never replace a working one."""
    files = [
        SourceFile(
            SourceInfo(
                file=str(e["file"]),
                provider=p,
                price_as_of=date.fromisoformat(str(e["price_as_of"])),
                date_exact=bool(e.get("date_exact", False)),
                origin=str(e.get("origin", "")),
            ),
            (folder / str(e["file"])).read_text(encoding="utf-8"),
        )
        for p, e in manifest.items()
    ]
    built = build_catalog(files, location=str(catalog_dir))
    doc = {"format": 1, "written": today.isoformat(), "providers": dict(sorted(manifest.items()))}
    return json.dumps(doc, indent=2) + "\n", {p: built.stats.offers_by_provider.get(p, 0) for p in manifest}


def _install_new(
    catalog_dir: Path, reduced: dict[str, tuple[CatalogInput, str, int]], today: date
) -> _Manifest:
    """No catalog yet: build it in a folder beside, then one rename puts it in place."""
    from gpuwise.files import write_atomic

    tmp = Path(tempfile.mkdtemp(prefix=f".{catalog_dir.name}.new-", dir=catalog_dir.parent))
    try:
        names = {p: f"{p}.csv" for p in reduced}
        for provider, (_, text, _) in reduced.items():
            write_atomic(tmp / names[provider], text)
        manifest = _entries(reduced, names, today)
        text, offers_by_provider = _check_and_dump(tmp, manifest, catalog_dir, today)
        write_atomic(tmp / MANIFEST, text)
        tmp.replace(catalog_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest, offers_by_provider


def _install_in_place(
    catalog_dir: Path, reduced: dict[str, tuple[CatalogInput, str, int]], today: date
) -> tuple[_Manifest, Path]:
    """An existing catalog: copy it to ``.prev``, write the new data files under unused names, then replace
    the manifest (the commit point) and remove the files only the old manifest named."""
    from gpuwise.files import write_atomic

    old = _read_manifest(catalog_dir)
    old_files = {str(e.get("file", "")) for e in old.values()}
    previous = _keep_previous(catalog_dir, old)
    manifest = {
        p: e for p, e in old.items() if p not in reduced and (catalog_dir / str(e.get("file", ""))).is_file()
    }
    names = {p: _data_file_name(p, old_files) for p in reduced}
    written: list[Path] = []
    try:
        for provider, (_, text, _) in reduced.items():
            path = catalog_dir / names[provider]
            write_atomic(path, text)
            written.append(path)
        manifest.update(_entries(reduced, names, today))
        text, offers_by_provider = _check_and_dump(catalog_dir, manifest, catalog_dir, today)
        write_atomic(catalog_dir / MANIFEST, text)  # the commit: before it the old catalog, after it the new
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    live = {str(e["file"]) for e in manifest.values()}
    for name in old_files - live:
        if _DATA_FILE.match(name):
            (catalog_dir / name).unlink(missing_ok=True)
    return (manifest, offers_by_provider), previous


def _keep_previous(catalog_dir: Path, old: dict[str, dict[str, object]]) -> Path:
    """A copy of the current catalog at ``<dir>.prev`` (an older one is replaced), under the names a fresh
    install uses. Best effort in one respect: a kill here leaves the older .prev or a stale copy."""
    prev = catalog_dir.with_name(catalog_dir.name + ".prev")
    tmp = Path(tempfile.mkdtemp(prefix=f".{catalog_dir.name}.prev-new-", dir=catalog_dir.parent))
    try:
        kept: dict[str, dict[str, object]] = {}
        for provider, entry in old.items():
            name = str(entry.get("file", ""))
            if name and (catalog_dir / name).is_file():
                shutil.copy2(catalog_dir / name, tmp / f"{provider}.csv")
                kept[provider] = {**entry, "file": f"{provider}.csv"}
        doc = {"format": 1, "providers": dict(sorted(kept.items()))}
        (tmp / MANIFEST).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        if prev.is_dir() and not prev.is_symlink():
            shutil.rmtree(prev)
        elif prev.exists() or prev.is_symlink():
            prev.unlink()
        tmp.replace(prev)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return prev
