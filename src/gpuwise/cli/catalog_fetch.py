"""`gpuwise catalog fetch aliyun|huawei|tencent`: the Chinese clouds' GPU prices from their own APIs, with the
user's credentials, written as a dated catalog file that `gpuwise catalog import` reads.

Registered on the `catalog` group by cli/catalog.py. Top-level imports stay cheap (typer and the standard
library); the fetch modules and the clouds' SDKs are imported inside the command.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.catalog.fetch.common import FetchResult

CLOUDS = ("aliyun", "huawei", "tencent")
# Clouds the issue names whose fetch is not built yet: said so, not silently missing. Baidu: BCC's
# documented price call (POST /v2/instance/price, cloud.baidu.com/doc/BCC/s/uk5dt23r8) takes a length in
# months and does not say what time a pay-as-you-go (Postpaid) price covers; the spot call
# (/v2/instance/bidPrice) shows no response example or unit either. An hourly price would be a guess.
NOT_YET = {"baidu": "Baidu AI Cloud (BCC)"}


def _fetcher(cloud: str, currency: str | None) -> Callable[[list[str], date], FetchResult]:
    """The cloud's fetch bound to its real SDK adapter (credentials checked here, before any call)."""
    from gpuwise.errors import ConfigError, NotFoundError

    if cloud in NOT_YET:
        raise ConfigError(
            _("`catalog fetch {cloud}` is not built yet").format(cloud=cloud),
            why=_(
                "{name}'s documented price API does not say what time a pay-as-you-go price covers, "
                "so gpuwise cannot turn it into an hourly price without guessing"
            ).format(name=NOT_YET[cloud]),
            fix=_(
                "fetch from {clouds}, or import a vms.csv-schema CSV of {cloud} prices with "
                "gpuwise catalog import FILE --provider {cloud}"
            ).format(clouds=_(" or ").join(CLOUDS), cloud=cloud),
        )
    if cloud not in CLOUDS:
        raise NotFoundError(
            _("cloud"),
            cloud,
            [*CLOUDS, *NOT_YET],
            # aws, gcp, lambda, …: their prices come with SkyPilot's catalog, not from an API of their own
            fix=_(
                "use one of: {names}; other clouds' prices come with `gpuwise catalog update` "
                "(SkyPilot's catalog)"
            ).format(names=", ".join(CLOUDS)),
        )
    if currency is not None and cloud != "tencent":
        raise ConfigError(
            _("--billed-in is for tencent only"),
            why=_("{cloud}'s price API names the currency of its prices itself").format(cloud=cloud),
            fix=_("drop --billed-in"),
        )
    if cloud == "aliyun":
        from gpuwise.catalog.fetch import aliyun

        api = aliyun.sdk_api()
        return lambda regions, today: aliyun.fetch(api, regions, today=today)
    if cloud == "huawei":
        from gpuwise.catalog.fetch import huawei

        hapi = huawei.sdk_api()
        return lambda regions, today: huawei.fetch(hapi, regions, today=today)
    from gpuwise.catalog.fetch import tencent

    code = (currency or "CNY").strip().upper()
    if code not in ("CNY", "USD"):
        raise ConfigError(
            _("--billed-in {currency}: Tencent Cloud bills in CNY or USD").format(currency=currency),
            fix=_("use --billed-in CNY (China-site account) or --billed-in USD (international-site account)"),
        )
    tapi = tencent.sdk_api()
    return lambda regions, today: tencent.fetch(tapi, regions, today=today, currency=code)


def fetch(  # noqa: PLR0917 - typer passes options positionally
    cloud: Annotated[str, typer.Argument(help=_("aliyun, huawei or tencent (baidu: not yet)."))],
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region", help=_("Region to fetch (repeatable; default: every region the account has).")
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help=_("Catalog file to write (default: ./<cloud>.csv).")),
    ] = None,
    currency: Annotated[
        str | None,
        typer.Option(
            "--billed-in",
            help=_("tencent only: the currency the account is billed in, CNY (China site, default) or USD."),
        ),
    ] = None,
    install: Annotated[
        bool, typer.Option("--import", help=_("Also import the file into the user catalog."))
    ] = False,
    catalog_dir: Annotated[
        Path | None, typer.Option("--catalog-dir", help=_("User catalog directory for --import."))
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help=_("Print JSON instead of text."))] = False,
) -> None:
    """Fetch GPU instance prices (pay-as-you-go and spot, per region) from a Chinese cloud's own API.

    Runs with your account's credentials from the environment: ALIBABA_CLOUD_ACCESS_KEY_ID and
    ALIBABA_CLOUD_ACCESS_KEY_SECRET for aliyun, HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK for huawei,
    TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY for tencent (a read-only key is enough; they are
    never printed). Needs the cloud's SDK: pip install 'gpuwise\\[aliyun]' (or huawei, tencent). Huawei
    Cloud prices are pay-per-use only (no spot). Prices are the account's (discounts applied), in
    the cloud's currency (CNY for China-site accounts), dated today. A region that fails is a warning;
    the rest are written. The file is SkyPilot's vms.csv schema plus Currency and PriceDate columns.

    Examples:

      gpuwise catalog fetch aliyun --region cn-hangzhou --region cn-beijing

      gpuwise catalog fetch tencent -o tencent.csv && gpuwise catalog import tencent.csv
    """
    from gpuwise.cli.output import check_output_file

    path = output or Path(f"{cloud.strip().lower()}.csv")
    check_output_file(path, "--output", name=f"{cloud}.csv")
    if any(not r.strip() for r in region or []):  # an unset shell variable; checked before any key is used
        from gpuwise.errors import UsageError

        raise UsageError(
            _("{option} is empty").format(option="--region"),
            why=_("an empty --region would fetch every region the account has, as if it were left out"),
            fix=_("give a region id, e.g. --region cn-hangzhou, or leave --region out to fetch every region"),
        )
    run = _fetcher(cloud.strip().lower(), currency)
    _write_and_report(run(list(region or []), date.today()), path, install, catalog_dir, json_out)


def _write_and_report(
    result: FetchResult, path: Path, install: bool, catalog_dir: Path | None, json_out: bool
) -> None:
    from gpuwise.catalog.fetch.common import to_csv
    from gpuwise.cli.output import console, err_console, print_json
    from gpuwise.errors import CatalogError
    from gpuwise.files import write_atomic

    for line in result.warnings:
        err_console.print(_("warning: {line}").format(line=line), markup=False)
    if not result.rows:
        raise CatalogError(
            _("No priced GPU instance type found in {regions}; nothing was written").format(
                regions=", ".join(result.regions)
            ),
            why=_skipped_text(result) or _("the regions asked sell no GPU instance type pay-as-you-go"),
            fix=_("ask other regions (--region), or see the warnings above"),
        )
    write_atomic(path, to_csv(result))
    doc: dict[str, Any] = {
        "provider": result.provider,
        "file": str(path),
        "price_date": result.price_date.isoformat(),
        "currencies": sorted({r.currency for r in result.rows}),
        "rows": len(result.rows),
        "instance_types": len({r.instance_type for r in result.rows}),
        "regions": list(result.regions),
        "skipped": result.skipped,
        "warnings": list(result.warnings),
    }
    if install:
        doc["imported"] = _install(path, result.provider, catalog_dir)
    if json_out:
        print_json(doc)
        return
    console.print(
        _(
            "Wrote {rows} GPU rows ({types} instance types, {regions} region(s)) to {path}: "
            "prices of {date} in {currencies}."
        ).format(
            rows=doc["rows"],
            types=doc["instance_types"],
            regions=len(result.regions),
            path=path,
            date=doc["price_date"],
            currencies=", ".join(doc["currencies"]),
        ),
        markup=False,
    )
    if result.skipped:
        console.print(_("Left out (never guessed): {what}.").format(what=_skipped_text(result)), markup=False)
    if install:
        console.print(_("Imported into the user catalog at {dir}.").format(dir=doc["imported"]), markup=False)
        return
    provider_flag = "" if path.stem == result.provider else f" --provider {result.provider}"
    console.print(
        _("To use them: {command}").format(command=f"gpuwise catalog import {path}{provider_flag}"),
        markup=False,
    )


def _skipped_text(result: FetchResult) -> str:
    return "; ".join(
        _("{n} type(s): {reason}").format(n=n, reason=reason) for reason, n in result.skipped.items()
    )


def _install(path: Path, provider: str, catalog_dir: Path | None) -> str:
    from gpuwise import paths
    from gpuwise.catalog.store import install_user_catalog, read_import_files

    today = date.today()
    inputs = read_import_files([(provider, path)], today=today)
    result = install_user_catalog(catalog_dir or paths.user_catalog_dir(), inputs, today=today)
    return str(result.catalog_dir)
