"""`catalog import` and `catalog update`: validation with file:line, atomic install, .prev kept, bundled
files untouched, downloads from a loopback HTTP server laid out like skypilot-catalog."""

from __future__ import annotations

import hashlib
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from datetime import date
from functools import partial
from importlib import resources
from pathlib import Path

import pytest

from gpuwise.catalog.download import check_base_url, download_catalog, http_fetch
from gpuwise.catalog.offers import load_catalog
from gpuwise.catalog.query import query_offers
from gpuwise.catalog.store import CatalogFileError, find_import_files, install_user_catalog, read_import_files
from gpuwise.cli.main import main
from gpuwise.errors import CatalogError, UsageError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "catalog"
TODAY = date(2026, 11, 30)


def bundled_digest() -> str:
    root = resources.files("gpuwise.catalog").joinpath("data", "offers")
    h = hashlib.sha256()
    for name in sorted(p.name for p in root.iterdir()):  # type: ignore[attr-defined]
        h.update(name.encode())
        h.update(root.joinpath(name).read_bytes())
    return h.hexdigest()


def tree_digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def test_find_files_in_a_checkout_uses_the_newest_schema() -> None:
    found = find_import_files(FIXTURES / "checkout")
    assert [(p, f.relative_to(FIXTURES).as_posix()) for p, f in found] == [
        ("aws", "checkout/catalogs/v9/aws/vms.csv"),
        ("gcp", "checkout/catalogs/v9/gcp/vms.csv"),
        ("lambda", "checkout/catalogs/v9/lambda/vms.csv"),
    ]


def test_find_files_other_shapes() -> None:
    assert find_import_files(FIXTURES / "checkout/catalogs/v8/lambda/vms.csv")[0][0] == "lambda"
    assert find_import_files(FIXTURES / "checkout/catalogs/v8/shadeform")[0][0] == "shadeform"
    assert find_import_files(FIXTURES / "own.csv", "HomeLab")[0][0] == "homelab"
    assert find_import_files(FIXTURES / "own.csv")[0][0] == "own"
    with pytest.raises(UsageError):
        find_import_files(FIXTURES / "missing")


def test_import_checkout_installs_and_overrides_bundled_providers(tmp_path: Path) -> None:
    before = bundled_digest()
    target = tmp_path / "catalog"
    inputs = read_import_files(find_import_files(FIXTURES / "checkout"), today=TODAY)
    result = install_user_catalog(target, inputs, today=TODAY)
    assert result.previous_dir is None
    assert result.rows_kept == {"aws": 1, "gcp": 2, "lambda": 3}
    catalog = load_catalog(target)
    lam = [o for o in catalog.offers if o.provider == "lambda"]
    assert sorted((o.instance_type, o.gpu) for o in lam) == [
        ("gpu_1x_a100", "A100"),
        ("gpu_1x_h100_pcie", "H100-PCIe"),
        ("gpu_8x_h100_sxm5", "H100"),
    ]
    assert all(o.price_as_of == TODAY and not o.price_date_exact for o in lam)
    assert "imported from" in lam[0].source
    gcp = {o.gpu: o for o in catalog.offers if o.provider == "gcp"}
    assert gcp["H100"].instance_type == "a3-highgpu-1g" and gcp["H100"].price_usd_per_hour == pytest.approx(
        5.38327
    )
    assert gcp["T4"].instance_type == "n1-standard-8"
    aws = [o for o in catalog.offers if o.provider == "aws"]
    assert [(o.instance_type, o.price_usd_per_hour, o.spot_price_usd_per_hour) for o in aws] == [
        ("p5.48xlarge", 55.04, 20.5)
    ]
    assert catalog.stats.offers_by_provider["azure"] == 829  # providers not imported stay bundled
    assert catalog.location.startswith("bundled + user catalog")
    assert bundled_digest() == before


def test_second_import_keeps_previous_and_other_providers(tmp_path: Path) -> None:
    target = tmp_path / "catalog"
    install_user_catalog(
        target, read_import_files(find_import_files(FIXTURES / "checkout"), today=TODAY), today=TODAY
    )
    own = read_import_files(find_import_files(FIXTURES / "own.csv", "homelab"), today=TODAY)
    result = install_user_catalog(target, own, today=TODAY)
    assert result.previous_dir == tmp_path / "catalog.prev"
    assert (tmp_path / "catalog.prev" / "lambda.csv").is_file()
    manifest = json.loads((target / "manifest.json").read_text())
    assert sorted(manifest["providers"]) == ["aws", "gcp", "homelab", "lambda"]
    catalog = load_catalog(target)
    home = query_offers(catalog, provider="homelab")
    assert [o.gpu for o in home] == ["RTX4090", "H100"]  # cheapest first
    assert query_offers(catalog, gpu="rtx 4090", provider="homelab")[0].price_usd_per_hour == 1.2


def test_bad_rows_are_reported_with_lines_and_change_nothing(tmp_path: Path) -> None:
    target = tmp_path / "catalog"
    install_user_catalog(
        target, read_import_files(find_import_files(FIXTURES / "own.csv"), today=TODAY), today=TODAY
    )
    before = tree_digest(tmp_path)
    bad = read_import_files(find_import_files(FIXTURES / "bad" / "lambda.csv"), today=TODAY)
    with pytest.raises(CatalogFileError) as info:
        install_user_catalog(target, bad, today=TODAY)
    lines = [str(p) for p in info.value.problems]
    path = FIXTURES / "bad" / "lambda.csv"
    assert lines == [
        f"{path}:3: Price 'cheap' is not a number",
        f"{path}:4: AcceleratorName 'A100' needs a positive AcceleratorCount, got '0'",
        f"{path}:5: 7 fields but the header has 9 columns",
    ]
    assert info.value.exit_code == 2
    assert tree_digest(tmp_path) == before


def test_cli_import_bad_file_exits_2_with_line_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "catalog"
    code = main(
        ["catalog", "import", str(FIXTURES / "bad" / "no-header-columns.csv"), "--catalog-dir", str(target)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "no-header-columns.csv:1: header lacks column(s)" in err
    assert not target.exists()


def test_cli_import_then_offers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "catalog"
    assert (
        main(["catalog", "import", str(FIXTURES / "checkout"), "--catalog-dir", str(target), "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu_rows_imported"] == {"aws": 1, "gcp": 2, "lambda": 3}
    assert (
        main(
            [
                "catalog",
                "offers",
                "--gpu",
                "H100",
                "--provider",
                "lambda",
                "--json",
                "--catalog-dir",
                str(target),
            ]
        )
        == 0
    )
    offers = json.loads(capsys.readouterr().out)["offers"]
    assert [(o["instance_type"], o["price_date_exact"]) for o in offers] == [("gpu_8x_h100_sxm5", False)]


# ---------------------------------------------------------------- update over loopback HTTP


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def catalog_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTP server serving a copy of the fixture checkout's catalogs/ folder."""
    root = tmp_path / "served"
    shutil.copytree(FIXTURES / "checkout" / "catalogs", root / "catalogs")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/catalogs", root
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_update_downloads_newest_schema_and_falls_back_one_version(catalog_server: tuple[str, Path]) -> None:
    base, _ = catalog_server
    version, inputs = download_catalog(base, http_fetch(5.0), today=TODAY)
    assert version == 9
    by = {i.provider: i for i in inputs}
    assert sorted(by) == ["aws", "gcp", "lambda", "shadeform"]  # shadeform exists only in v8
    assert by["shadeform"].display_name.endswith("/v8/shadeform/vms.csv")
    assert "downloaded from" in by["lambda"].origin


def test_cli_update_installs_catalog(
    catalog_server: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = catalog_server
    target = tmp_path / "user-catalog"
    assert main(["catalog", "update", "--base-url", base, "--catalog-dir", str(target), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc["providers"]) == ["aws", "gcp", "lambda", "shadeform"]
    catalog = load_catalog(target)
    assert {o.instance_type for o in catalog.offers if o.provider == "shadeform"} == {
        "lambdalabs_H100",
        "scaleway_L4",
    }


def test_failed_download_changes_nothing(
    catalog_server: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, root = catalog_server
    target = tmp_path / "user-catalog"
    assert main(["catalog", "update", "--base-url", base, "--catalog-dir", str(target)]) == 0
    before = tree_digest(tmp_path / "user-catalog")
    # A served file turns bad: validation fails, nothing is replaced.
    (root / "catalogs" / "v9" / "lambda" / "vms.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,Price\nx,H100,1,free\n"
    )
    assert main(["catalog", "update", "--base-url", base, "--catalog-dir", str(target)]) == 2
    assert "/v9/lambda/vms.csv:2: Price 'free' is not a number" in capsys.readouterr().err
    assert tree_digest(tmp_path / "user-catalog") == before
    # The server goes away: a download error, exit 1, nothing replaced.
    closed = "http://127.0.0.1:9/catalogs"
    assert (
        main(["catalog", "update", "--base-url", closed, "--catalog-dir", str(target), "--timeout-s", "2"])
        == 1
    )
    assert "nothing was changed" in capsys.readouterr().err
    assert tree_digest(tmp_path / "user-catalog") == before


def test_update_refuses_plain_http_off_loopback() -> None:
    with pytest.raises(UsageError):
        check_base_url("http://example.com/catalogs")
    assert check_base_url("https://example.com/catalogs/") == "https://example.com/catalogs"


def test_update_reports_a_server_without_catalogs(catalog_server: tuple[str, Path]) -> None:
    base, _ = catalog_server
    with pytest.raises(CatalogError):
        download_catalog(base + "/nothing-here", http_fetch(5.0), today=TODAY)


def test_damaged_user_catalog_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "catalog"
    target.mkdir()
    (target / "manifest.json").write_text('{"providers": {"lambda": {"file": "lambda.csv"}}}')
    with pytest.raises(CatalogError):
        load_catalog(target)
    assert main(["catalog", "offers", "--catalog-dir", str(target)]) == 1
    assert "cannot be read" in capsys.readouterr().err
