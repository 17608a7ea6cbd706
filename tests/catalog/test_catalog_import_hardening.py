"""`catalog import` against hostile folders and files: non-regular files refused up front, every read
bounded, bad numbers named by file:line, no success for a file whose rows are all dropped, and a kill
at any moment leaves the old or the new user catalog (never the bundled one in its place)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest

from gpuwise.catalog import offers
from gpuwise.catalog.csvrows import read_vms_csv
from gpuwise.catalog.download import CatalogInput
from gpuwise.catalog.store import (
    CatalogFileError,
    clean_stale,
    find_import_files,
    install_user_catalog,
    read_import_files,
)
from gpuwise.cli.main import main
from gpuwise.errors import CatalogError, UsageError

TODAY = date(2026, 11, 30)
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"


def _csv(folder: Path, name: str, rows: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(HEADER + rows)
    return path


def _import(path: Path, target: Path, *extra: str) -> int:
    return main(["catalog", "import", str(path), "--catalog-dir", str(target), *extra])


@pytest.mark.timeout(30)
def test_folder_with_a_fifo_is_refused_up_front(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "in"
    _csv(folder, "lambda.csv", "a,H100,1,8,32,2.0,,us\n")
    os.mkfifo(folder / "aws.csv")  # before the fix: read_text() waited for a writer forever
    assert _import(folder, tmp_path / "catalog") == 2
    err = capsys.readouterr().err
    assert "aws.csv is a named pipe (FIFO), not a regular file" in err and "To fix:" in err
    assert not (tmp_path / "catalog").exists()


@pytest.mark.timeout(30)
def test_folder_with_a_link_to_dev_zero_is_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "lambda.csv").symlink_to("/dev/zero")  # before the fix: read forever, memory without end
    assert _import(folder, tmp_path / "catalog") == 2
    assert "(a link to /dev/zero) is a device, not a regular file" in capsys.readouterr().err


def test_reads_are_bounded_per_file_and_in_total(tmp_path: Path) -> None:
    a = _csv(tmp_path, "a.csv", "x,H100,1,8,32,2.0,,us\n" * 50)
    b = _csv(tmp_path, "b.csv", "x,H100,1,8,32,2.0,,us\n" * 50)
    pairs = [("a", a), ("b", b)]
    with pytest.raises(UsageError, match="larger than"):
        read_import_files(pairs, today=TODAY, max_file_bytes=500)
    with pytest.raises(UsageError, match=r"larger than .* together"):
        read_import_files(pairs, today=TODAY, max_total_bytes=a.stat().st_size + 10)
    assert len(read_import_files(pairs, today=TODAY)) == 2


def test_row_count_is_bounded() -> None:
    rows, problems = read_vms_csv(HEADER + "x,H100,1,8,32,2.0,,us\n" * 20, "f.csv", strict=True, max_rows=5)
    assert len(rows) == 5
    assert [str(p) for p in problems] == ["f.csv:7: more than 5 rows; the rest is not read"]


def test_a_field_over_128_kib_is_a_line_numbered_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _csv(
        tmp_path / "in", "lambda.csv", "a,H100,1,8,32,2.0,,us\nb,H100,1,8,32," + "1" * 140_000 + ",,us\n"
    )
    assert _import(path, tmp_path / "catalog") == 2
    err = capsys.readouterr().err
    assert f"{path}:3: not CSV: field larger than field limit" in err
    assert "Traceback" not in err


def test_inf_nan_and_negative_prices_are_named_with_file_and_line(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        "lambda.csv",
        "a,H100,1,8,32,-2.5,,us\nb,H100,1,8,32,inf,,us\nc,H100,1,8,32,nan,,us\nd,H100,1,8,32,3,-1,us\n"
        "e,H100,1,8,32,3.0,,us\n",
    )
    with pytest.raises(CatalogFileError) as info:
        install_user_catalog(
            tmp_path / "catalog", read_import_files([("lambda", path)], today=TODAY), today=TODAY
        )
    assert [str(p) for p in info.value.problems] == [
        f"{path}:2: Price '-2.5' is negative",
        f"{path}:3: Price 'inf' is not a number",
        f"{path}:4: Price 'nan' is not a number",
        f"{path}:5: SpotPrice '-1' is negative",
    ]


def test_a_file_whose_every_row_is_dropped_is_not_a_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    _csv(folder, "lambda.csv", "a,H100,1,8,32,2.0,,us\n")
    path = _csv(folder, "paperspace.csv", "a,H100,1,8,32,0,,us\nb,tpu-v4,4,8,32,3.0,,us\n")
    assert _import(folder, tmp_path / "catalog") == 2
    err = capsys.readouterr().err
    assert f"{path}:1: none of its 2 GPU row(s) gives an offer" in err
    assert "price_not_positive" in err and "TPU" in err
    assert not (tmp_path / "catalog").exists()  # nothing installed, the good file included


def test_partial_drops_are_counted_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path / "in", "lambda.csv", "a,H100,1,8,32,2.0,,us\nb,H100,1,8,32,0,,us\n")
    assert _import(path, tmp_path / "catalog", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu_rows_imported"] == {"lambda": 2}
    assert doc["gpu_rows_dropped"] == {"lambda": {"price_not_positive": 1}}
    assert _import(path, tmp_path / "catalog") == 0
    assert "lambda: 1 row(s) gave no offer (price_not_positive 1)" in capsys.readouterr().out


@pytest.mark.timeout(30)
def test_a_manifest_naming_a_device_or_a_path_outside_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "catalog"
    target.mkdir()
    for name in ("/dev/zero", "../../etc/passwd"):
        doc = {"providers": {"lambda": {"file": name, "price_as_of": "2026-11-30"}}}
        (target / "manifest.json").write_text(json.dumps(doc))
        offers._CACHE.clear()
        with pytest.raises(CatalogError, match="cannot be read"):
            offers.load_catalog(target)
    (target / "lambda.csv").symlink_to("/dev/zero")
    doc = {"providers": {"lambda": {"file": "lambda.csv", "price_as_of": "2026-11-30"}}}
    (target / "manifest.json").write_text(json.dumps(doc))
    offers._CACHE.clear()
    with pytest.raises(CatalogError, match="is a device"):
        offers.load_catalog(target)


# ---------------------------------------------------------------- kills and leftovers


def _user_lambda_prices(catalog_dir: Path) -> set[float]:
    """What load_catalog merges over the bundled prices, read the same way (cheaper than a full load):
    a missing or broken user catalog fails here."""
    assert (catalog_dir / "manifest.json").is_file()  # else load_catalog would show the bundled prices
    catalog = offers.build_catalog(offers._user_source_files(catalog_dir))
    return {o.price_usd_per_hour for o in catalog.offers if o.provider == "lambda" and o.price_usd_per_hour}


def _lambda_prices(catalog_dir: Path) -> set[float]:
    offers._CACHE.clear()
    catalog = offers.load_catalog(catalog_dir)
    assert catalog.location.startswith("bundled + user catalog")  # never the bundled prices alone
    return {o.price_usd_per_hour for o in catalog.offers if o.provider == "lambda" and o.price_usd_per_hour}


_CHILD = """
import sys
from datetime import date
from pathlib import Path
from gpuwise.catalog.store import find_import_files, install_user_catalog, read_import_files
target, a, b = (Path(p) for p in sys.argv[1:4])
today = date(2026, 11, 30)
inputs = [read_import_files(find_import_files(p), today=today) for p in (a, b)]
print("ready", flush=True)
while True:  # import A, B, A, B … until killed
    for item in inputs:
        install_user_catalog(target, item, today=today)
"""


def _forked_importer(target: Path, inputs: list[list[CatalogInput]]) -> int:
    """A child process (forked: no interpreter start-up, so the kills are cheap) importing the inputs in
    turn until it is killed."""
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            while True:
                for item in inputs:
                    install_user_catalog(target, item, today=TODAY)
        finally:
            os._exit(code)
    return pid


def test_a_kill_at_random_points_leaves_the_old_or_the_new_catalog(tmp_path: Path) -> None:
    a = _csv(tmp_path / "a", "lambda.csv", "a,H100,1,8,32,1.11,,us\nb,A100,1,8,32,1.12,,us\n")
    b = _csv(tmp_path / "b", "lambda.csv", "a,H100,1,8,32,2.21,,us\nb,A100,1,8,32,2.22,,us\n")
    _csv(tmp_path / "b", "paperspace.csv", "p,H100,1,8,32,3.0,,us\n")
    target = tmp_path / "data" / "catalog"
    inputs = [read_import_files(find_import_files(p), today=TODAY) for p in (a, b)]
    install_user_catalog(target, inputs[0], today=TODAY)
    seen: set[frozenset[float]] = set()
    rng = random.Random(20261201)
    deadline = time.monotonic() + 20
    for _ in range(20):
        if time.monotonic() > deadline:
            break  # bounded time on a loaded machine; the kills done still count
        pid = _forked_importer(target, inputs)
        time.sleep(rng.uniform(0.02, 0.3))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), "the importer died on its own"
        prices = frozenset(_user_lambda_prices(target))
        assert prices in ({1.11, 1.12}, {2.21, 2.22}), prices
        seen.add(prices)
    # the next run removes what the kills left behind, and leaves nothing of its own
    install_user_catalog(target, inputs[0], today=TODAY)
    kept = ("catalog", "catalog.prev", ".catalog.lock", "cache")
    assert [p.name for p in target.parent.iterdir() if p.name not in kept] == []
    named = [e["file"] for e in json.loads((target / "manifest.json").read_text())["providers"].values()]
    assert sorted(p.name for p in target.iterdir()) == sorted([*named, "manifest.json"])
    assert len(seen) == 2  # kills landed both before and after commits
    assert _lambda_prices(target) == {1.11, 1.12}  # and the full load agrees


def test_concurrent_imports_wait_for_each_other(tmp_path: Path) -> None:
    """Before the lock, one import's clean-up could delete another's uncommitted data file, and the
    other then committed a manifest naming a missing file."""
    a = _csv(tmp_path / "a", "lambda.csv", "a,H100,1,8,32,1.11,,us\n")
    b = _csv(tmp_path / "b", "lambda.csv", "a,H100,1,8,32,2.21,,us\n")
    target = tmp_path / "data" / "catalog"
    install_user_catalog(target, read_import_files(find_import_files(a), today=TODAY), today=TODAY)
    script = _CHILD.replace("while True:", "for _ in range(8):")
    children = [
        subprocess.Popen([sys.executable, "-c", script, str(target), str(a), str(b)], stdout=subprocess.PIPE)
        for _ in range(3)
    ]
    for child in children:
        assert child.wait(timeout=120) == 0
        assert child.stdout is not None
        child.stdout.close()
    assert _lambda_prices(target) == {2.21}  # every child ends with B


def test_stale_leftovers_of_a_killed_run_are_cleaned(tmp_path: Path) -> None:
    a = _csv(tmp_path / "a", "lambda.csv", "a,H100,1,8,32,1.11,,us\n")
    target = tmp_path / "catalog"
    install_user_catalog(target, read_import_files(find_import_files(a), today=TODAY), today=TODAY)
    (tmp_path / ".catalog.new-abc123").mkdir()
    (tmp_path / ".catalog.new-abc123" / "lambda.csv").write_text("half")
    (tmp_path / ".catalog.prev-new-x1").mkdir()
    (target / "lambda.1.csv").write_text("written, never committed")
    (target / ".lambda.1.csv.k2j3.tmp").write_text("half")
    (target / "notes.txt").write_text("the user's own file")
    (tmp_path / ".other.new-abc").mkdir()  # another folder's, not ours to touch
    removed = sorted(p.name for p in clean_stale(target))
    assert removed == [
        ".catalog.new-abc123",
        ".catalog.prev-new-x1",
        ".lambda.1.csv.k2j3.tmp",
        "lambda.1.csv",
    ]
    assert (target / "notes.txt").exists() and (tmp_path / ".other.new-abc").exists()
    assert _lambda_prices(target) == {1.11}


@pytest.mark.parametrize("existing", [False, True])
def test_a_full_disk_during_import_is_a_clean_error_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], existing: bool
) -> None:
    import errno
    from typing import IO

    from gpuwise import files

    a = _csv(tmp_path / "a", "lambda.csv", "a,H100,1,8,32,1.11,,us\n")
    b = _csv(tmp_path / "b", "lambda.csv", "a,H100,1,8,32,2.21,,us\n")
    target = tmp_path / "data" / "catalog"
    if existing:
        assert _import(a, target) == 0
    before = sorted((p.name, p.read_bytes()) for p in target.iterdir()) if existing else None

    def full_disk(fh: IO[bytes], payload: bytes) -> None:
        fh.write(payload[:3])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_write_all", full_disk)
    capsys.readouterr()
    assert _import(b, target) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "To fix:" in err and "Traceback" not in err
    monkeypatch.undo()
    if existing:
        assert sorted((p.name, p.read_bytes()) for p in target.iterdir()) == before
        assert _lambda_prices(target) == {1.11}
    else:
        assert not target.exists()
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == [".catalog.lock"]


def test_a_csv_saved_as_gbk_is_refused_with_how_to_convert_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Excel's plain "CSV" on a Chinese Windows writes GBK: the user got Python's "'utf-8' codec can't decode"
    src = tmp_path / "prices.csv"
    src.write_bytes((HEADER + "gn7i,A10,1,8,30,1.5,,华东1\n").encode("gbk"))
    assert main(["catalog", "import", str(src), "--catalog-dir", str(tmp_path / "cat")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "prices.csv is not UTF-8 text" in err and "codec" not in err
    assert f"iconv -f GBK -t UTF-8 {src} > {tmp_path / 'prices'}-utf8.csv" in err
    assert not (tmp_path / "cat").exists()
