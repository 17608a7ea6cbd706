"""`gpuwise catalog gpus | offers | stats | import | update | fetch`: GPU specs and the dated price catalog.

The clock is read here (today's date for price ages) and passed into the pure catalog code. Top-level
imports stay cheap (typer and the standard library); the catalog modules are imported inside commands.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.cli.catalog_fetch import fetch as _fetch
from gpuwise.cli.catalog_views import num as _num
from gpuwise.cli.catalog_views import report_install as _report_install
from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.catalog.models import Figure, GpuSpec, Offer

# Version of the `catalog gpus/offers --json` documents: bumped when a field changes meaning or goes away.
JSON_SCHEMA_VERSION = 1

app = typer.Typer(
    help=_(
        "GPU specs and dated instance prices from every bundled provider. Every price says where it came "
        "from and how old it is; undated prices are shown as such and flagged."
    ),
    no_args_is_help=True,
)

CatalogDirOption = Annotated[
    Path | None,
    typer.Option(
        "--catalog-dir",
        help=_(
            "User catalog directory (default: the platform's user data dir, see `gpuwise catalog stats`)."
        ),
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help=_("Print JSON instead of a table."))]

_TABLE_DEFAULT_LIMIT = 30


def _today() -> date:
    return date.today()


_UNPUBLISHED = "n/p"


def _fig(fig: Figure, digits: int = 1) -> str:
    if fig.value is None:
        return _UNPUBLISHED
    return _num(fig.value, 0 if abs(fig.value) >= 100 else digits)


def check_catalog_dir(catalog_dir: Path | None) -> None:
    """A --catalog-dir the user names for reading must hold an imported catalog: a typo must not
    silently fall back to the bundled prices."""
    from gpuwise.catalog.offers import MANIFEST
    from gpuwise.errors import ConfigError

    if catalog_dir is None:
        return
    fix = _(
        "import one first (gpuwise catalog import PATH --catalog-dir {dir}), "
        "or drop --catalog-dir to use the default user catalog"
    ).format(dir=catalog_dir)
    if not catalog_dir.is_dir():
        if catalog_dir.exists():
            message = _("--catalog-dir {dir} is not a directory")
        else:
            message = _("--catalog-dir {dir} does not exist")
        raise ConfigError(message.format(dir=catalog_dir), fix=fix)
    if not (catalog_dir / MANIFEST).is_file():
        raise ConfigError(
            _("--catalog-dir {dir} holds no imported catalog").format(dir=catalog_dir),
            why=_("it has no {file}").format(file=MANIFEST),
            fix=fix,
        )


def _check_target_dir(catalog_dir: Path | None) -> None:
    """import/update write into --catalog-dir: it may be new, but not a file."""
    from gpuwise.errors import ConfigError
    from gpuwise.files import describe_mode

    if catalog_dir is not None and catalog_dir.exists() and not catalog_dir.is_dir():
        kind = describe_mode(catalog_dir.stat().st_mode) or _("a file")
        raise ConfigError(
            _("--catalog-dir {dir} is {kind}, not a directory").format(dir=catalog_dir, kind=kind),
            fix=_("give a directory (it is created if missing)"),
        )


# ---------------------------------------------------------------- gpus


@app.command("gpus")
def gpus(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="NAME",
            help=_("Only these GPUs (names or aliases, e.g. h100 4090); default: all."),
            show_default=False,
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """The GPU spec table: memory, bandwidth, dense tensor TFLOPS, NVLink, power, each with its source."""
    from rich import box
    from rich.table import Table

    from gpuwise.catalog.specs import load_gpu_specs, resolve_gpu
    from gpuwise.cli.output import console, print_json

    specs = load_gpu_specs()
    if names:  # an unknown name is refused with close matches (exit 2)
        wanted = {resolve_gpu(n).name for n in names}
        specs = {k: v for k, v in specs.items() if k in wanted}
    if json_out:
        # an object, not a bare list, so it can grow metadata (0.1.0 printed the list alone)
        print_json({"schema_version": JSON_SCHEMA_VERSION, "gpus": [_spec_json(s) for s in specs.values()]})
        return
    table = Table(
        title=_("GPU specs: dense TFLOPS (no sparsity), memory as nvidia-smi shows it"),
        box=box.SIMPLE_HEAD,
        # two spaces between columns and no blank edges: the ten columns fit 80 (with three rich cut "[10]")
        show_edge=False,
        padding=(0, 1, 0, 0),
        pad_edge=False,
    )
    columns = ("GPU", "GiB", "GB/s", "FP32", "BF16", "FP16", "FP8", "NVLink", "TDP W", _("src"))
    for col in columns:
        table.add_column(col, justify="left" if col == "GPU" else "right", no_wrap=True)
    sources: dict[str, int] = {}
    for s in specs.values():
        source = s.memory_bandwidth_gbs.source
        if source.startswith("not published ("):
            source = source.removeprefix("not published (").removesuffix(")")
        ref = sources.setdefault(source, len(sources) + 1)
        table.add_row(
            s.name,
            _num(s.memory_gib, 1),
            _fig(s.memory_bandwidth_gbs, 0),
            _fig(s.tflops["fp32"]),
            _fig(s.tflops["bf16"]),
            _fig(s.tflops["fp16"]),
            _fig(s.tflops["fp8"]),
            _("none") if s.nvlink_bidir_gbs.value is None else _num(s.nvlink_bidir_gbs.value),
            _fig(s.tdp_watts, 0),
            f"[{ref}]",
        )
    console.print(table)
    console.print(
        _(
            "{unpublished} = not published by the vendor (or not entered until checked). TF32, FP64, INT8, "
            "FP4 and each figure's own source: --json."
        ).format(unpublished=_UNPUBLISHED)
    )
    console.print(_("Sources:"))
    for source, ref in sources.items():
        console.print(f"  [{ref}] {source}", markup=False)
    console.print(
        _(
            "Aliases are accepted case-insensitively (h100-sxm, A100 80GB, a100-40gb, …), and so are the "
            "names nvidia-smi prints (NVIDIA A100-SXM4-80GB) and bare GeForce numbers (4090). "
            "`gpuwise catalog gpus --json` lists every figure with its own source."
        )
    )


def _spec_json(spec: GpuSpec) -> dict[str, Any]:
    from gpuwise.cli.output import to_jsonable

    data: dict[str, Any] = to_jsonable(spec)
    return data


# ---------------------------------------------------------------- offers


def offer_json(offer: Offer, today: date) -> dict[str, Any]:
    """One offer as docs/json.md's JSON object (null where unknown), plus extras."""
    from gpuwise.catalog.query import is_stale, price_age_days

    return {
        "provider": offer.provider,
        "instance_type": offer.instance_type,
        "region": offer.region or None,
        "zone": offer.zone,
        "gpu": offer.gpu,
        "gpus": int(offer.gpus) if offer.gpus == int(offer.gpus) else offer.gpus,
        "gpu_memory_gib": offer.gpu_memory_gib,
        "vcpus": offer.vcpus,
        "memory_gib": offer.memory_gib,
        "price_usd_per_hour": offer.price_usd_per_hour,
        "spot_price_usd_per_hour": offer.spot_price_usd_per_hour,
        "currency": offer.currency,
        "price_as_of": offer.price_as_of.isoformat(),
        "price_date_exact": offer.price_date_exact,
        "source": offer.source,
        # extras
        "spot_price_as_of": offer.spot_price_as_of.isoformat() if offer.spot_price_as_of else None,
        "price_age_days": price_age_days(offer, today),
        "stale": is_stale(offer, today),
        "gpu_only_price": offer.gpu_only_price,
        "notes": list(offer.notes),
    }


def print_offers_table(
    found: list[Offer], today: date, *, spot: bool, limit: int, hints: list[str] | None = None
) -> None:
    """The offers table (cli/catalog_views.py draws it; cli/catalog_money.py calls it by this name)."""
    from gpuwise.cli.catalog_views import print_offers_table as draw

    draw(found, today, spot=spot, limit=limit, hints=hints)


@app.command("offers")
def offers(
    *,
    gpu: Annotated[
        str | None, typer.Option("--gpu", help=_("GPU name or alias; NAME:COUNT is shorthand for --count."))
    ] = None,
    count: Annotated[
        int | None, typer.Option("--count", help=_("Exactly this many GPUs per instance (1 or more)."))
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help=_("Provider id: aws, gcp, lambda, …"))
    ] = None,
    region: Annotated[
        str | None, typer.Option("--region", help=_("Region or zone name, or a glob (europe-*, us-east-1*)."))
    ] = None,
    spot: Annotated[
        bool, typer.Option("--spot", help=_("Only offers with a spot price, sorted by it."))
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", help=_("At most N offers (table default {n}; 0 = all).").format(n=_TABLE_DEFAULT_LIMIT)
        ),
    ] = None,
    currency: Annotated[
        str | None,
        typer.Option("--currency", metavar="CUR", help=_("Show prices in USD or CNY (rate printed).")),
    ] = None,
    exchange_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--exchange-rate", metavar="CUR=USD", help=_("With --currency: USD per unit, e.g. CNY=0.14.")
        ),
    ] = None,
    json_out: JsonOption = False,
    catalog_dir: CatalogDirOption = None,
) -> None:
    """Instance offers, cheapest first, each with its provider, price date and source; --currency CNY|USD
    shows every price in that currency (rate, date and source printed) and ranks both currencies together.

    Examples:

      gpuwise catalog offers --gpu H100:8 --region "us-*"

      gpuwise catalog offers --gpu A100-80GB --spot --provider gcp --json
    """
    from gpuwise.catalog.offers import load_catalog
    from gpuwise.catalog.query import query_offers
    from gpuwise.catalog.specs import parse_gpu_request
    from gpuwise.catalog.validate import check_region
    from gpuwise.cli.output import check_at_least
    from gpuwise.errors import UsageError

    check_at_least(count, 1, "--count", example="--count 8")
    check_at_least(limit, 0, "--limit", example="--limit 0 (all)")
    for option, value, example in (
        ("--gpu", gpu, "--gpu H100"),
        ("--provider", provider, "--provider lambda"),
        ("--region", region, "--region 'us-*'"),
    ):
        _check_not_empty(option, value, example)
    check_catalog_dir(catalog_dir)
    if exchange_rate and currency is None:  # the rate would be read and never used: say so
        raise UsageError(
            _("--exchange-rate is used only with --currency"),
            why=_("without --currency each price is shown in its own currency, unconverted"),
            fix=_("add --currency USD or --currency CNY"),
        )
    if gpu is not None:
        gpu, shorthand = parse_gpu_request(gpu)
        if shorthand is not None:
            if count is not None and count != shorthand:
                raise UsageError(
                    _("--gpu says {gpus} GPUs but --count says {count}").format(gpus=shorthand, count=count),
                    fix=_("give one of them"),
                )
            count = shorthand
    today = _today()
    catalog = load_catalog(catalog_dir)
    check_region(catalog, region)  # an unknown region is a typo, not "no offers match"
    found = query_offers(catalog, gpu=gpu, count=count, provider=provider, region=region, spot=spot)
    hints: list[str] = []
    if not json_out:  # what matched nothing, or which GPUs an exact --gpu left out
        from gpuwise.catalog.hints import Filters, left_out, unranked_currencies, why_no_offers

        filters = Filters(gpu, count, provider, region, spot)
        hints = left_out(catalog, filters) if found else why_no_offers(catalog, filters)
        hints += unranked_currencies(found) if currency is None else []
    if currency is not None:
        from gpuwise.cli.catalog_money import offers_in_currency

        offers_in_currency(
            found, currency, exchange_rate or [], today, spot=spot, json_out=json_out, limit=limit,
            hints=hints,
        )  # fmt: skip
        return
    if json_out:
        shown = found if not limit else found[:limit]
        from gpuwise.cli.output import print_json

        print_json({"schema_version": JSON_SCHEMA_VERSION, "offers": [offer_json(o, today) for o in shown]})
        return
    print_offers_table(
        found, today, spot=spot, limit=_TABLE_DEFAULT_LIMIT if limit is None else limit, hints=hints
    )


def _check_not_empty(option: str, value: str | None, example: str) -> None:
    """An empty filter (``--gpu ""``, often an unset shell variable) is bad input: it would silently show
    every offer, as if the option had been left out."""
    from gpuwise.errors import UsageError

    if value is not None and not value.strip():
        raise UsageError(
            _("{option} is empty").format(option=option),
            why=_("an empty filter would match every offer, as if the option were left out"),
            fix=_("give a value, e.g. {example}, or leave {option} out to see every offer").format(
                example=example, option=option
            ),
        )


# ---------------------------------------------------------------- stats


@app.command("stats")
def stats(json_out: JsonOption = False, catalog_dir: CatalogDirOption = None) -> None:
    """What the catalog holds: offers and price date per provider, and every row skipped or price dropped."""
    from rich.markup import escape
    from rich.table import Table

    from gpuwise import paths
    from gpuwise.catalog.offers import load_catalog
    from gpuwise.cli.output import console, print_json

    check_catalog_dir(catalog_dir)
    today = _today()
    catalog = load_catalog(catalog_dir)
    st = catalog.stats
    exact: dict[str, bool] = {}
    for info in catalog.source_files:
        exact[info.provider] = exact.get(info.provider, True) and info.date_exact
    providers = [
        {
            "provider": p,
            "offers": n,
            "price_as_of": catalog.sources[p].isoformat() if p in catalog.sources else None,
            "price_date_exact": exact.get(p, False),
            "age_days": (today - catalog.sources[p]).days if p in catalog.sources else None,
        }
        for p, n in st.offers_by_provider.items()
    ]
    doc = {
        "location": catalog.location,
        "user_catalog_dir": str(catalog_dir or paths.user_catalog_dir()),
        "offers": st.offers,
        "providers": providers,
        "rows_read": st.rows_read,
        "skipped_rows": st.skipped_rows,
        "dropped_prices": st.dropped_prices,
        "adjusted": st.adjusted,
        "files": [
            {
                "file": i.file,
                "provider": i.provider,
                "price_as_of": i.price_as_of.isoformat(),
                "date_exact": i.date_exact,
                "origin": i.origin,
            }
            for i in catalog.source_files
        ],
    }
    if json_out:
        print_json(doc)
        return
    console.print(
        _("Catalog: {location}; {offers} offers. User catalog dir: {dir}").format(
            location=catalog.location, offers=st.offers, dir=doc["user_catalog_dir"]
        ),
        markup=False,
    )
    table = Table(title=_("Offers per provider"))
    for label, justify in (
        (_("provider"), "left"),
        (_("offers"), "right"),
        (_("price date"), "left"),
        (_("age"), "right"),
    ):
        table.add_column(label, justify=justify)  # type: ignore[arg-type]
    for row in providers:
        date_text = str(row["price_as_of"])
        if not row["price_date_exact"]:
            date_text = _("date unknown (collected {date})").format(date=date_text)
        table.add_row(escape(str(row["provider"])), str(row["offers"]), date_text, f"{row['age_days']} d")
    console.print(table)
    for title, counts in (
        (_("Rows skipped (never guessed)"), st.skipped_rows),
        (_("Price fields dropped"), st.dropped_prices),
        (_("Normalised"), st.adjusted),
    ):
        if counts:
            console.print(f"[bold]{title}[/]")
            _print_counts(counts)


def _print_counts(counts: dict[str, int]) -> None:
    """One line per reason after its count; a reason too long for the terminal goes on under itself, never
    back at the margin under the counts. Rich measures the wrap (Chinese is two columns a character)."""
    from rich.text import Text

    from gpuwise.cli.output import console

    for reason, n in counts.items():
        lead = f"  {n:>6}  "
        width = max(console.width - len(lead), 20)
        for i, line in enumerate(Text(reason).wrap(console, width)):
            # markup off: reasons quote file contents
            console.print((lead if i == 0 else " " * len(lead)) + line.plain.rstrip(), markup=False)


# ---------------------------------------------------------------- import / update


@app.command("import")
def import_(
    path: Annotated[
        Path,
        typer.Argument(
            help=_(
                "skypilot-catalog checkout, SkyPilot's ~/.sky/catalogs, a catalogs/vN folder, "
                "vms.csv or own CSV."
            )
        ),
    ],
    provider: Annotated[
        str | None,
        typer.Option("--provider", help=_("Provider id for a single CSV whose name does not say it.")),
    ] = None,
    json_out: JsonOption = False,
    catalog_dir: CatalogDirOption = None,
) -> None:
    """Validate catalog files in the SkyPilot schema and install them as the user catalog (atomically).

    Nothing changes unless every row is valid; the previous user catalog is kept beside the new one.
    From SkyPilot's own ~/.sky/catalogs (its newest vN), each file's modification time is taken as the
    date its prices were collected; otherwise the import date is.

    Examples:

      gpuwise catalog import ~/src/skypilot-catalog

      gpuwise catalog import ~/.sky/catalogs
    """
    from gpuwise import paths
    from gpuwise.catalog.store import (
        find_import_files,
        install_user_catalog,
        read_import_files,
        uses_file_dates,
    )
    from gpuwise.cli.output import check_input_file

    check_input_file(
        path, _("Catalog file"), fix=_("give a skypilot-catalog checkout, a folder or a CSV file")
    )
    _check_target_dir(catalog_dir)
    today = _today()
    inputs = read_import_files(
        find_import_files(path, provider), today=today, file_dates=uses_file_dates(path)
    )
    result = install_user_catalog(catalog_dir or paths.user_catalog_dir(), inputs, today=today)
    _report_install(result, json_out, _("Imported"))


@app.command("update")
def update(  # noqa: PLR0917 - typer passes options positionally
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url", help=_("Where catalogs/vN/<cloud>/vms.csv are served (default: skypilot-catalog).")
        ),
    ] = None,
    fallback_url: Annotated[
        str | None,
        typer.Option(
            "--fallback-url",
            help=_(
                "Mirror asked for a file the base URL fails (default: SkyPilot's S3 mirror, unless "
                "--base-url is given)."
            ),
        ),
    ] = None,
    schema_version: Annotated[
        int | None,
        typer.Option("--schema-version", help=_("Use catalogs/vN (N 1 or more) instead of the newest.")),
    ] = None,
    timeout_s: Annotated[
        float, typer.Option("--timeout-s", help=_("Seconds each download may take (0.1 or more)."))
    ] = 30.0,
    total_timeout_s: Annotated[
        float,
        typer.Option("--total-timeout-s", help=_("Seconds the whole update may take (1 or more).")),
    ] = 600.0,
    json_out: JsonOption = False,
    catalog_dir: CatalogDirOption = None,
) -> None:
    """Download the current SkyPilot catalog (newest schema version) and install it as the user catalog.

    Files are fetched a few at a time, each once; a busy (HTTP 429) or failing server is retried with
    backoff, and a file the base URL fails is asked of the fallback mirror. Progress goes to stderr.
    Bounded: each file at most 64 MiB and all at most 256 MiB together, each download within --timeout-s
    and the whole update within --total-timeout-s; past any bound it stops and changes nothing.
    """
    from gpuwise import paths
    from gpuwise.catalog.download import (
        DEFAULT_BASE_URL,
        DEFAULT_FALLBACK_URL,
        check_base_url,
        download_catalog,
        http_fetch,
    )
    from gpuwise.catalog.store import install_user_catalog
    from gpuwise.cli.output import check_at_least, err_console
    from gpuwise.cli.update_progress import UpdateProgress

    check_at_least(schema_version, 1, "--schema-version", example="--schema-version 7")
    check_at_least(timeout_s, 0.1, "--timeout-s", example="--timeout-s 30")
    check_at_least(total_timeout_s, 1, "--total-timeout-s", example="--total-timeout-s 600")
    _check_target_dir(catalog_dir)
    today = _today()
    # A mirror of one's own gets no silent fallback to upstream (SkyPilot decides the same for its
    # self-hosted catalog URL): a failing mirror should be seen, not papered over.
    # `is None`: an empty URL (an unset shell variable) is refused as not https, never read as the default
    if fallback_url is not None:
        check_base_url(fallback_url, "--fallback-url")
    fallback = (
        fallback_url if fallback_url is not None else (None if base_url is not None else DEFAULT_FALLBACK_URL)
    )
    with UpdateProgress(err_console) as progress:
        version, inputs = download_catalog(
            DEFAULT_BASE_URL if base_url is None else base_url,
            http_fetch(timeout_s, total_timeout_s=total_timeout_s, on_event=progress),
            today=today,
            schema_version=schema_version,
            fallback_url=fallback,
            on_event=progress,
        )
    result = install_user_catalog(catalog_dir or paths.user_catalog_dir(), inputs, today=today)
    _report_install(result, json_out, _("Downloaded schema v{version}").format(version=version))


# `catalog fetch aliyun|tencent`: the Chinese clouds' own price APIs (cli/catalog_fetch.py)
app.command("fetch")(_fetch)
