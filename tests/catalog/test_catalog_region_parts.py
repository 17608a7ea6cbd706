"""A region whose file leaves a part empty (vast's "City, CC, Continent" without the city: ", CN, AS") is
shown without the stray comma ("CN, AS"), in the bundled catalog and in an imported file; the file is read
as written, only the region text is built from its non-empty parts."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gpuwise.catalog.offers import load_catalog
from gpuwise.catalog.skypilot import place_text
from gpuwise.catalog.store import find_import_files, install_user_catalog, read_import_files

TODAY = date(2026, 12, 2)
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region\n"


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        (", CN, AS", "CN, AS"),
        ("Sichuan, CN, AS", "Sichuan, CN, AS"),
        (" Sichuan ,, AS ", "Sichuan, AS"),
        (" us-east-1 ", "us-east-1"),
        ("", ""),
    ],
)
def test_place_text_leaves_out_empty_parts(written: str, shown: str) -> None:
    assert place_text(written) == shown


def test_imported_vast_row_without_a_city(tmp_path: Path) -> None:
    source = tmp_path / "vast.csv"
    source.write_text(
        HEADER
        + '2x-RTX_3090-32-65536,RTX3090,2,32,64.0,,0.33,0.00,", CN, AS"\n'
        + '1x-RTX_3090-32-65536,RTX3090,1,32,64.0,,0.20,0.00,"Sichuan, CN, AS"\n',
        encoding="utf-8",
    )
    target = tmp_path / "catalog"
    install_user_catalog(target, read_import_files(find_import_files(source), today=TODAY), today=TODAY)
    regions = sorted(o.region for o in load_catalog(target).offers if o.provider == "vast")
    assert regions == ["CN, AS", "Sichuan, CN, AS"]


def test_no_bundled_region_starts_or_ends_with_a_comma() -> None:
    regions = {o.region for o in load_catalog(None).offers}
    assert "CN, AS" in regions
    assert not [r for r in regions if r.startswith(",") or r.endswith(",") or ", ," in r]
