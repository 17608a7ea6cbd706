"""`gpuwise report`: what was spent, on what, and whether it was worth it.

Top-level imports stay cheap (typer and the standard library); the report room is imported inside the command.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import N_, _, ngettext

if TYPE_CHECKING:
    from gpuwise.plan.currency import Money

_SINCE_FIX = N_("use a duration such as --since 30d, --since 12h, or a date such as --since 2026-11-01")


def parse_since(text: str, now: float) -> float:
    """`--since` as epoch seconds: a duration back from now (30d, 12h, 1w2d) or an ISO date or time (UTC
    unless it names its zone). A moment after now is bad input."""
    from gpuwise.errors import ConfigError
    from gpuwise.units import parse_duration_s

    try:
        back = parse_duration_s(text, default_unit="d")
    except ValueError:
        pass
    else:
        if back <= 0:  # an empty window read as "nothing recorded yet" on a machine with months of history
            raise ConfigError(
                _("--since {text} looks back no time at all").format(text=repr(text)), fix=_(_SINCE_FIX)
            )
        return now - back
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise ConfigError(
            _("--since {text} is neither a duration nor a date").format(text=repr(text)), fix=_(_SINCE_FIX)
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    since = moment.timestamp()
    if since > now:
        raise ConfigError(
            _("--since {text} is in the future (now is {now} UTC)").format(
                text=repr(text), now=f"{datetime.fromtimestamp(now, UTC):%Y-%m-%d %H:%M}"
            ),
            why=_("nothing can have been recorded after now"),
            fix=_(_SINCE_FIX),
        )
    return since


def _price(config: Path | None) -> tuple[float | None, str | None]:
    from gpuwise.config import load_config

    price = load_config(config).section("machine").get("price_usd_per_hour")
    if isinstance(price, int | float) and not isinstance(price, bool) and price >= 0:
        return float(price), "config.toml [machine] price_usd_per_hour"
    return None, None


def _check_project(project: str | None, known: list[str]) -> None:
    from gpuwise.errors import NotFoundError

    if project is None or project in known:
        return
    listing = ", ".join(known) if known else _("none: no run was given --project")
    raise NotFoundError(
        _("project"),
        project,
        known,
        why=_("the ledger's projects are: {listing}").format(listing=listing),
        fix=_("use one of those with --project, or leave --project out"),
    )


def _write(path: Path, text: str, option: str) -> None:
    from gpuwise import files
    from gpuwise.errors import StorageError

    try:
        files.write_atomic(path, text)
    except OSError as exc:
        raise StorageError(
            _("Cannot write {option} {path}: {error}").format(
                option=option, path=path, error=exc.strerror or exc
            )
        ) from exc


def _save_calibration(path: Path, data: dict[str, Any], now: float) -> str:
    import json

    from gpuwise.errors import ConfigError
    from gpuwise.report.core import calibration

    doc = calibration(data, datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    if doc is None:
        raise ConfigError(
            _("--save-calibration: no finished run in the window was launched from a plan"),
            why=_("a calibration is the ratio of actual to planned hours, per GPU and workload task"),
            fix=_(
                "launch runs with `gpuwise run --plan plan.json -- …` "
                "(plan.json from `gpuwise plan W --json`)"
            ),
        )
    _write(path, json.dumps(doc, indent=1) + "\n", "--save-calibration")
    n = len(doc["entries"])
    return ngettext(
        "Saved {n} calibration entry to {path}.", "Saved {n} calibration entries to {path}.", n
    ).format(n=n, path=path)


def _shown_in(currency: str | None, exchange_rate: list[str]) -> Money | None:
    """--currency: the Money amounts are shown in (None without it)."""
    if currency is None:
        return None
    from gpuwise.cli.options import exchange_rates
    from gpuwise.plan.currency import check_currency, display

    given = exchange_rates(exchange_rate)
    return display(check_currency(currency), given)


def report(  # noqa: PLR0917 - typer passes each option as a parameter
    since: Annotated[
        str,
        typer.Option(
            "--since", help=_("Look back this far (30d, 12h, 2w) or from this date (2026-11-01, UTC).")
        ),
    ] = "30d",
    project: Annotated[
        str | None,
        typer.Option("--project", help=_("Only this project's runs (and the samples taken during them).")),
    ] = None,
    html_out: Annotated[
        Path | None,
        typer.Option(
            "--html", metavar="FILE", help=_("Also write a self-contained HTML report with charts.")
        ),
    ] = None,
    save_calibration: Annotated[
        Path | None,
        typer.Option(
            "--save-calibration",
            metavar="FILE",
            help=_("Write actual/planned hours per GPU and task, for `estimate --calibration FILE`."),
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help=_("Config file (default: the user config.toml)."))
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help=_("Print every figure as JSON."))] = False,
    currency: Annotated[
        str | None,
        typer.Option(
            "--currency", metavar="CUR", help=_("Show amounts in USD or CNY, printing the rate used.")
        ),
    ] = None,
    exchange_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--exchange-rate", metavar="CUR=USD", help=_("With --currency: USD per unit, e.g. CNY=0.14.")
        ),
    ] = None,
) -> None:
    """What was spent, on what, and whether it was worth it.

    Joins the monitor history (GPU-hours and how busy they were), the run ledger (what each `gpuwise run`
    cost, by project, GPU, provider and month), the idle stopper's stops (the money saved) and the plans
    runs were launched from (planned vs actual hours: the estimator's error on your own work). Each section
    says what it rests on and what is missing; unknown utilization stays unknown, never 0 %.

    Examples: gpuwise report --since 30d · gpuwise report --project llama --html report.html
    """
    from gpuwise import paths
    from gpuwise.cli.output import check_output_file, console, err_console, print_json
    from gpuwise.idle.state import state_path
    from gpuwise.report.core import NOTHING_YET, build_report
    from gpuwise.report.reader import read_history
    from gpuwise.report.text import render_text

    shown_in = _shown_in(currency, exchange_rate or [])
    now = time.time()
    since_s = parse_since(since, now)
    if html_out is not None:
        from gpuwise.report.plan_html import require_plotly

        check_output_file(html_out, "--html", name="report.html")
        require_plotly()
    if save_calibration is not None:
        check_output_file(save_calibration, "--save-calibration", name="calibration.json")
    price, price_source = _price(config)
    history = read_history(
        paths.history_db(), state_path(paths.data_dir()), since=since_s, until=now, project=project
    )
    _check_project(project, history.projects)
    from gpuwise.plan.currency import Money, showing

    display = shown_in or Money()
    with showing(display):  # the findings' sentences name amounts in the shown currency
        data = build_report(
            history,
            since=since_s,
            until=now,
            project=project,
            price_usd_per_hour=price,
            price_source=price_source,
        )
    notes: list[str] = []
    if save_calibration is not None:
        notes.append(_save_calibration(save_calibration, data, now))
    if html_out is not None:
        from gpuwise.report.html import render_report_html

        _write(html_out, render_report_html(data), "--html")
        notes.append(_("Wrote {path}.").format(path=html_out))
    if data["nothing_recorded"]:  # the answer itself in text; beside the JSON document on stderr
        first = history.first_record_s
        started = "" if first is None else f"{datetime.fromtimestamp(first, UTC):%Y-%m-%d}"
        message = (
            _(NOTHING_YET)
            if first is None
            else _("nothing recorded in this window (the history starts {started})").format(started=started)
        )
        (err_console if json_out else console).print(message, soft_wrap=True, highlight=False, markup=False)
    if json_out:
        if (
            shown_in is not None
        ):  # amounts stay in USD (`*_usd`); the block says which rate a reader would use
            data["money"] = shown_in.to_json()
        print_json(data)
    elif not data["nothing_recorded"]:
        with showing(display):
            lines = list(render_text(data))
        if display.rate is not None:
            lines.insert(0, display.rate_line(datetime.now(UTC).date()))
        for line in lines:
            console.print(line, soft_wrap=True, highlight=False, markup=False)
    for note in notes:
        err_console.print(note, soft_wrap=True, highlight=False, markup=False)
