"""`gpuwise presets [--json]`: the bundled model presets, their parameter counts and where each comes from.

Top-level imports stay cheap: the workload room is imported inside the command.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gpuwise.cli.output import print_json
from gpuwise.locale import _


def presets(
    json_out: Annotated[bool, typer.Option("--json", help=_("Print JSON."))] = False,
) -> None:
    """List the bundled model presets (`preset = "…"` in a workload's model section) with their source.

    For a model without a preset, point `hf_config` in the model section at its Hugging Face config.json.
    """
    from gpuwise.workload.presets import preset_rows

    rows = preset_rows()
    if json_out:
        print_json({"presets": rows})
        return
    from rich.markup import escape
    from rich.table import Table

    from gpuwise.cli.output import console

    table = Table(title=_("{count} bundled model presets").format(count=len(rows)), title_justify="left")
    for column in (_("preset"), _("kind"), _("params"), _("active"), _("source")):
        table.add_column(column, overflow="fold")
    for row in rows:
        active = row["active_params"]
        table.add_row(
            escape(row["name"]),
            row["kind"],
            _count(row["params"]),
            _count(active) if active != row["params"] else "",
            escape(row["source"]),
        )
    console.print(table)
    console.print(
        escape(
            _('Use one as [model] preset = "NAME"; for any other model, [model] hf_config = "config.json".')
        )
    )


def _count(value: object) -> str:
    if not isinstance(value, int | float):
        return "?"
    return f"{value / 1e9:.3g}B" if value >= 1e9 else f"{value / 1e6:.3g}M"
