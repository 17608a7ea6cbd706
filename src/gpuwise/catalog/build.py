"""Building the offer catalog: source files in, every priced GPU instance out, normalised and dated.

Sources are the bundled provider files (``catalog/data/offers``: the SkyPilot-schema CSVs, the AWS JSON
files, the AWS spot CSV; provenance in that folder's README.md and sources.csv) and the user's catalog
(written by ``gpuwise catalog import`` / ``update``); ``offers.py`` decides which files go in.

Normalisation rules (each one counted in :class:`CatalogStats`):

- GCP accelerator rows price the GPUs only; they are combined with their host VM row (``skypilot.py``).
- The GPU variant follows the instance where a source lumps variants: ``H100`` on an instance named
  ``…pcie…`` is ``H100-PCIe``; ``A100`` with ≥ 70 GiB per GPU in GpuInfo (or ``80g`` in the instance name) is
  ``A100-80GB``; ``V100`` with ≥ 30 GiB is ``V100-32GB``; ``H100`` with 90–100 GiB is ``H100-NVL``
  (``normalise.py``).
- Prices that are missing or impossible are dropped (zero or negative, a spot price above or equal to
  on-demand) or the row is skipped (known placeholders, no price left); never guessed (``normalise.py``).
- AWS: on-demand prices from the newer source, spot prices from the spot CSV with their own date in
  ``spot_price_as_of``; AWS China prices stay in CNY (``aws.py``). The AWS files are used only when no
  SkyPilot-schema ``aws`` file (a user catalog's) replaces them.
- Dates: the source's own date where known; otherwise the collection date with ``price_date_exact`` false.

Pure: text in, catalog out. Must not import the CLI, pydantic or anything heavy.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable
from datetime import date
from typing import Any

from gpuwise.catalog.aws import CHINA_FILE, SPOT_FILE, VANTAGE_FILE, aws_offers
from gpuwise.catalog.csvrows import read_vms_csv
from gpuwise.catalog.models import Catalog, CatalogStats, Offer, SourceFile, SourceInfo
from gpuwise.catalog.normalise import Tally
from gpuwise.catalog.skypilot import ProviderRows, skypilot_offers


def build_catalog(files: Iterable[SourceFile], *, location: str = "bundled") -> Catalog:
    """Normalise source files into a catalog. Pure: text in, catalog out."""
    tally = Tally()
    groups: dict[str, ProviderRows] = {}
    aws_json: dict[str, Any] = {}
    infos: dict[str, SourceInfo] = {}
    all_infos: list[SourceInfo] = []
    for src in files:
        info = src.info
        all_infos.append(info)
        infos[info.file] = info
        if info.file.endswith(".json"):
            aws_json[info.file] = json.loads(src.text)
            continue
        if info.file == SPOT_FILE:
            aws_json[info.file] = list(csv.DictReader(io.StringIO(src.text, newline="")))
            continue
        rows, problems = read_vms_csv(src.text, info.file, strict=False)
        tally.rows[info.file] += len(rows) + len(problems)
        if problems:
            tally.skipped["malformed_row"] += len(problems)
        group = groups.setdefault(info.provider, ProviderRows(info.provider))
        group.infos.append(info)
        group.rows.extend((info.file, r) for r in rows)
    offers: list[Offer] = []
    for group in groups.values():
        offers.extend(skypilot_offers(group, tally))
    if aws_json and "aws" not in groups:
        offers.extend(
            aws_offers(
                aws_json.get(VANTAGE_FILE),
                aws_json.get(SPOT_FILE),
                aws_json.get(CHINA_FILE),
                infos,
                tally,
            )
        )
    return Catalog(
        offers=tuple(offers),
        stats=_stats(offers, tally),
        sources=_newest_dates(offers),
        source_files=tuple(all_infos),
        location=location,
    )


def _newest_dates(offers: list[Offer]) -> dict[str, date]:
    """Each provider's newest price date (a spot price's own date counts), sorted by provider."""
    sources: dict[str, date] = {}
    for o in offers:
        newest = o.price_as_of
        if o.spot_price_as_of is not None and o.spot_price_as_of > newest:
            newest = o.spot_price_as_of
        if o.provider not in sources or newest > sources[o.provider]:
            sources[o.provider] = newest
    return dict(sorted(sources.items()))


def _stats(offers: list[Offer], tally: Tally) -> CatalogStats:
    by_provider = Counter(o.provider for o in offers)
    return CatalogStats(
        rows_read=dict(tally.rows),
        offers_by_provider=dict(sorted(by_provider.items())),
        skipped_rows=dict(tally.skipped.most_common()),
        dropped_prices=dict(tally.dropped.most_common()),
        adjusted=dict(tally.adjusted.most_common()),
    )
