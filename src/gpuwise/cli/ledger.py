"""`gpuwise ledger`: what each `gpuwise run` cost, from the run ledger.

Top-level imports stay cheap (typer and the standard library); the run room is imported inside the command.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from gpuwise.cli.checkpoints import JsonOpt
from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.run.ledger import LedgerStore


def open_ledger(*, reading: bool = False) -> LedgerStore:
    """The run ledger in the user's history database. `reading`: for a command that only reads it, whose
    fix cannot be `--no-ledger` (an option of `gpuwise run` only)."""
    from gpuwise import paths
    from gpuwise.run.ledger import LedgerStore

    fix = _("set GPUWISE_DATA_DIR to the directory that holds gpuwise.sqlite") if reading else None
    return LedgerStore(paths.history_db(), fix=fix)


def _warn_skipped(store: LedgerStore) -> None:
    """A warning naming the ledger rows too damaged to list."""
    from gpuwise.cli.output import err_console

    if store.skipped:
        err_console.print(
            _(
                "[yellow]Warning:[/] {n} damaged ledger row(s) left out (id {ids} in {path}): "
                "their start time is not a number."
            ).format(n=len(store.skipped), ids=", ".join(map(str, store.skipped)), path=store.path),
            soft_wrap=True,
            highlight=False,
        )


def _since_s(since: str) -> float:
    """--since in seconds: a duration, a bare number being days (as `gpuwise report` reads it). 0 is bad
    input: it would list only runs started after now, always none, and `ledger` without --since lists all."""
    from gpuwise.errors import ConfigError
    from gpuwise.units import parse_duration_s

    try:
        seconds = parse_duration_s(since, default_unit="d")
    except ValueError as exc:
        raise ConfigError(f"--since {since!r}: {exc}", fix=_("use e.g. --since 7d or --since 12h")) from exc
    if not 0 < seconds < float("inf"):
        raise ConfigError(
            _("--since {value} is not a positive duration").format(value=repr(since)),
            fix=_("use e.g. --since 7d, or leave --since out to list every run"),
        )
    return seconds


def _since_text(since: str) -> str:
    """The duration as the user meant it: a bare number is days."""
    text = since.strip()
    return f"{text}d" if text.replace(".", "", 1).isdigit() else text


def ledger(
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help=_("Only runs started in the last DURATION (7d, 2w, 12h; a bare number is days).")
        ),
    ] = None,
    by: Annotated[
        str | None, typer.Option("--by", help=_("Group totals by project, tag, month or gpu."))
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """What each `gpuwise run` cost: GPU-hours, utilisation, preemptions, checkpoints and dollars."""
    from gpuwise.cli.output import console, print_json
    from gpuwise.errors import NotFoundError
    from gpuwise.run.ledger import BY_CHOICES, summarize
    from gpuwise.units import format_money

    if by is not None and by not in BY_CHOICES:
        raise NotFoundError(_("--by value"), by, BY_CHOICES, fix=_("use project, tag, month or gpu"))
    since_ts = None if since is None else time.time() - _since_s(since)
    store = open_ledger(reading=True)
    try:
        entries = store.entries(since_ts)
    finally:
        store.close()
    _warn_skipped(store)
    data = summarize(entries, by)
    if json_out:
        print_json(data)
        return
    if not entries:
        console.print(
            _("No runs recorded in the last {since}.").format(since=_since_text(since))
            if since
            else _("No runs recorded.")
        )
        return

    def money(x: float | None) -> str:
        return _("unknown") if x is None else format_money(x)

    def hours(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    if by is None:
        for r in data["runs"]:
            console.print(
                _("{started}  {project}  {run_id}  exit {code}  GPU-h {hours}  {cost}  {command}").format(
                    started=r["started_at"],
                    project=r["project"] or "-",
                    run_id=r["run_id"],
                    code="?" if r["exit_code"] is None else r["exit_code"],  # running, or killed
                    hours=hours(r["gpu_hours"]),
                    cost=money(r["cost_usd"]),
                    command=r["command"],
                ),
                soft_wrap=True,
                highlight=False,
            )
    else:
        for g in data["groups"]:
            console.print(
                _("{key}: {runs} run(s), GPU-h {hours}, {cost}").format(
                    key=g["key"], runs=g["runs"], hours=hours(g["gpu_hours"]), cost=money(g["cost_usd"])
                ),
                soft_wrap=True,
                highlight=False,
            )
    t = data["totals"]
    console.print(
        _("Total: {runs} run(s), GPU-h {hours}, {cost}").format(
            runs=t["runs"], hours=hours(t["gpu_hours"]), cost=money(t["cost_usd"])
        )
        + (
            _(" ({n} without a known price)").format(n=t["runs_without_cost"])
            if t["runs_without_cost"]
            else ""
        ),
        highlight=False,
    )
