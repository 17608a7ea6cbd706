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
    from rich.padding import Padding
    from rich.text import Text

    from gpuwise.cli.output import console

    # A list, not a table: at 80 columns a source column folded repository names mid-word and took ~7 lines
    # a preset; here the name line never wraps and the source wraps at spaces under it.
    console.print(_("{count} bundled model presets").format(count=len(rows)), soft_wrap=True)
    for row in rows:
        active = row["active_params"]
        if active != row["params"]:
            about = _("{kind}, {params} parameters, {active} active per token").format(
                kind=row["kind"], params=_count(row["params"]), active=_count(active)
            )
        else:
            about = _("{kind}, {params} parameters").format(kind=row["kind"], params=_count(row["params"]))
        console.print(f"[bold]{escape(row['name'])}[/]  {escape(about)}", soft_wrap=True)
        console.print(Padding(Text(row["source"], style="dim"), (0, 0, 0, 2), expand=False))
    console.print(
        escape(
            _('Use one as [model] preset = "NAME"; for any other model, [model] hf_config = "config.json".')
        )
    )


def _count(value: object) -> str:
    if not isinstance(value, int | float):
        return "?"
    return f"{value / 1e9:.3g}B" if value >= 1e9 else f"{value / 1e6:.3g}M"
