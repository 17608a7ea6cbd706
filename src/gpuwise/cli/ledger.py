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


def open_ledger() -> LedgerStore:
    """The run ledger in the user's history database."""
    from gpuwise import paths
    from gpuwise.run.ledger import LedgerStore

    return LedgerStore(paths.history_db())


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


def ledger(
    since: Annotated[
        str | None, typer.Option("--since", help=_("Only runs started in the last DURATION (7d, 2w)."))
    ] = None,
    by: Annotated[
        str | None, typer.Option("--by", help=_("Group totals by project, tag, month or gpu."))
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """What each `gpuwise run` cost: GPU-hours, utilisation, preemptions, checkpoints and dollars."""
    from gpuwise.cli.output import console, print_json
    from gpuwise.errors import ConfigError, NotFoundError
    from gpuwise.run.ledger import BY_CHOICES, summarize
    from gpuwise.units import format_money, parse_duration_s

    if by is not None and by not in BY_CHOICES:
        raise NotFoundError(_("--by value"), by, BY_CHOICES, fix=_("use project, tag, month or gpu"))
    since_ts = None
    if since is not None:
        try:
            since_ts = time.time() - parse_duration_s(since)
        except ValueError as exc:
            raise ConfigError(
                f"--since {since!r}: {exc}", fix=_("use e.g. --since 7d or --since 12h")
            ) from exc
    store = open_ledger()
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
            _("No runs recorded in the last {since}.").format(since=since)
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
