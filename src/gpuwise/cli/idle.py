"""`gpuwise idle` (placeholder until the capability lands)."""

from __future__ import annotations

import typer

app = typer.Typer(help="(idle: not yet available)", no_args_is_help=True)


@app.command("todo", hidden=True)
def _todo() -> None:
    raise typer.Exit(0)
