"""`gpuwise schema workload`: the workload file's JSON Schema, for editors and validators."""

from __future__ import annotations

from typing import Annotated

import typer

from gpuwise.cli.output import print_json
from gpuwise.errors import NotFoundError
from gpuwise.locale import _

_KINDS = ("workload",)


def schema(
    kind: Annotated[str, typer.Argument(help=_("Which file's schema: workload."), show_default=False)],
) -> None:
    """Print the JSON Schema of a gpuwise file (every key, type, default, bound and meaning).

    Save it and point your editor at it, e.g. taplo / Even Better TOML: `#:schema ./workload.schema.json`
    as a workload file's first line.
    """
    if kind not in _KINDS:
        raise NotFoundError(
            "schema",
            kind,
            list(_KINDS),
            why=_("gpuwise publishes schemas for: {kinds}").format(kinds=", ".join(_KINDS)),
            fix="gpuwise schema workload > workload.schema.json",
        )
    from gpuwise.workload.reference import json_schema

    print_json(json_schema())
